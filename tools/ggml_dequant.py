#!/usr/bin/python3
"""Independent numpy dequantizer for GGUF Q8_0 / Q4_0 blocks (test oracle for src/quant).

Usage: ggml_dequant.py TYPE BLOCKS_IN FLOATS_OUT
Reads raw blocks (Q8_0: fp16 d + 32 int8; Q4_0: fp16 d + 16 bytes of nibbles) and writes the
dequantized values as little-endian float32.
"""
import sys

import numpy as np


def dequant_q8_0(raw: bytes) -> np.ndarray:
    blocks = np.frombuffer(raw, dtype=np.dtype([("d", "<f2"), ("q", "i1", (32,))]))
    return (blocks["d"].astype(np.float32)[:, None] * blocks["q"].astype(np.float32)).ravel()


def dequant_q4_0(raw: bytes) -> np.ndarray:
    blocks = np.frombuffer(raw, dtype=np.dtype([("d", "<f2"), ("qs", "u1", (16,))]))
    low = (blocks["qs"] & 0x0F).astype(np.int32) - 8
    high = (blocks["qs"] >> 4).astype(np.int32) - 8
    codes = np.concatenate([low, high], axis=1).astype(np.float32)
    return (codes * blocks["d"].astype(np.float32)[:, None]).ravel()


def main() -> int:
    kind, src, dst = sys.argv[1:4]
    raw = open(src, "rb").read()
    values = {"q8_0": dequant_q8_0, "q4_0": dequant_q4_0}[kind](raw)
    values.astype("<f4").tofile(dst)
    return 0


if __name__ == "__main__":
    sys.exit(main())
