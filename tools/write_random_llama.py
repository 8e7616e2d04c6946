#!/usr/bin/python3
"""Writes a random Llama checkpoint (config.json + model.safetensors, bf16) of a chosen size, for
memory and speed tests of quantized models (`proctor quantize` then `proctor bench`).

Weights are N(0, 1/fan_in) (embeddings N(0, 1)), norms 1; bytes are written with numpy and
struct only (safetensors framing: u64 header length, JSON header, data).

usage: write_random_llama.py OUT_DIR [--hidden 1024] [--layers 2] [--ff 2816] [--vocab 16384]
                             [--heads 8] [--kv-heads 4] [--seed 7]
"""
import argparse
import json
import os
import struct

import numpy as np


def bf16(a):
    bits = np.asarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype("<u2")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--ff", type=int, default=2816)
    ap.add_argument("--vocab", type=int, default=16384)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--kv-heads", type=int, default=4)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    d, hd = a.hidden, a.hidden // a.heads
    kv = a.kv_heads * hd
    shapes = {"model.embed_tokens.weight": (a.vocab, d), "model.norm.weight": (d,),
              "lm_head.weight": (a.vocab, d)}
    for i in range(a.layers):
        p = f"model.layers.{i}."
        shapes.update({p + "input_layernorm.weight": (d,),
                       p + "post_attention_layernorm.weight": (d,),
                       p + "self_attn.q_proj.weight": (d, d), p + "self_attn.k_proj.weight": (kv, d),
                       p + "self_attn.v_proj.weight": (kv, d), p + "self_attn.o_proj.weight": (d, d),
                       p + "mlp.gate_proj.weight": (a.ff, d), p + "mlp.up_proj.weight": (a.ff, d),
                       p + "mlp.down_proj.weight": (d, a.ff)})
    header, offset = {}, 0
    names = sorted(shapes)
    for name in names:
        n = int(np.prod(shapes[name])) * 2
        header[name] = {"dtype": "BF16", "shape": list(shapes[name]),
                        "data_offsets": [offset, offset + n]}
        offset += n
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for name in names:
            shape = shapes[name]
            if len(shape) == 1:
                values = np.ones(shape, dtype=np.float32)
            else:
                scale = 1.0 if "embed" in name else 1.0 / np.sqrt(shape[1])
                values = rng.standard_normal(shape, dtype=np.float32) * np.float32(scale)
            f.write(bf16(values).tobytes())
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": d,
              "num_hidden_layers": a.layers, "num_attention_heads": a.heads,
              "num_key_value_heads": a.kv_heads, "intermediate_size": a.ff,
              "vocab_size": a.vocab, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
              "tie_word_embeddings": False, "hidden_act": "silu", "torch_dtype": "bfloat16",
              "max_position_embeddings": 2048, "bos_token_id": 1, "eos_token_id": 2}
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)


if __name__ == "__main__":
    main()
