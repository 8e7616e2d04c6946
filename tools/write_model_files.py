#!/usr/bin/python3
"""Independent writer of safetensors and GGUF files for proctor's reader tests.

Writes the bytes per the published formats (safetensors: u64 header length, JSON header, data;
GGUF v2/v3: magic, version, counts, typed metadata, tensor infos, aligned data) with numpy and
struct only -- no safetensors/gguf package -- from known arrays, and a manifest.json of what a
reader must return: every tensor's dtype, shape (outermost first), raw bytes (hex) and, for float
types, its values; every GGUF metadata key's type and value.

usage: /usr/bin/python3 tools/write_model_files.py OUT_DIR
"""
import json
import os
import struct
import sys

import numpy as np

RNG = np.random.default_rng(20261130)


def bf16_bytes(values):
    """Round-to-nearest-even f32 -> bf16, as little-endian u16 bytes, and the rounded f32 values."""
    bits = np.asarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    back = (rounded.astype(np.uint32) << 16).view(np.float32)
    return rounded.tobytes(), back


def float_values(dtype, raw):
    if dtype == "F32":
        return np.frombuffer(raw, dtype="<f4").astype(float).tolist()
    if dtype == "F16":
        return np.frombuffer(raw, dtype="<f2").astype(float).tolist()
    if dtype == "BF16":
        u = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
        return u.view(np.float32).astype(float).tolist()
    return None


def make_tensor(dtype, shape):
    """Known contents for a safetensors dtype: returns raw little-endian bytes."""
    n = int(np.prod(shape)) if shape else 1
    if dtype == "F32":
        return RNG.standard_normal(n).astype("<f4").tobytes()
    if dtype == "F16":
        return RNG.standard_normal(n).astype("<f2").tobytes()
    if dtype == "BF16":
        return bf16_bytes(RNG.standard_normal(n).astype(np.float32))[0]
    if dtype == "F64":
        return RNG.standard_normal(n).astype("<f8").tobytes()
    ints = {"U8": "<u1", "I8": "<i1", "U16": "<u2", "I16": "<i2", "U32": "<u4", "I32": "<i4",
            "U64": "<u8", "I64": "<i8", "BOOL": "<u1"}
    info = np.iinfo(ints[dtype]) if dtype != "BOOL" else None
    if dtype == "BOOL":
        return RNG.integers(0, 2, n).astype("<u1").tobytes()
    return RNG.integers(info.min, info.max, n, endpoint=True, dtype=np.int64 if info.min < 0
                        else np.uint64).astype(ints[dtype]).tobytes()


def tensor_record(name, dtype, shape, raw, file_name):
    rec = {"name": name, "dtype": dtype.lower(), "shape": list(shape), "hex": raw.hex(),
           "file": file_name}
    values = float_values(dtype, raw)
    if values is not None:
        rec["values"] = values
    return rec


# ---------------------------------------------------------------- safetensors

def write_safetensors(path, tensors, metadata=None, header_pad=0):
    """tensors: list of (name, dtype, shape, raw). Packed back to back, no alignment."""
    header = {}
    if metadata is not None:
        header["__metadata__"] = metadata
    offset = 0
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": list(shape),
                        "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
    text = json.dumps(header).encode() + b" " * header_pad
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for _, _, _, raw in tensors:
            f.write(raw)


