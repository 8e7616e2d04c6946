#!/usr/bin/python3
"""Writes a small random F32 llama GGUF whose matrix widths are multiples of 256 (so every
K-quant applies), for the llama.cpp quantizer oracle tests. Uses write_model_files.write_gguf.

Usage: write_quant_test_model.py OUT.gguf [LAYERS]   (1 layer unless told)
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import write_model_files as w  # noqa: E402


def main():
    rng = np.random.default_rng(5)
    hidden, ff, heads, kv, head_dim, vocab = 256, 512, 4, 2, 64, 256
    layers = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    p = "llama."
    meta = [("general.architecture", "string", "llama"), ("general.name", "string", "quant-test"),
            (p + "block_count", "uint32", layers), (p + "embedding_length", "uint32", hidden),
            (p + "feed_forward_length", "uint32", ff), (p + "attention.head_count", "uint32", heads),
            (p + "attention.head_count_kv", "uint32", kv),
            (p + "attention.layer_norm_rms_epsilon", "float32", 1e-5),
            (p + "rope.freq_base", "float32", 10000.0), (p + "context_length", "uint32", 256),
            (p + "rope.dimension_count", "uint32", head_dim), ("general.file_type", "uint32", 0)]

    def f32(*hf_shape):  # GGUF dims are the HF shape reversed; varied spread and a few outliers
        n = int(np.prod(hf_shape))
        values = rng.standard_normal(n) * np.repeat(rng.uniform(0.02, 1.0, n // 16 + 1), 16)[:n]
        values[rng.integers(0, n, n // 200 + 1)] *= 12
        return ("F32", list(reversed(hf_shape)), values.astype("<f4").tobytes())

    tensors = [("token_embd.weight",) + f32(vocab, hidden), ("output_norm.weight",) + f32(hidden),
               ("output.weight",) + f32(vocab, hidden)]
    for i in range(layers):
        b = "blk.%d." % i
        tensors += w.llama_block_tensors(b, f32, hidden, ff, heads, kv, head_dim)
    w.write_gguf(sys.argv[1], 3, 32, meta, tensors)


if __name__ == "__main__":
    main()
