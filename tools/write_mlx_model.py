#!/usr/bin/python3
"""Independent writer of MLX-quantized model directories, for proctor's MLX loader and kernel tests.

From a float model (a random tiny llama, or --src DIR with config.json + model.safetensors in
F32/F16/BF16) writes two directories:
  MLX_DIR  the model as mlx-lm stores a quantized one: every quantized Linear (and the embedding)
           as <path>.weight (U32 packed codes), <path>.scales, <path>.biases (affine only), and
           config.json with a "quantization" block (defaults + per-module overrides);
  DEQ_DIR  the same model with every quantized matrix dequantized to F32 (and every other tensor
           converted to F32), no quantization block.
Packing and dequantization follow docs/FORMATS section 6 and are written here with numpy only
(no MLX, nothing shared with proctor's C++): codes are a little-endian bit stream per row, LSB
first; affine w = scale * q + bias in f32 (multiply, then add); mxfp4 / mxfp8: 2^(e-127) times an
E2M1 / E4M3 element; nvfp4: an E4M3 scale times an E2M1 element. The quantizer itself (nearest
code under a min/max or absmax scale) is only a way to get codes; the dequantized copy is the
contract.

usage: write_mlx_model.py MLX_DIR DEQ_DIR [--src DIR] [--bits 4] [--group-size 64]
         [--mode affine] [--scale-dtype f16|bf16|f32] [--override PATH=BITS:GROUP[:MODE]]
         [--override PATH=false] [--no-embed] [--tied | --untied] [--config-key KEY]
         [--drop TENSOR] [--truncate TENSOR] [--seed N]
"""
import argparse
import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import write_model_files as w  # noqa: E402  (write_safetensors, bf16_bytes)

# ---------------------------------------------------------------- element encodings

E2M1 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], dtype=np.float64)


def e2m1_value(code):
    code = np.asarray(code, dtype=np.int64)
    mag = E2M1[code & 7]
    return np.where(code & 8, -mag, mag)


def e4m3_value(code):
    """FP8 E4M3FN: sign, 4 exponent bits (bias 7), 3 mantissa bits; 0x7F / 0xFF NaN."""
    code = np.asarray(code, dtype=np.int64)
    exponent = (code >> 3) & 15
    mantissa = code & 7
    mag = np.where(exponent == 0, mantissa * 2.0 ** -9,
                   (8 + mantissa) * np.exp2(exponent.astype(np.float64) - 10))
    mag = np.where((exponent == 15) & (mantissa == 7), np.nan, mag)
    return np.where(code & 0x80, -mag, mag)


def nearest_code(values, table_codes, table_values):
    """Index into table_codes of the nearest finite table value for each of values."""
    finite = np.isfinite(table_values)
    codes, vals = table_codes[finite], table_values[finite]
    idx = np.abs(values[..., None] - vals[None, :]).argmin(axis=-1)
    return codes[idx]


E4M3_CODES = np.arange(256)
E4M3_VALUES = e4m3_value(E4M3_CODES)
E2M1_CODES = np.arange(16)
E2M1_VALUES = e2m1_value(E2M1_CODES)

# ---------------------------------------------------------------- packing


