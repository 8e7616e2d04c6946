#!/usr/bin/python3
"""Independent end-to-end check of `proctor kl` (numpy, float64).

Recomputes every statistic of a kl run from files alone, never from proctor's arithmetic:
  --dump DIR             a reference-logits dump, format_version 1 (FORMATS.md section 1), read
                         from its bytes (saved-teacher mode), or
  --teacher-logits FILE  the teacher's full logits, raw little-endian float32
                         [n_seqs, ctx_len, vocab] (two-model mode: full-vocabulary KL), with
  --tokens FILE          a corpus' tokens.bin, int32 [n_seqs, ctx_len] (ctx_len from the
                         manifest.json beside it);
  --candidate-logits FILE  the candidate's full logits (`proctor logits --corpus`), same layout;
  --results FILE         the `--json` results file of the kl run, compared statistic by
                         statistic;
  --per-position FILE    the run's `--per-position` file (docs/formats.md), compared record by
                         record;
  --decode-steps S       two-model mode on the decode path (`kl --decode-steps S`): only the
                         last S positions of each sequence are scored.
Prints the recomputed statistics as JSON on stdout and every mismatch on stderr; exits 1 when
anything differs by more than the tolerances, 0 otherwise.

Tolerances follow proctor's documented numerics (docs/statistics.md): the scorer sums exp()
terms in float32 (blocks of 512, blocks added in float64), so one position's log q carries an
error of a few float32 ulps of the logsumexp (~3e-7 absolute), and the tail bin's
Q = 1 - sum q is a difference of float32 sums (~1e-6 absolute, divided by Q). Hence:
  per-position values and the order statistics that pick one of them (median, p95, p99, max,
  min mass): --position-atol (default 2e-6; the tail-aware KL 10x that);
  means over positions (mean, standard error, per-sequence means, mean mass, mean NLL, top-1):
  --mean-atol (default 2e-7), since independent rounding errors average out;
  both plus --rtol (default 1e-5) times the value; integers and argmaxes exactly.
The worst difference seen, as a fraction of its tolerance, is printed for each class.
"""
import argparse
import json
import math
import os
import struct
import sys

import numpy as np


def nearest_rank(values, pct):
    if len(values) == 0:
        return 0.0
    v = np.sort(np.asarray(values, dtype=np.float64))
    return float(v[min(len(v) - 1, int(math.floor(pct / 100.0 * len(v))))])


def summarize(per_seq):
    means = [float(np.mean(s)) for s in per_seq if len(s)]
    pooled = np.concatenate([np.asarray(s) for s in per_seq if len(s)]) if means else []
    if len(pooled) == 0:
        return dict(mean=0.0, standard_error=0.0, median=0.0, p95=0.0, p99=0.0, max=0.0)
    se = float(np.std(means, ddof=1) / math.sqrt(len(means))) if len(means) >= 2 else 0.0
    return dict(mean=float(np.mean(means)), standard_error=se, median=nearest_rank(pooled, 50),
                p95=nearest_rank(pooled, 95), p99=nearest_rank(pooled, 99),
                max=float(np.max(pooled)))


def log_softmax(x):
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def first_argmax(x):
    return np.argmax(x, axis=-1)  # numpy returns the first (lowest) index of the maximum


def read_per_position(path):
    with open(path, "rb") as f:
        data = f.read()
    magic, version, header_bytes, record_bytes, flags, count, n_seqs, pps, top_k, vocab = \
        struct.unpack_from("<8sIIIIQQQQQ", data, 0)
    assert magic == b"PROCKLPP", magic
    # Version 2 adds the teacher's top-1 probability (float64) after version 1's 64 bytes.
    size = {1: 64, 2: 72}.get(version)
    assert size and header_bytes == 64 and record_bytes == size, (version, header_bytes)
    assert len(data) == 64 + size * count, (len(data), count)
    fields = [("seq", "<u4"), ("position", "<u4"), ("kl", "<f8"), ("tail_kl", "<f8"),
              ("mass", "<f8"), ("candidate_nll", "<f8"), ("teacher_nll", "<f8"),
              ("next_token", "<i4"), ("candidate_argmax", "<i4"),
              ("teacher_argmax", "<i4"), ("top1", "u1"), ("reserved", "u1", (3,))]
    if version == 2:
        fields.append(("teacher_top1_probability", "<f8"))
    rec = np.dtype(fields)
    assert rec.itemsize == size
    records = np.frombuffer(data, dtype=rec, offset=64, count=count)
    header = dict(flags=flags, record_count=count, n_seqs=n_seqs, positions_per_seq=pps,
                  top_k=top_k, vocab=vocab)
    return header, records


