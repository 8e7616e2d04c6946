#!/usr/bin/env python3
"""An independent numpy implementation of proctor's TurboQuant KV codes (docs/kv-cache.md).

usage: turbo_quant.py CASES.json > RESULTS.json

CASES.json: {"levels": {"2": [...], ...}, "cases": [{"part": "keys" | "values", "bits": B,
"head_dim": D, "x": [f32 bit patterns]}]}. "levels" are the Lloyd-Max reconstruction levels the
engine uses; this script first checks them against the Lloyd-Max optimality conditions of a unit
Gaussian itself (each level the conditional mean of its cell, each boundary the midpoint of its
neighbours, within 1e-9) and refuses them otherwise.

Per case it prints the packed code bytes, the fp16 scales and offsets (bit patterns) and the
decoded values (f32 bit patterns, values rotated back), or {"error": ...} where the format refuses
the input (a non-finite element, a scale or offset beyond fp16's range).
"""
import json
import math
import sys

import numpy as np

GROUP = 32
SIGN_SEED = 20260
MASK = (1 << 64) - 1


def splitmix64(z):
    z = (z + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def signs(n):
    return np.array([-1.0 if splitmix64(SIGN_SEED + i) >> 63 else 1.0 for i in range(n)],
                    dtype=np.float32)


def pdf(x):
    return 0.0 if math.isinf(x) else math.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)


def cdf(x):
    return 0.5 * math.erfc(-x / math.sqrt(2))


def check_lloyd_max(levels):
    edges = [-math.inf] + [(a + b) / 2 for a, b in zip(levels, levels[1:])] + [math.inf]
    for i, level in enumerate(levels):
        a, b = edges[i], edges[i + 1]
        mean = (pdf(a) - pdf(b)) / (cdf(b) - cdf(a))
        if abs(mean - level) > 1e-9:
            raise SystemExit(f"level {i} of {len(levels)}: {level} is not its cell's mean {mean}")


def fwht(x):
    """f32 butterflies, h = 1, 2, 4, ...: (a, b) -> (a + b, a - b) within blocks of 2h."""
    x = x.copy()
    n = x.size
    h = 1
    while h < n:
        v = x.reshape(-1, 2, h)
        a, b = v[:, 0, :].copy(), v[:, 1, :].copy()
        v[:, 0, :] = a + b
        v[:, 1, :] = a - b
        x = v.reshape(n)
        h *= 2
    return x


def pack(codes, bits):
    bit_matrix = ((codes[:, None].astype(np.uint32) >> np.arange(bits)) & 1).astype(np.uint8)
    return np.packbits(bit_matrix.reshape(-1), bitorder="little")


def to_f16(value, what):
    h = np.float32(value).astype(np.float16)
    if not np.isfinite(h):
        raise ValueError(f"{what} {value} beyond fp16")
    return h


def keys(x, bits):
    max_code = np.float32((1 << bits) - 1)
    packed, scales, offsets, decoded = [], [], [], []
    for g in range(0, x.size, GROUP):
        v = x[g:g + GROUP]
        s16 = to_f16((v.max() - v.min()) / max_code, "scale")
        o16 = to_f16(v.min(), "offset")
        s, o = np.float32(s16), np.float32(o16)
        if s > 0:
            q = np.clip(np.rint((v - o) / s), np.float32(0), max_code)
        else:
            q = np.zeros(GROUP, dtype=np.float32)
        codes = q.astype(np.uint8)
        packed.append(pack(codes, bits))
        scales.append(s16.view(np.uint16))
        offsets.append(o16.view(np.uint16))
        decoded.append(s * codes.astype(np.float32) + o)
    return np.concatenate(packed), scales, offsets, np.concatenate(decoded)


def values(x, bits, head_dim, levels):
    centroids = np.array(levels, dtype=np.float32)
    boundaries = np.array([(a + b) / 2 for a, b in zip(levels, levels[1:])], dtype=np.float32)
    sign = signs(head_dim)
    inverse_sqrt = np.float32(1.0 / math.sqrt(head_dim))
    packed, scales, decoded = [], [], []
    for h0 in range(0, x.size, head_dim):
        y = fwht(x[h0:h0 + head_dim] * sign) * inverse_sqrt
        rotated = np.empty(head_dim, dtype=np.float32)
        for g in range(0, head_dim, GROUP):
            v = y[g:g + GROUP]
            sum_squares = np.cumsum(v.astype(np.float64) ** 2)[-1]
            s16 = to_f16(np.float32(math.sqrt(sum_squares / GROUP)), "scale")
            s = np.float32(s16)
            z = v / s if s > 0 else np.zeros(GROUP, dtype=np.float32)
            codes = np.searchsorted(boundaries, z, side="left").astype(np.uint8)
            packed.append(pack(codes, bits))
            scales.append(s16.view(np.uint16))
            rotated[g:g + GROUP] = s * centroids[codes]
        decoded.append(fwht(rotated) * inverse_sqrt * sign)
    return np.concatenate(packed), scales, [], np.concatenate(decoded)


def main():
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    levels = {int(b): v for b, v in spec["levels"].items()}
    for table in levels.values():
        check_lloyd_max(table)
    results = []
    for case in spec["cases"]:
        x = np.array(case["x"], dtype=np.uint32).view(np.float32)
        try:
            if not np.all(np.isfinite(x)):
                raise ValueError("non-finite element")
            if case["part"] == "keys":
                packed, scales, offsets, decoded = keys(x, case["bits"])
            else:
                packed, scales, offsets, decoded = values(x, case["bits"], case["head_dim"],
                                                          levels[case["bits"]])
        except ValueError as e:
            results.append({"error": str(e)})
            continue
        results.append({
            "packed": [int(b) for b in packed],
            "scales": [int(s) for s in scales],
            "offsets": [int(o) for o in offsets],
            "decoded": [int(d) for d in decoded.astype(np.float32).view(np.uint32)],
        })
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
