#!/usr/bin/python3
"""Independent writer of llama.cpp KL-divergence base files (.kld) for proctor's reader tests.

Writes the bytes of `llama-perplexity --kl-divergence-base FILE` (tools/perplexity/perplexity.cpp
in llama.cpp) with numpy and struct only: "_logits_", int32 n_ctx, n_vocab, n_chunk, int32 tokens
[n_chunk * n_ctx], then per chunk, for positions n_ctx/2 .. n_ctx-2, a record of
2*((n_vocab+1)/2) + 4 uint16 words: float32 scale, float32 min_log_prob, uint16 codes[n_vocab]
(+ one zero word when n_vocab is odd). The encoding follows llama.cpp's arithmetic in float32
(max, min raised to max-16, log of a float64 sum of expf, codes rounded half to even).

It also writes candidate logits and the statistics llama.cpp's kl_divergence() would print for
them (computed here in numpy, float32 where llama.cpp uses float), so the C++ scorer is checked
against an implementation it does not share code with.

usage: /usr/bin/python3 tools/llama_kld_file.py OUT_DIR
writes OUT_DIR/{base.kld, teacher.f32, candidate.f32, expected.json}
"""
import json
import math
import os
import struct
import sys

import numpy as np

F = np.float32


def encode_record(logits):
    """llama.cpp's log_softmax(n_vocab, logits, uint16 *log_prob, tok) record, as uint16 words."""
    logits = np.asarray(logits, dtype=F)
    n_vocab = logits.size
    max_logit = F(logits.max())
    min_logit = max(F(logits.min()), F(max_logit - F(16)))
    sum_exp = float(np.sum(np.exp(logits - max_logit).astype(np.float64)))
    log_sum_exp = F(math.log(sum_exp))
    min_log_prob = F(F(min_logit - max_logit) - log_sum_exp)
    scale = F(F(max_logit - min_logit) / F(65535))
    codes = np.zeros(2 * ((n_vocab + 1) // 2), dtype=np.uint16)
    if scale != 0:
        inv_scale = F(F(1) / scale)
        values = np.rint((inv_scale * (logits - min_logit)).astype(F))
        codes[:n_vocab] = np.where(logits > min_logit, values, 0).astype(np.uint16)
    head = np.frombuffer(struct.pack("<ff", scale, min_log_prob), dtype="<u2")
    return np.concatenate([head, codes]).astype("<u2"), float(scale), float(min_log_prob)


def exact_nll(logits, tok):
    """The NLL llama.cpp's writer returns: max + log(sum expf(l - max)) - l[tok], in float32."""
    logits = np.asarray(logits, dtype=F)
    max_logit = F(logits.max())
    log_sum_exp = F(math.log(float(np.sum(np.exp(logits - max_logit).astype(np.float64)))))
    return float(F(F(max_logit + log_sum_exp) - logits[tok]))


def perplexity_estimate(nll):
    """llama-perplexity's "Final estimate: PPL = v +/- u"."""
    n = len(nll)
    mean = sum(nll) / n
    var = sum(v * v for v in nll) / n - mean * mean
    sd = math.sqrt(var / (n - 1)) if var > 0 else 0.0
    return [math.exp(mean), sd * math.exp(mean)]


def kl_position(cand, record, tok):
    """llama.cpp's log_softmax(..., base_log_prob, tok, kld) for one position."""
    cand = np.asarray(cand, dtype=F)
    n_vocab = cand.size
    scale, min_log_prob = struct.unpack("<ff", record[:4].tobytes())
    scale, min_log_prob = F(scale), F(min_log_prob)
    codes = record[4:4 + n_vocab].astype(F)
    max_logit = F(cand.max())
    imax = int(np.argmax(cand))
    sum_exp = float(np.sum(np.exp(cand - max_logit).astype(np.float64)))
    log_sum_exp = F(math.log(sum_exp))
    nll = F(F(max_logit + log_sum_exp) - cand[tok])
    base = (scale * codes + min_log_prob).astype(F)  # log p_base, not renormalised
    nll_base = F(-base[tok])
    norm = F(max_logit + log_sum_exp)
    keep = base > F(-16)
    p_base = np.exp(base[keep]).astype(F)
    terms = (p_base * ((base[keep] - cand[keep]).astype(F) + norm).astype(F)).astype(F)
    kld = float(np.sum(terms.astype(np.float64)))
    imax_base = int(np.argmax(base))
    p_diff = F(F(np.exp(-nll)) - F(np.exp(-nll_base)))
    return {"nll": nll, "nll_base": nll_base, "kld": kld, "p_diff": p_diff,
            "same_top": imax == imax_base}


def mean_and_uncertainty(s, s2, n):
    f = s / n
    df = s2 / n - f * f
    df = math.sqrt(df / (n - 1)) if df > 0 and n > 10 else 0.0
    return f, df


def percentile(values, fraction):
    """llama.cpp's percentile lambda, float32 arithmetic."""
    fraction = F(fraction)
    if fraction <= 0:
        return float(values[0])
    if fraction >= 1:
        return float(values[-1])
    p = F(fraction * F(len(values) - 1))
    ip = int(p)
    p = F(p - F(ip))
    return float(F(F(F(1) - p) * values[ip]) + F(p * values[min(ip + 1, len(values) - 1)]))


def median(values):
    n = len(values)
    return float(F(0.5) * F(values[n // 2] + values[n // 2 - 1])) if n % 2 == 0 else \
        float(values[n // 2])


def statistics(scores):
    n = len(scores)
    nll = np.array([s["nll"] for s in scores], dtype=F)
    nll_base = np.array([s["nll_base"] for s in scores], dtype=F)
    kld = np.array([s["kld"] for s in scores], dtype=np.float64)
    p_diff = np.array([s["p_diff"] for s in scores], dtype=F)
    sum_nll, sum_nll2 = float(np.sum(nll.astype(float))), float(np.sum((nll * nll).astype(float)))
    sum_b, sum_b2 = float(np.sum(nll_base.astype(float))), float(np.sum((nll_base * nll_base)
                                                                         .astype(float)))
    sum_nb = float(np.sum((nll * nll_base).astype(float)))
    log_ppl, log_ppl_unc = mean_and_uncertainty(sum_nll, sum_nll2, n)
    log_base, log_base_unc = mean_and_uncertainty(sum_b, sum_b2, n)
    cov = (sum_nb / n - (sum_nll / n) * (sum_b / n)) / (n - 1) if n >= 10 else 0.0
    ppl, ppl_base = math.exp(log_ppl), math.exp(log_base)
    ln_ratio_unc = math.sqrt(log_ppl_unc ** 2 + log_base_unc ** 2 - 2 * cov)
    ppl_diff_unc = math.sqrt((ppl * log_ppl_unc) ** 2 + (ppl_base * log_base_unc) ** 2 -
                             2 * ppl * ppl_base * cov)
    kld_mean, kld_unc = mean_and_uncertainty(float(kld.sum()), float((kld * kld).sum()), n)
    p_diff2 = (p_diff * p_diff).astype(float)
    dp_mean, dp_unc = mean_and_uncertainty(float(p_diff.astype(float).sum()),
                                           float(p_diff2.sum()), n)
    mse, mse_unc = mean_and_uncertainty(float(p_diff2.sum()), float((p_diff2 * p_diff2).sum()), n)
    rms = math.sqrt(mse)
    same = sum(1 for s in scores if s["same_top"]) / n
    k = np.sort(kld.astype(F))
    d = np.sort(p_diff)
    out = {
        "count": n,
        "ppl": [ppl, ppl * log_ppl_unc], "ppl_base": [ppl_base, ppl_base * log_base_unc],
        "ln_ppl_correlation": cov / (log_ppl_unc * log_base_unc),
        "ln_ppl_ratio": [log_ppl - log_base, ln_ratio_unc],
        "ppl_ratio": [math.exp(log_ppl - log_base), math.exp(log_ppl - log_base) * ln_ratio_unc],
        "ppl_diff": [ppl - ppl_base, ppl_diff_unc],
        "kld": [kld_mean, kld_unc], "kld_max": float(k[-1]), "kld_median": median(k),
        "kld_min": float(k[0]),
        "p_diff": [dp_mean, dp_unc], "p_diff_max": float(d[-1]), "p_diff_median": median(d),
        "p_diff_min": float(d[0]),
        "p_diff_rms": [rms, 0.5 / rms * mse_unc],
        "same_top": [same, math.sqrt(same * (1 - same) / (n - 1))],
    }
    for name, frac in (("p999", 0.999), ("p99", 0.99), ("p95", 0.95), ("p90", 0.9),
                       ("p10", 0.1), ("p5", 0.05), ("p1", 0.01), ("p01", 0.001)):
        out["kld_" + name] = percentile(k, frac)
        out["p_diff_" + name] = percentile(d, frac)
    out["p_diff_p75"] = percentile(d, 0.75)
    out["p_diff_p25"] = percentile(d, 0.25)
    return out


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(20261130)
    n_ctx, n_vocab, n_chunk = 16, 37, 3  # odd vocabulary: every record has a padding word
    first, per_chunk = n_ctx // 2, n_ctx - 1 - n_ctx // 2
    tokens = rng.integers(0, n_vocab, n_chunk * n_ctx).astype("<i4")
    # Teacher logits for every position; the scored ones get special shapes.
    teacher = (rng.standard_normal((n_chunk, n_ctx, n_vocab)) * 3).astype(F)
    teacher[0, first] = 1.25                     # all equal: scale 0, every code 0
    teacher[0, first + 1] *= 10                  # range far beyond 16: the -16 cutoff bites
    teacher[1, first, 5] = teacher[1, first].max() + 40  # one dominant token
    teacher[1, first + 2, 3] = teacher[1, first + 2, 7] = teacher[1, first + 2].max() + 1  # tie
    candidate = (teacher + rng.standard_normal(teacher.shape) * 0.7).astype(F)
    candidate[2, n_ctx - 2] = teacher[2, n_ctx - 2]  # one identical position
    records, expected_records, scores, teacher_nll = [], [], [], []
    for c in range(n_chunk):
        for p in range(first, n_ctx - 1):
            rec, scale, min_log_prob = encode_record(teacher[c, p])
            records.append(rec)
            tok = int(tokens[c * n_ctx + p + 1])
            expected_records.append({"chunk": c, "position": p, "scale": scale,
                                     "min_log_prob": min_log_prob,
                                     "codes": rec[4:4 + n_vocab].tolist()})
            scores.append(kl_position(candidate[c, p], rec, tok))
            teacher_nll.append(exact_nll(teacher[c, p], tok))
    with open(os.path.join(out, "base.kld"), "wb") as f:
        f.write(b"_logits_")
        f.write(struct.pack("<iii", n_ctx, n_vocab, n_chunk))
        f.write(tokens.tobytes())
        for rec in records:
            f.write(rec.tobytes())
    teacher.astype("<f4").tofile(os.path.join(out, "teacher.f32"))
    candidate.astype("<f4").tofile(os.path.join(out, "candidate.f32"))
    expected = {"n_ctx": n_ctx, "n_vocab": n_vocab, "n_chunk": n_chunk,
                "records_per_chunk": per_chunk, "tokens": tokens.tolist(),
                "records": expected_records,
                "positions": [{k: (bool(v) if k == "same_top" else float(v))
                               for k, v in s.items()} for s in scores],
                "statistics": statistics(scores),
                "teacher_exact_ppl": perplexity_estimate(teacher_nll)}
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)


if __name__ == "__main__":
    main()