def score_saved_teacher(dump, cand, n_seqs):
    with open(os.path.join(dump, "manifest.json")) as f:
        manifest = json.load(f)
    k, ctx = manifest["top_k"], manifest["ctx_len"]
    tokens = np.fromfile(os.path.join(dump, "tokens.bin"), dtype="<i4").reshape(-1, ctx)
    record = np.dtype([("idx", "<i4", (k,)), ("logits", "<f2", (k,)), ("lse", "<f4")])
    assert record.itemsize == 6 * k + 4
    rows = []
    for s in range(n_seqs):
        recs = np.fromfile(os.path.join(dump, "seq-%d.bin" % s), dtype=record)
        lq_all = log_softmax(cand[s, :len(recs)].astype(np.float64))
        for r, rec in enumerate(recs):
            idx = rec["idx"].astype(np.int64)
            logp = rec["logits"].astype(np.float64) - float(rec["lse"])
            p = np.exp(logp)
            lq = lq_all[r]
            pos = p > 0
            kl = float(np.sum(p[pos] * (logp[pos] - lq[idx][pos])))
            mass = float(p.sum())
            P = 1.0 - mass
            Q = max(1.0 - float(np.exp(lq[idx]).sum()), 1e-30)
            nxt = int(tokens[s, r + 1])
            hit = np.nonzero(idx == nxt)[0]
            rows.append(dict(seq=s, position=r, kl=kl,
                             tail_kl=kl + (P * (math.log(P) - math.log(Q)) if P > 0 else 0.0),
                             mass=mass, candidate_nll=-float(lq[nxt]),
                             teacher_nll=-float(logp[hit[0]]) if len(hit) else float("nan"),
                             next_token=nxt, candidate_argmax=int(first_argmax(cand[s, r])),
                             teacher_argmax=int(idx[0]), teacher_top1=float(p[0])))
    return rows, k


def score_two_model(teacher, cand, tokens, n_seqs, decode_steps):
    rows = []
    for s in range(n_seqs):
        positions = tokens.shape[1] - 1
        first = positions - decode_steps if decode_steps else 0
        lp_all = log_softmax(teacher[s, :positions].astype(np.float64))
        lq_all = log_softmax(cand[s, :positions].astype(np.float64))
        for r in range(first, positions):
            lp, lq = lp_all[r], lq_all[r]
            p = np.exp(lp)
            kl = float(np.sum(p * (lp - lq)))
            nxt = int(tokens[s, r + 1])
            rows.append(dict(seq=s, position=r - first, kl=kl, tail_kl=kl, mass=1.0,
                             candidate_nll=-float(lq[nxt]), teacher_nll=-float(lp[nxt]),
                             next_token=nxt, candidate_argmax=int(first_argmax(cand[s, r])),
                             teacher_argmax=int(first_argmax(teacher[s, r])),
                             teacher_top1=float(p.max())))
    return rows