def pack_rows(codes, bits):
    """codes [rows, n] (each < 2^bits) -> U32 [rows, n*bits/32]: per row a little-endian bit
    stream, code i in stream bits [i*bits, i*bits+bits), LSB first."""
    codes = np.asarray(codes, dtype=np.uint32)
    rows, n = codes.shape
    assert n * bits % 32 == 0
    stream = ((codes[:, :, None] >> np.arange(bits, dtype=np.uint32)) & 1).astype(np.uint8)
    packed_bytes = np.packbits(stream.reshape(rows, n * bits), axis=1, bitorder="little")
    return np.ascontiguousarray(packed_bytes).view("<u4").reshape(rows, n * bits // 32)


def half_store(values, dtype):
    """f32 values rounded into the scale dtype: (safetensors dtype, raw bytes, f32 values)."""
    values = np.asarray(values, dtype=np.float32)
    if dtype == "f32":
        return "F32", values.astype("<f4").tobytes(), values
    if dtype == "f16":
        h = values.astype("<f2")
        return "F16", h.tobytes(), h.astype(np.float32)
    raw, back = w.bf16_bytes(values)
    return "BF16", raw, back.reshape(values.shape)

# ---------------------------------------------------------------- quantizers


def quantize(weight, mode, bits, group, scale_dtype):
    """weight [out, in] f32 -> (tensors {suffix: (dtype, shape, raw)}, dequantized f32 [out, in])."""
    out_dim, in_dim = weight.shape
    groups = in_dim // group
    wg = weight.reshape(out_dim, groups, group).astype(np.float64)
    tensors = {}
    if mode == "affine":
        levels = 2 ** bits - 1
        lo, hi = wg.min(axis=2), wg.max(axis=2)
        scale = np.maximum((hi - lo) / levels, 1e-8)
        s_type, s_raw, s_val = half_store(scale, scale_dtype)
        b_type, b_raw, b_val = half_store(lo, scale_dtype)
        s32, b32 = s_val.astype(np.float32), b_val.astype(np.float32)
        q = np.clip(np.rint((wg - b32[..., None]) / s32[..., None]), 0, levels).astype(np.uint32)
        deq = (s32[..., None] * q.astype(np.float32)).astype(np.float32) + b32[..., None]
        tensors["scales"] = (s_type, [out_dim, groups], s_raw)
        tensors["biases"] = (b_type, [out_dim, groups], b_raw)
    else:
        amax = np.abs(wg).max(axis=2)
        if mode in ("mxfp4", "mxfp8"):
            top = 6.0 if mode == "mxfp4" else 448.0
            exponent = np.where(amax > 0, np.ceil(np.log2(np.maximum(amax, 1e-30) / top)), -127)
            exponent = np.clip(exponent, -127, 127)
            scale_code = (exponent + 127).astype(np.uint8)
            scale = np.exp2(exponent)
        else:  # nvfp4: an E4M3 scale
            scale_code = nearest_code(amax / 6.0, E4M3_CODES[:128], E4M3_VALUES[:128])
            scale_code = scale_code.astype(np.uint8)
            scale = e4m3_value(scale_code)
        safe = np.where(scale > 0, scale, 1.0)[..., None]
        if bits == 4:
            q = nearest_code(wg / safe, E2M1_CODES, E2M1_VALUES)
            elem = e2m1_value(q)
        else:
            q = nearest_code(wg / safe, E4M3_CODES, E4M3_VALUES)
            elem = e4m3_value(q)
        deq = scale.astype(np.float32)[..., None] * elem.astype(np.float32)
        q = q.astype(np.uint32)
        tensors["scales"] = ("U8", [out_dim, groups], scale_code.astype("<u1").tobytes())
    packed = pack_rows(q.reshape(out_dim, in_dim), bits)
    tensors["weight"] = ("U32", list(packed.shape), packed.astype("<u4").tobytes())
    return tensors, deq.reshape(out_dim, in_dim).astype(np.float32)

# ---------------------------------------------------------------- float models


def random_llama(seed, tied):
    rng = np.random.default_rng(seed)
    hidden, ff, heads, kv, head_dim, vocab, layers = 128, 256, 4, 2, 32, 256, 2
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": hidden,
              "intermediate_size": ff, "num_attention_heads": heads, "num_key_value_heads": kv,
              "head_dim": head_dim, "num_hidden_layers": layers, "vocab_size": vocab,
              "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "max_position_embeddings": 256,
              "tie_word_embeddings": tied, "hidden_act": "silu", "torch_dtype": "float32",
              "bos_token_id": 1, "eos_token_id": 2}

    def mat(out_dim, in_dim):
        return (rng.standard_normal((out_dim, in_dim)) / np.sqrt(in_dim)).astype(np.float32)

    def norm(n):
        return (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)

    tensors = {"model.embed_tokens.weight": rng.standard_normal((vocab, hidden)).astype(np.float32),
               "model.norm.weight": norm(hidden)}
    if not tied:
        tensors["lm_head.weight"] = mat(vocab, hidden)
    for i in range(layers):
        p = "model.layers.%d." % i
        tensors[p + "input_layernorm.weight"] = norm(hidden)
        tensors[p + "post_attention_layernorm.weight"] = norm(hidden)
        tensors[p + "self_attn.q_proj.weight"] = mat(heads * head_dim, hidden)
        tensors[p + "self_attn.k_proj.weight"] = mat(kv * head_dim, hidden)
        tensors[p + "self_attn.v_proj.weight"] = mat(kv * head_dim, hidden)
        tensors[p + "self_attn.o_proj.weight"] = mat(hidden, heads * head_dim)
        tensors[p + "mlp.gate_proj.weight"] = mat(ff, hidden)
        tensors[p + "mlp.up_proj.weight"] = mat(ff, hidden)
        tensors[p + "mlp.down_proj.weight"] = mat(hidden, ff)
    return config, tensors


def read_float_model(src):
    with open(os.path.join(src, "config.json")) as f:
        config = json.load(f)
    with open(os.path.join(src, "model.safetensors"), "rb") as f:
        data = f.read()
    (header_len,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + header_len])
    base = 8 + header_len
    tensors = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        begin, end = spec["data_offsets"]
        raw = data[base + begin:base + end]
        if spec["dtype"] == "F32":
            values = np.frombuffer(raw, dtype="<f4")
        elif spec["dtype"] == "F16":
            values = np.frombuffer(raw, dtype="<f2").astype(np.float32)
        elif spec["dtype"] == "BF16":
            values = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            sys.exit("%s: %s has dtype %s (float models only)" % (src, name, spec["dtype"]))
        tensors[name] = values.reshape(spec["shape"]).astype(np.float32)
    return config, tensors