def safetensors_cases(out, manifest):
    # Unaligned: an odd header length and odd-sized tensors first, so later tensors start at odd
    # addresses.
    specs = [("a.u8", "U8", [5]), ("b.f16", "F16", [7]), ("c.f32", "F32", [3, 5]),
             ("d.bf16", "BF16", [2, 3]), ("e.u32", "U32", [4, 2]), ("f.i32", "I32", [3]),
             ("g.f64", "F64", [2]), ("h.i64", "I64", [1, 2]), ("i.bool", "BOOL", [3]),
             ("j.i8", "I8", [4]), ("k.u16", "U16", [1]), ("l.i16", "I16", [2]),
             ("m.u64", "U64", [1]), ("scalar.f32", "F32", []), ("empty.f32", "F32", [0, 4])]
    tensors = [(n, d, s, make_tensor(d, s)) for n, d, s in specs]
    write_safetensors(os.path.join(out, "unaligned.safetensors"), tensors,
                      metadata={"format": "pt", "note": "written by write_model_files.py"},
                      header_pad=3)
    manifest["safetensors"]["unaligned.safetensors"] = {
        "metadata": {"format": "pt", "note": "written by write_model_files.py"},
        "tensors": [tensor_record(n, d, s, r, "unaligned.safetensors") for n, d, s, r in tensors]}

    # Sharded: two shards and an index.
    shard_dir = os.path.join(out, "sharded")
    os.makedirs(shard_dir, exist_ok=True)
    shards = {
        "model-00001-of-00002.safetensors": [("model.embed_tokens.weight", "BF16", [6, 4]),
                                             ("model.norm.weight", "F32", [4])],
        "model-00002-of-00002.safetensors": [("lm_head.weight", "F16", [6, 4]),
                                             ("model.layers.0.mlp.up_proj.weight", "F32", [3, 4])],
    }
    weight_map = {}
    records = []
    for file_name, specs in shards.items():
        tensors = [(n, d, s, make_tensor(d, s)) for n, d, s in specs]
        write_safetensors(os.path.join(shard_dir, file_name), tensors, header_pad=1)
        for n, d, s, r in tensors:
            weight_map[n] = file_name
            records.append(tensor_record(n, d, s, r, file_name))
    with open(os.path.join(shard_dir, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, f, indent=1)
    manifest["sharded"] = {"tensors": records}


# ---------------------------------------------------------------- GGUF

GGUF_TYPES = {"uint8": 0, "int8": 1, "uint16": 2, "int16": 3, "uint32": 4, "int32": 5,
              "float32": 6, "bool": 7, "string": 8, "array": 9, "uint64": 10, "int64": 11,
              "float64": 12}
PACK = {"uint8": "<B", "int8": "<b", "uint16": "<H", "int16": "<h", "uint32": "<I",
        "int32": "<i", "float32": "<f", "bool": "<?", "uint64": "<Q", "int64": "<q",
        "float64": "<d"}
GGML = {"F32": (0, 1, 4), "F16": (1, 1, 2), "Q4_0": (2, 32, 18), "Q8_0": (8, 32, 34),
        "BF16": (30, 1, 2), "Q4_K": (12, 256, 144), "Q6_K": (14, 256, 210), "I32": (26, 1, 4)}


def gguf_string(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def gguf_value(vtype, value):
    """vtype: a type name, or ("array", element_type) nested as needed."""
    if isinstance(vtype, tuple):
        _, element = vtype
        element_id = GGUF_TYPES["array"] if isinstance(element, tuple) else GGUF_TYPES[element]
        out = struct.pack("<IQ", element_id, len(value))
        for v in value:
            out += gguf_value(element, v)
        return out
    if vtype == "string":
        return gguf_string(value)
    return struct.pack(PACK[vtype], value)


def type_id(vtype):
    return GGUF_TYPES["array"] if isinstance(vtype, tuple) else GGUF_TYPES[vtype]


def describe(vtype):
    return {"array": describe(vtype[1])} if isinstance(vtype, tuple) else vtype


def quant_blocks(kind, n_blocks):
    """Random blocks whose fp16 scale is a finite number (raw bytes are what is compared)."""
    _, elems, size = GGML[kind]
    out = b""
    for _ in range(n_blocks):
        d = np.float16(RNG.uniform(0.001, 0.1)).tobytes()
        out += d + RNG.integers(0, 256, size - 2, dtype=np.uint8).tobytes()
    return out


def write_gguf(path, version, alignment, metadata, tensors):
    """metadata: list of (key, vtype, value); tensors: list of (name, kind, dims_contiguous_first,
    raw). general.alignment is added when alignment != 32."""
    meta = list(metadata)
    if alignment != 32:
        meta.append(("general.alignment", "uint32", alignment))
    out = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(meta))
    for key, vtype, value in meta:
        out += gguf_string(key) + struct.pack("<I", type_id(vtype)) + gguf_value(vtype, value)
    offset = 0
    offsets = []
    for name, kind, dims, raw in tensors:
        offsets.append(offset)
        out += gguf_string(name) + struct.pack("<I", len(dims))
        out += b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", GGML[kind][0], offset)
        offset += len(raw)
        offset += (-offset) % alignment
    out += b"\0" * ((-len(out)) % alignment)
    data_start = len(out)
    for (name, kind, dims, raw), off in zip(tensors, offsets):
        out += b"\0" * (data_start + off - len(out)) + raw
    with open(path, "wb") as f:
        f.write(out)
    return meta


def gguf_tensor_record(name, kind, dims, raw, file_name):
    rec = {"name": name, "dtype": kind.lower(), "dims": list(dims), "hex": raw.hex(),
           "file": file_name}
    values = float_values(kind, raw)
    if values is not None:
        rec["values"] = values
    return rec


def all_metadata():
    """Every value type, scalar and array, with values exactly representable in their type."""
    return [
        ("general.architecture", "string", "llama"),
        ("test.u8", "uint8", 250), ("test.i8", "int8", -7), ("test.u16", "uint16", 65000),
        ("test.i16", "int16", -32000), ("test.u32", "uint32", 4000000000),
        ("test.i32", "int32", -2000000000), ("test.f32", "float32", -1.25),
        ("test.bool_true", "bool", True), ("test.bool_false", "bool", False),
        ("test.string", "string", "h\u00e9llo \u4e16\u754c"),
        ("test.empty_string", "string", ""),
        ("test.u64", "uint64", 2 ** 63 + 5), ("test.i64", "int64", -(2 ** 62) - 3),
        ("test.f64", "float64", 3.0517578125e-05),
        ("test.arr_u8", ("array", "uint8"), [0, 1, 255]),
        ("test.arr_i8", ("array", "int8"), [-128, 0, 127]),
        ("test.arr_u16", ("array", "uint16"), [65535, 2]),
        ("test.arr_i16", ("array", "int16"), [-32768, 32767]),
        ("test.arr_u32", ("array", "uint32"), [4294967295, 0, 7]),
        ("test.arr_i32", ("array", "int32"), [1, -2, 3, -4]),
        ("test.arr_f32", ("array", "float32"), [0.5, -2.0, 1e-3, 3.4028234663852886e38]),
        ("test.arr_bool", ("array", "bool"), [True, False, True]),
        ("test.arr_string", ("array", "string"), ["<s>", "", "\u2581the", "a b"]),
        ("test.arr_u64", ("array", "uint64"), [18446744073709551615, 1]),
        ("test.arr_i64", ("array", "int64"), [-9223372036854775808, 9223372036854775807]),
        ("test.arr_f64", ("array", "float64"), [0.1, -1e300]),
        ("test.arr_empty", ("array", "int32"), []),
        ("test.arr_nested", ("array", ("array", "int32")), [[1, 2], [], [3]]),
        ("test.arr_nested_strings", ("array", ("array", "string")), [["a", "bc"], ["d"]]),
        ("test.arr_nested2", ("array", ("array", ("array", "uint8"))), [[[1], [2, 3]], []]),
    ]


def gguf_cases(out, manifest):
    f32_values = RNG.standard_normal(15).astype("<f4")
    tensors = [
        ("token_embd.weight", "F32", [5, 3], f32_values.tobytes()),
        ("blk.0.attn_q.weight", "F16", [7, 2], RNG.standard_normal(14).astype("<f2").tobytes()),
        ("blk.0.attn_norm.weight", "BF16", [3], bf16_bytes(RNG.standard_normal(3))[0]),
        ("blk.0.ffn_up.weight", "Q8_0", [64, 3], quant_blocks("Q8_0", 6)),
        ("blk.0.ffn_down.weight", "Q4_0", [32, 5], quant_blocks("Q4_0", 5)),
        ("extra.i32", "I32", [2, 3, 2], RNG.integers(-99, 99, 12).astype("<i4").tobytes()),
        ("output.weight", "Q4_K", [256, 1], quant_blocks("Q4_K", 1)),
    ]
    for name, version, alignment in [("v3_align64.gguf", 3, 64), ("v2_default.gguf", 2, 32),
                                     ("v3_align8.gguf", 3, 8), ("v3_align1.gguf", 3, 1)]:
        meta = write_gguf(os.path.join(out, name), version, alignment, all_metadata(), tensors)
        manifest["gguf"][name] = {
            "version": version, "alignment": alignment,
            "metadata": [{"key": k, "type": describe(t), "value": v} for k, t, v in meta],
            "tensors": [gguf_tensor_record(n, k, d, r, name) for n, k, d, r in tensors]}


def tiny_model(out, manifest, file_name, arch, spec):
    """A small, complete GGUF model of `arch`; the manifest holds the config a reader must derive."""
    hidden, layers, heads, kv, ff, head_dim, vocab = (spec[k] for k in (
        "hidden", "layers", "heads", "kv_heads", "ff", "head_dim", "vocab"))
    p = arch + "."
    meta = [("general.architecture", "string", arch), ("general.name", "string", file_name),
            (p + "block_count", "uint32", layers), (p + "embedding_length", "uint32", hidden),
            (p + "feed_forward_length", "uint32", ff), (p + "attention.head_count", "uint32", heads),
            (p + "attention.head_count_kv", "uint32", kv),
            (p + "attention.layer_norm_rms_epsilon", "float32", spec["eps"]),
            (p + "rope.freq_base", "float32", spec["theta"]),
            (p + "context_length", "uint32", spec["context"]),
            ("tokenizer.ggml.bos_token_id", "uint32", spec["bos"]),
            ("tokenizer.ggml.eos_token_id", "uint32", spec["eos"])]
    if spec.get("key_length"):
        meta += [(p + "attention.key_length", "uint32", head_dim),
                 (p + "attention.value_length", "uint32", head_dim)]
    meta.append((p + "rope.dimension_count", "uint32", head_dim))
    if spec.get("scaling"):
        kind, factor, original = spec["scaling"]
        meta += [(p + "rope.scaling.type", "string", kind),
                 (p + "rope.scaling.factor", "float32", factor)]
        if original:
            meta.append((p + "rope.scaling.original_context_length", "uint32", original))
    if spec.get("tokens"):
        meta.append(("tokenizer.ggml.tokens", ("array", "string"),
                     ["<t%d>" % i for i in range(vocab)]))

    def f32(*hf_shape):  # GGUF dims are the HF shape reversed
        return ("F32", list(reversed(hf_shape)),
                RNG.standard_normal(int(np.prod(hf_shape))).astype("<f4").tobytes())

    tensors = [("token_embd.weight",) + f32(vocab, hidden), ("output_norm.weight",) + f32(hidden)]
    if not spec["tied"]:
        tensors.append(("output.weight",) + f32(vocab, hidden))
    for i in range(layers):
        b = "blk.%d." % i
        tensors += llama_block_tensors(b, f32, hidden, ff, heads, kv, head_dim)
        if spec.get("bias"):
            tensors += [(b + "attn_q.bias",) + f32(heads * head_dim),
                        (b + "attn_k.bias",) + f32(kv * head_dim), (b + "attn_v.bias",) + f32(kv * head_dim)]
        if spec.get("qk_norm"):
            tensors += [(b + "attn_q_norm.weight",) + f32(head_dim),
                        (b + "attn_k_norm.weight",) + f32(head_dim)]
    if spec.get("rope_freqs"):
        tensors.append(("rope_freqs.weight", "F32", [head_dim // 2],
                        llama3_rope_factors(spec["theta"], head_dim, spec["rope_freqs"])))
    write_gguf(os.path.join(out, file_name), 3, 32, meta, tensors)
    manifest["models"][file_name] = dict(spec, arch=arch, tensor_count=len(tensors))


def llama_block_tensors(b, f32, hidden, ff, heads, kv, head_dim):
    """The norms and matrices of llama GGUF block `b` ("blk.N."), in file order, as
    (name, kind, dims, raw) tuples; f32(*hf_shape) makes each tensor (called in that order)."""
    return [(b + "attn_norm.weight",) + f32(hidden), (b + "ffn_norm.weight",) + f32(hidden),
            (b + "attn_q.weight",) + f32(heads * head_dim, hidden),
            (b + "attn_k.weight",) + f32(kv * head_dim, hidden),
            (b + "attn_v.weight",) + f32(kv * head_dim, hidden),
            (b + "attn_output.weight",) + f32(hidden, heads * head_dim),
            (b + "ffn_gate.weight",) + f32(ff, hidden), (b + "ffn_up.weight",) + f32(ff, hidden),
            (b + "ffn_down.weight",) + f32(hidden, ff)]


def llama3_rope_factors(base, dim, factor, low=1.0, high=4.0, old_context=8192):
    """The per-frequency divisors llama.cpp's converter stores for Llama-3 RoPE scaling."""
    freqs = 1.0 / (base ** (np.arange(0, dim, 2, dtype=np.float32) / dim))
    low_wavelen, high_wavelen = old_context / low, old_context / high
    out = []
    for freq in freqs:
        wavelen = 2 * np.pi / float(freq)
        if wavelen < high_wavelen:
            out.append(1.0)
        elif wavelen > low_wavelen:
            out.append(factor)
        else:
            smooth = (old_context / wavelen - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.asarray(out, dtype="<f4").tobytes()


def model_cases(out, manifest):
    base = dict(hidden=16, layers=2, heads=4, kv_heads=2, ff=24, vocab=40, eps=1e-5,
                context=128, bos=1, eos=2)
    tiny_model(out, manifest, "tiny_llama.gguf", "llama",
               dict(base, head_dim=4, theta=500000.0, tied=False, tokens=True))
    tiny_model(out, manifest, "tiny_llama3.gguf", "llama",
               dict(base, hidden=64, heads=1, kv_heads=1, head_dim=64, theta=500000.0,
                    tied=True, rope_freqs=32.0))
    tiny_model(out, manifest, "tiny_qwen2.gguf", "qwen2",
               dict(base, head_dim=4, theta=1000000.0, tied=True, bias=True, tokens=True,
                    scaling=["yarn", 4.0, 32768]))
    tiny_model(out, manifest, "tiny_qwen3.gguf", "qwen3",
               dict(base, head_dim=8, key_length=True, theta=10000.0, tied=True, qk_norm=True,
                    eps=1e-6, scaling=["linear", 2.0, 0]))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    manifest = {"safetensors": {}, "gguf": {}, "models": {}}
    safetensors_cases(out, manifest)
    gguf_cases(out, manifest)
    model_cases(out, manifest)
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


if __name__ == "__main__":
    main()
