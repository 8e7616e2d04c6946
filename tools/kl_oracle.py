#!/usr/bin/python3
"""Independent oracle for proctor's KL scorer and dump writer (numpy, float64).

Reads a reference-logits dump (format_version 1) directly from its bytes, plus candidate
logits as raw little-endian float32 [n_seqs, ctx_len, vocab], and prints every statistic of
FORMATS.md sections 2-3 as JSON. With --teacher (same layout), also checks that the dump's
records are the teacher's top-k (ties: lower index first), shifted by the top logit and rounded
to fp16, with the full-vocabulary logsumexp.
"""
import argparse
import json
import math
import os

import numpy as np


def nearest_rank(values, pct):
    if len(values) == 0:
        return 0.0
    v = sorted(values)
    return float(v[min(len(v) - 1, int(math.floor(pct / 100.0 * len(v))))])


def summarize(per_seq):
    means = [float(np.mean(s)) for s in per_seq if len(s)]
    pooled = [x for s in per_seq for x in s]
    if not pooled:
        return dict(mean=0.0, standard_error=0.0, median=0.0, p95=0.0, p99=0.0, max=0.0)
    se = float(np.std(means, ddof=1) / math.sqrt(len(means))) if len(means) >= 2 else 0.0
    return dict(mean=float(np.mean(means)), standard_error=se, median=nearest_rank(pooled, 50),
                p95=nearest_rank(pooled, 95), p99=nearest_rank(pooled, 99), max=float(max(pooled)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump", required=True)
    ap.add_argument("--candidate", required=True)
    ap.add_argument("--vocab", type=int, required=True)
    ap.add_argument("--teacher")
    ap.add_argument("--n", type=int, default=0)
    args = ap.parse_args()

    with open(os.path.join(args.dump, "manifest.json")) as f:
        manifest = json.load(f)
    k, ctx, n_seqs = manifest["top_k"], manifest["ctx_len"], manifest["n_seqs"]
    vocab = args.vocab
    record = np.dtype([("idx", "<i4", (k,)), ("logits", "<f2", (k,)), ("lse", "<f4")])
    assert record.itemsize == 6 * k + 4
    cand = np.fromfile(args.candidate, dtype="<f4").reshape(n_seqs, ctx, vocab).astype(np.float64)
    teacher = None
    if args.teacher:
        teacher = np.fromfile(args.teacher, dtype="<f4").reshape(n_seqs, ctx, vocab)
    if args.n:
        n_seqs = min(n_seqs, args.n)

    kl_seqs, tail_seqs, hits, masses, writer_problems = [], [], 0, [], []
    for s in range(n_seqs):
        recs = np.fromfile(os.path.join(args.dump, "seq-%d.bin" % s), dtype=record)
        kls, tails = [], []
        for r, rec in enumerate(recs):
            idx = rec["idx"].astype(np.int64)
            t = rec["logits"].astype(np.float64)
            T = float(rec["lse"])
            c = cand[s, r]
            cm = c.max()
            C = cm + math.log(np.exp(c - cm).sum())
            p = np.exp(t - T)
            logq = c[idx] - C
            pos = p > 0
            kl = float(np.sum(p[pos] * ((t - T)[pos] - logq[pos])))
            mass = float(p.sum())
            P = 1.0 - mass
            Q = max(1.0 - float(np.exp(logq).sum()), 1e-30)
            tail = kl + (P * (math.log(P) - math.log(Q)) if P > 0 else 0.0)
            kls.append(kl)
            tails.append(tail)
            masses.append(mass)
            hits += int(int(np.argmax(c)) == int(idx[0]))
            if teacher is not None:
                row = teacher[s, r].astype(np.float32)
                order = np.argsort(-row, kind="stable")[:k]
                mx = row[order[0]]
                if not np.array_equal(order, idx):
                    writer_problems.append("seq %d rec %d: indices %s != %s" % (s, r, idx, order))
                want = (row[order] - mx).astype(np.float16)
                if not np.array_equal(want.view(np.uint16), rec["logits"].view(np.uint16)):
                    writer_problems.append("seq %d rec %d: logits differ" % (s, r))
                lse = math.log(np.exp(row.astype(np.float64) - float(mx)).sum())
                if abs(lse - T) > 1e-6:
                    writer_problems.append("seq %d rec %d: lse %r != %r" % (s, r, T, lse))
        kl_seqs.append(kls)
        tail_seqs.append(tails)
    n = len(masses)
    out = dict(kl=summarize(kl_seqs), tail_kl=summarize(tail_seqs),
               top1_agreement=hits / n if n else 0.0,
               mean_captured_mass=sum(masses) / n if n else 0.0,
               min_captured_mass=min(masses) if n else 0.0, positions=n,
               per_position_kl=[x for s in kl_seqs for x in s],
               per_position_tail_kl=[x for s in tail_seqs for x in s],
               writer_problems=writer_problems)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