# ---------------------------------------------------------------- main


def is_linear(name, quantize_embed):
    if not name.endswith(".weight"):
        return False
    if name == "model.embed_tokens.weight":
        return quantize_embed
    return name == "lm_head.weight" or name.endswith("_proj.weight")


def parse_override(text):
    path, _, spec = text.partition("=")
    if spec == "false":
        return path, False
    parts = spec.split(":")
    params = {"bits": int(parts[0]), "group_size": int(parts[1])}
    if len(parts) > 2:
        params["mode"] = parts[2]
    return path, params


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mlx_dir")
    ap.add_argument("deq_dir")
    ap.add_argument("--src")
    ap.add_argument("--bits", type=int, default=4)
    ap.add_argument("--group-size", type=int, default=64)
    ap.add_argument("--mode", default="affine")
    ap.add_argument("--scale-dtype", default="f16", choices=["f16", "bf16", "f32"])
    ap.add_argument("--override", action="append", default=[])
    ap.add_argument("--no-embed", action="store_true")
    ap.add_argument("--tied", dest="tied", action="store_true", default=True)
    ap.add_argument("--untied", dest="tied", action="store_false")
    ap.add_argument("--config-key", default="both",
                    choices=["quantization", "quantization_config", "both"])
    ap.add_argument("--drop", action="append", default=[], help="omit a tensor (malformed tests)")
    ap.add_argument("--truncate", action="append", default=[],
                    help="drop the last column of a 2-D tensor (malformed tests)")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()

    if args.src:
        config, tensors = read_float_model(args.src)
    else:
        config, tensors = random_llama(args.seed, args.tied)
    overrides = dict(parse_override(o) for o in args.override)
    quant_block = {"group_size": args.group_size, "bits": args.bits}
    if args.mode != "affine":
        quant_block["mode"] = args.mode
    quant_block.update(overrides)

    mlx_tensors, deq_tensors = [], []
    for name in sorted(tensors):
        value = tensors[name]
        path = name[:-len(".weight")]
        params = None
        if is_linear(name, not args.no_embed) and overrides.get(path, True) is not False:
            params = {"bits": args.bits, "group_size": args.group_size, "mode": args.mode}
            if isinstance(overrides.get(path), dict):
                params.update(overrides[path])
            if value.shape[1] % params["group_size"] != 0:
                params = None  # as mlx-lm: widths that are not whole groups stay unquantized
        if params is None:
            mlx_tensors.append((name, "F32", list(value.shape), value.astype("<f4").tobytes()))
            deq_tensors.append((name, "F32", list(value.shape), value.astype("<f4").tobytes()))
            continue
        parts, deq = quantize(value, params["mode"], params["bits"], params["group_size"],
                              args.scale_dtype)
        for suffix in ("weight", "scales", "biases"):
            if suffix in parts:
                mlx_tensors.append(("%s.%s" % (path, suffix),) + parts[suffix])
        deq_tensors.append((name, "F32", list(value.shape), deq.astype("<f4").tobytes()))

    for name in args.truncate:
        for i, (n, dtype, shape, raw) in enumerate(mlx_tensors):
            if n == name:
                row_bytes = len(raw) // shape[0]
                cut = row_bytes - row_bytes // shape[1]
                raw = b"".join(raw[r * row_bytes:r * row_bytes + cut] for r in range(shape[0]))
                mlx_tensors[i] = (n, dtype, [shape[0], shape[1] - 1], raw)
    mlx_tensors = [t for t in mlx_tensors if t[0] not in args.drop]

    for out_dir, out_tensors, quantized in ((args.mlx_dir, mlx_tensors, True),
                                            (args.deq_dir, deq_tensors, False)):
        os.makedirs(out_dir, exist_ok=True)
        cfg = {k: v for k, v in config.items() if k not in ("quantization", "quantization_config")}
        cfg["torch_dtype"] = "float32"
        cfg.pop("dtype", None)
        if quantized:
            if args.config_key in ("quantization", "both"):
                cfg["quantization"] = quant_block
            if args.config_key in ("quantization_config", "both"):
                cfg["quantization_config"] = quant_block
        with open(os.path.join(out_dir, "config.json"), "w") as f:
            json.dump(cfg, f, indent=1)
        w.write_safetensors(os.path.join(out_dir, "model.safetensors"), out_tensors,
                            metadata={"format": "mlx"})


if __name__ == "__main__":
    main()