def aggregate(rows, n_seqs):
    by_seq = [[] for _ in range(n_seqs)]
    for row in rows:
        by_seq[row["seq"]].append(row)
    n = len(rows)
    cand_nll = [r["candidate_nll"] for r in rows]
    teach_nll = [r["teacher_nll"] for r in rows if not math.isnan(r["teacher_nll"])]
    out = dict(
        kl=summarize([[r["kl"] for r in seq] for seq in by_seq]),
        tail_kl=summarize([[r["tail_kl"] for r in seq] for seq in by_seq]),
        top1_agreement=sum(r["candidate_argmax"] == r["teacher_argmax"] for r in rows) / n,
        mean_captured_mass=sum(r["mass"] for r in rows) / n,
        min_captured_mass=min(r["mass"] for r in rows),
        candidate_mean_nll=float(np.mean(cand_nll)),
        candidate_ppl=float(math.exp(np.mean(cand_nll))),
        teacher_mean_nll=float(np.mean(teach_nll)) if teach_nll else None,
        teacher_nll_positions=len(teach_nll),
        positions=n,
        sequences=sum(1 for seq in by_seq if seq),
        sequence_mean_kl=[float(np.mean([r["kl"] for r in seq])) for seq in by_seq if seq],
        where=where_the_kl_lives(by_seq))
    return out


