#!/usr/bin/python3
"""Independent re-derivation of Hugging Face's RoPE inv_freq / attention scaling (numpy, f32).

Follows transformers' modeling_rope_utils.py `_compute_{default,linear_scaling,dynamic_ntk,
llama3,yarn}_parameters` step by step with numpy float32 arithmetic (torch's `scalar / tensor`
is reciprocal(tensor) * scalar). Prints a JSON list of cases that rope_frequencies_test.cc
compares against proctor's C++ implementation.
"""
import json
import math

import numpy as np

f32 = np.float32


def rdiv(scalar, t):
    return (f32(1.0) / t) * f32(scalar)


def default_inv(base, dim):
    exps = np.arange(0, dim, 2, dtype=np.int64).astype(f32) / f32(dim)
    pos = np.power(f32(base), exps.astype(f32)).astype(f32)
    return rdiv(1.0, pos).astype(f32)


def case(p, head_dim, max_pos):
    dim = int(head_dim * p.get("partial_rotary_factor", 1.0))
    t = p["rope_type"]
    base = p["rope_theta"]
    att = 1.0
    if t == "default":
        inv = default_inv(base, dim)
    elif t == "linear":
        inv = (default_inv(base, dim) / f32(p["factor"])).astype(f32)
    elif t == "dynamic":
        factor = p["factor"]
        seq = max_pos
        base = base * ((factor * seq / max_pos) - (factor - 1)) ** (dim / (dim - 2))
        inv = default_inv(base, dim)
    elif t == "llama3":
        inv = default_inv(base, dim)
        factor = p["factor"]
        lo, hi = p["low_freq_factor"], p["high_freq_factor"]
        old = p["original_max_position_embeddings"]
        low_w, high_w = old / lo, old / hi
        wav = rdiv(2 * math.pi, inv)
        llama = np.where(wav > f32(low_w), inv / f32(factor), inv).astype(f32)
        smooth = ((rdiv(old, wav) - f32(lo)) / f32(hi - lo)).astype(f32)
        smoothed = ((f32(1) - smooth) * llama / f32(factor) + smooth * llama).astype(f32)
        medium = ~(wav < f32(high_w)) & ~(wav > f32(low_w))
        inv = np.where(medium, smoothed, llama).astype(f32)
    elif t == "yarn":
        orig = p.get("original_max_position_embeddings") or max_pos
        factor = p.get("factor")
        if factor is None:
            factor = max_pos / orig

        def mscale_of(s, m=1):
            return 1.0 if s <= 1 else 0.1 * m * math.log(s) + 1.0

        att = p.get("attention_factor")
        if att is None:
            if p.get("mscale") and p.get("mscale_all_dim"):
                att = mscale_of(factor, p["mscale"]) / mscale_of(factor, p["mscale_all_dim"])
            else:
                att = mscale_of(factor)
        bf = p.get("beta_fast") or 32
        bs = p.get("beta_slow") or 1

        def cdim(r):
            return (dim * math.log(orig / (r * 2 * math.pi))) / (2 * math.log(base))

        lo, hi = cdim(bf), cdim(bs)
        if p.get("truncate", True):
            lo, hi = math.floor(lo), math.ceil(hi)
        lo, hi = max(lo, 0), min(hi, dim - 1)
        if lo == hi:
            hi += 0.001
        exps = np.arange(0, dim, 2).astype(f32) / f32(dim)
        pos = np.power(f32(base), exps).astype(f32)
        extra = rdiv(1.0, pos)
        inter = rdiv(1.0, (f32(factor) * pos).astype(f32))
        ramp = np.clip((np.arange(dim // 2, dtype=f32) - f32(lo)) / f32(hi - lo), 0, 1).astype(f32)
        ef = (f32(1) - ramp).astype(f32)
        inv = (inter * (f32(1) - ef) + extra * ef).astype(f32)
    else:
        raise ValueError(t)
    return {"params": p, "head_dim": head_dim, "max_position_embeddings": max_pos,
            "inv_freq": [float(x) for x in inv], "attention_scaling": float(f32(att))}


CASES = [
    ({"rope_type": "default", "rope_theta": 10000.0}, 16, 256),
    ({"rope_type": "default", "rope_theta": 1000000.0}, 128, 40960),
    ({"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25}, 64, 4096),
    ({"rope_type": "linear", "rope_theta": 10000.0, "factor": 4.0}, 64, 4096),
    ({"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 2.0}, 64, 4096),
    ({"rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0, "low_freq_factor": 1.0,
      "high_freq_factor": 4.0, "original_max_position_embeddings": 32}, 16, 256),
    ({"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0, "low_freq_factor": 1.0,
      "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}, 64, 131072),
    ({"rope_type": "yarn", "rope_theta": 1000000.0, "factor": 4.0,
      "original_max_position_embeddings": 32768}, 128, 131072),
    ({"rope_type": "yarn", "rope_theta": 10000.0, "factor": 40.0, "mscale": 0.707,
      "mscale_all_dim": 1.0, "beta_fast": 32, "beta_slow": 1,
      "original_max_position_embeddings": 4096}, 64, 163840),
    ({"rope_type": "yarn", "rope_theta": 150000.0, "factor": 32.0, "truncate": False,
      "original_max_position_embeddings": 4096}, 64, 131072),
    ({"rope_type": "yarn", "rope_theta": 10000.0, "original_max_position_embeddings": 2048,
      "attention_factor": 1.5}, 64, 8192),
]

if __name__ == "__main__":
    print(json.dumps([case(*c) for c in CASES]))