def where_the_kl_lives(by_seq, worst=20):
    """kl --where (docs/statistics.md): KL by the teacher's top-1 probability bucket and by
    eighth of the scored positions, the worst positions, top-1 flips against the corpus."""
    edges = [0.0, 0.25, 0.5, 0.75, 0.9]
    total = sum(r["kl"] for seq in by_seq for r in seq)
    conf = [[] for _ in edges]
    place = [[] for _ in range(8)]
    lost = gained = known = 0
    for seq in by_seq:
        for r, row in enumerate(seq):
            conf[max(i for i, e in enumerate(edges) if row["teacher_top1"] >= e)].append(row["kl"])
            place[r * 8 // len(seq)].append(row["kl"])
            if row["next_token"] >= 0:
                known += 1
                t, c = row["teacher_argmax"] == row["next_token"], \
                    row["candidate_argmax"] == row["next_token"]
                lost += t and not c
                gained += c and not t

    def buckets(groups):
        return [dict(positions=len(g), kl_mean=float(np.mean(g)) if g else 0.0,
                     kl_share=float(np.sum(g)) / total if total > 0 else 0.0) for g in groups]

    rows = sorted((r for seq in by_seq for r in seq),
                  key=lambda r: (-r["kl"], r["seq"], r["position"]))[:worst]
    return dict(by_confidence=buckets(conf), by_position=buckets(place), worst=rows,
                known_next_token_positions=known, top1_lost=lost, top1_gained=gained)


class Comparer:
    def __init__(self, rtol):
        self.rtol, self.problems, self.checked, self.worst = rtol, [], 0, {}

    def near(self, what, got, want, atol, kind):
        self.checked += 1
        if want is None or got is None:
            if want is not got:
                self.problems.append("%s: proctor %r, recomputed %r" % (what, got, want))
            return
        if isinstance(want, float) and math.isnan(want):
            if not (isinstance(got, float) and math.isnan(got)):
                self.problems.append("%s: proctor %r, recomputed NaN" % (what, got))
            return
        diff = abs(float(got) - float(want))
        tol = atol + self.rtol * abs(float(want))
        worst = self.worst.get(kind, (0.0, ""))
        if diff / tol > worst[0]:
            self.worst[kind] = (diff / tol, "%s diff %.3g" % (what, diff))
        if diff > tol:
            self.problems.append("%s: proctor %.10g, recomputed %.10g (diff %.3g)" %
                                 (what, float(got), float(want), diff))

    def exact(self, what, got, want):
        self.checked += 1
        if got != want:
            self.problems.append("%s: proctor %r, recomputed %r" % (what, got, want))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump")
    ap.add_argument("--teacher-logits")
    ap.add_argument("--tokens")
    ap.add_argument("--candidate-logits", required=True)
    ap.add_argument("--vocab", type=int, required=True)
    ap.add_argument("--results")
    ap.add_argument("--per-position")
    ap.add_argument("--n", type=int, default=0, help="sequences scored (default: all)")
    ap.add_argument("--decode-steps", type=int, default=0,
                    help="two-model mode: only the last S positions of each sequence that predict "
                         "a token are scored, records numbered by step (kl --decode-steps)")
    ap.add_argument("--rtol", type=float, default=1e-5)
    ap.add_argument("--position-atol", type=float, default=2e-6)
    ap.add_argument("--mean-atol", type=float, default=2e-7)
    args = ap.parse_args()
    if bool(args.dump) == bool(args.teacher_logits):
        ap.error("give exactly one of --dump and --teacher-logits")

    cand = np.fromfile(args.candidate_logits, dtype="<f4")
    if args.dump:
        with open(os.path.join(args.dump, "manifest.json")) as f:
            manifest = json.load(f)
        ctx, total = manifest["ctx_len"], manifest["n_seqs"]
        cand = cand.reshape(-1, ctx, args.vocab)
        n_seqs = min(total, args.n) if args.n else total
        assert cand.shape[0] >= n_seqs, (cand.shape, n_seqs)
        rows, _ = score_saved_teacher(args.dump, cand, n_seqs)
    else:
        # tokens.bin holds every corpus row (ctx_len from the manifest beside it); the logits
        # files hold the first n of them.
        with open(os.path.join(os.path.dirname(args.tokens), "manifest.json")) as f:
            ctx = json.load(f)["ctx_len"]
        tokens = np.fromfile(args.tokens, dtype="<i4").reshape(-1, ctx)
        teacher = np.fromfile(args.teacher_logits, dtype="<f4").reshape(-1, ctx, args.vocab)
        cand = cand.reshape(-1, ctx, args.vocab)
        n_seqs = teacher.shape[0] if not args.n else min(args.n, teacher.shape[0])
        assert cand.shape[0] >= n_seqs, (cand.shape, n_seqs)
        rows = score_two_model(teacher, cand, tokens[:n_seqs], n_seqs, args.decode_steps)
    stats = aggregate(rows, n_seqs)
    json.dump(stats, sys.stdout, indent=1)
    sys.stdout.write("\n")

    cmp = Comparer(args.rtol)
    pos_atol, mean_atol = args.position_atol, args.mean_atol

    def position_atol(key):
        return pos_atol * (10 if key.startswith("tail") else 1)

    if args.results:
        with open(args.results) as f:
            results = json.load(f)
        res = results["results"]
        for key in ("kl", "tail_kl"):
            for stat in ("mean", "standard_error"):
                cmp.near("%s.%s" % (key, stat), res[key][stat], stats[key][stat], mean_atol,
                         "means")
            for stat in ("median", "p95", "p99", "max"):
                cmp.near("%s.%s" % (key, stat), res[key][stat], stats[key][stat],
                         position_atol(key), "order statistics")
        for key in ("top1_agreement", "mean_captured_mass", "candidate_mean_nll",
                    "candidate_ppl", "teacher_mean_nll"):
            cmp.near(key, res[key], stats[key], mean_atol, "means")
        cmp.near("min_captured_mass", res["min_captured_mass"], stats["min_captured_mass"],
                 pos_atol, "order statistics")
        for key in ("positions", "sequences", "teacher_nll_positions"):
            cmp.exact(key, res[key], stats[key])
        for i, (a, b) in enumerate(zip(res["sequence_mean_kl"], stats["sequence_mean_kl"])):
            cmp.near("sequence_mean_kl[%d]" % i, a, b, mean_atol, "means")
        cmp.exact("len(sequence_mean_kl)", len(res["sequence_mean_kl"]),
                  len(stats["sequence_mean_kl"]))
        got, want = res["where"], stats["where"]
        # A share is a bucket's KL over the run's: its error is the mean's over the mean KL
        # (loose for a self-scored teacher, whose KL is rounding noise itself).
        share_atol = mean_atol / max(stats["kl"]["mean"], 1e-300)
        for part in ("by_confidence", "by_position"):
            cmp.exact("where.%s buckets" % part, len(got[part]), len(want[part]))
            for i, (g, w) in enumerate(zip(got[part], want[part])):
                cmp.exact("where.%s[%d].positions" % (part, i), g["positions"], w["positions"])
                cmp.near("where.%s[%d].kl_mean" % (part, i), g["kl_mean"], w["kl_mean"],
                         mean_atol, "means")
                cmp.near("where.%s[%d].kl_share" % (part, i), g["kl_share"], w["kl_share"],
                         share_atol, "shares")
        for key in ("known_next_token_positions", "top1_lost", "top1_gained"):
            cmp.exact("where." + key, got[key], want[key])
        # The worst positions: each one proctor lists is that position recomputed, and no
        # position left out has a larger KL (beyond the per-position tolerance: near-ties may
        # order either way).
        cmp.exact("len(where.worst)", len(got["worst"]), len(want["worst"]))
        by_key = {(r["seq"], r["position"]): r for r in rows}
        listed = set()
        for i, g in enumerate(got["worst"]):
            w = by_key.get((g["sequence"], g["position"]))
            if w is None:
                cmp.exact("where.worst[%d] position" % i, (g["sequence"], g["position"]), None)
                continue
            listed.add((g["sequence"], g["position"]))
            for key in ("next_token", "teacher_argmax", "candidate_argmax"):
                cmp.exact("where.worst[%d].%s" % (i, key), g[key], w[key])
            cmp.near("where.worst[%d].kl" % i, g["kl"], w["kl"], pos_atol, "order statistics")
            cmp.near("where.worst[%d].teacher_top1_probability" % i,
                     g["teacher_top1_probability"], w["teacher_top1"], pos_atol,
                     "per-position teacher_top1")
            if i > 0:
                cmp.exact("where.worst[%d] sorted" % i, g["kl"] <= got["worst"][i - 1]["kl"], True)
        if got["worst"]:
            smallest = got["worst"][-1]["kl"]
            left_out = max((r["kl"] for key, r in by_key.items() if key not in listed),
                           default=float("-inf"))
            cmp.exact("where.worst holds the largest KLs", left_out <= smallest + pos_atol, True)
    if args.per_position:
        header, records = read_per_position(args.per_position)
        cmp.exact("per-position record_count", header["record_count"], len(rows))
        cmp.exact("per-position n_seqs", header["n_seqs"], n_seqs)
        cmp.exact("per-position flags", header["flags"], 0 if args.dump else 1)
        cmp.exact("per-position vocab", header["vocab"], args.vocab)
        for rec, row in zip(records, rows):
            where = "record (%d, %d)" % (row["seq"], row["position"])
            for key in ("seq", "position", "next_token", "candidate_argmax", "teacher_argmax"):
                cmp.exact("%s %s" % (where, key), int(rec[key]), row[key])
            cmp.exact(where + " top1", int(rec["top1"]),
                      int(row["candidate_argmax"] == row["teacher_argmax"]))
            cmp.exact(where + " reserved", rec["reserved"].tolist(), [0, 0, 0])
            for key in ("kl", "tail_kl", "mass", "candidate_nll", "teacher_nll"):
                cmp.near("%s %s" % (where, key), float(rec[key]), row[key], position_atol(key),
                         "per-position " + key)
            if "teacher_top1_probability" in records.dtype.names:
                cmp.near(where + " teacher_top1_probability",
                         float(rec["teacher_top1_probability"]), row["teacher_top1"],
                         position_atol("kl"), "per-position teacher_top1")
    for p in cmp.problems[:40]:
        sys.stderr.write("MISMATCH %s\n" % p)
    sys.stderr.write("checked %d values against proctor: %d mismatches\n" %
                     (cmp.checked, len(cmp.problems)))
    for kind in sorted(cmp.worst):
        ratio, what = cmp.worst[kind]
        sys.stderr.write("  worst %-26s %.3f of its tolerance (%s)\n" % (kind + ":", ratio, what))
    return 1 if cmp.problems else 0


if __name__ == "__main__":
    sys.exit(main())
