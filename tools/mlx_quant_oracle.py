#!/usr/bin/python3
"""Independent reader and checker of an MLX-format model directory (test oracle for
`proctor quantize`).

Reads the output directory with json + numpy only (no safetensors / mlx package): the
safetensors framing (u64 header length, JSON header, data), config.json's quantization block,
the packed codes (each row a little-endian bit stream, code i at stream bits
[i*bits, i*bits+bits), LSB first -- unpacked here bit by bit with numpy.unpackbits) and the
dequantization formulas of docs/FORMATS.md section 6 (affine: scales * q + biases in f32;
mxfp4 / mxfp8 / nvfp4: E8M0 / E4M3 scales times E2M1 / E4M3 elements). Then, against the source
model (a safetensors directory, or a GGUF v3 file with F32/F16 tensors, read here too):
  - every file's header follows the safetensors rules proctor promises: keys sorted, data back
    to back in key order with no holes and no overlap, header padded with spaces to a multiple
    of 8, __metadata__ == {"format": "mlx"};
  - every source tensor is in the output: quantized (M.weight U32 + M.scales [+ M.biases]) or
    byte-identical (GGUF llama Q/K rows are first put back in Hugging Face order by inverting
    llama.cpp's permutation: reshape [heads, head_dim/2, 2] -> swap -> [heads, 2, head_dim/2]);
  - the dequantized values equal the C++ decoder's (files DEQ_DIR/<name>.f32, bit for bit);
  - affine error bound per element: |w - deq| <= |scale|/2 for codes strictly inside the range,
    <= |scale| at the two end codes, plus the storage rounding of scale and bias; with f32
    scales the larger-magnitude extreme of each group is exact;
  - mx / nv modes: deq equals the nearest representable value times the decoded scale (|w/s|
    rounded within half a step of the element grid, or saturated).
Prints a JSON summary on stdout; exit status 1 with messages on stderr when a check fails.

usage: mlx_quant_oracle.py --out DIR --source SRC [--deq DEQ_DIR]
       mlx_quant_oracle.py --jobs JOBS.json   (a list of {"out", "source", "deq"}; one stats
                                              line per job)
"""
import argparse
import json
import os
import struct
import sys

import numpy as np

FAILURES = []


def fail(msg):
    FAILURES.append(msg)


# ---------------------------------------------------------------- element decodings


def bf16_to_f32(u16):
    return (u16.astype(np.uint32) << 16).view(np.float32)


E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6],
                dtype=np.float32)


def e4m3(codes):
    codes = codes.astype(np.int64)
    sign = np.where(codes & 0x80, -1.0, 1.0)
    exp = (codes >> 3) & 0xF
    man = codes & 0x7
    sub = man / 8.0 * 2.0 ** -6
    norm = (1 + man / 8.0) * 2.0 ** (exp - 7)
    val = np.where(exp == 0, sub, norm) * sign
    val = np.where((codes & 0x7F) == 0x7F, np.nan, val)
    return val.astype(np.float32)


def e8m0(codes):
    codes = codes.astype(np.int64)
    val = np.ldexp(1.0, codes - 127)
    return np.where(codes == 255, np.inf, val).astype(np.float32)


# ---------------------------------------------------------------- safetensors


DTYPES = {"F32": "<f4", "F16": "<f2", "BF16": "<u2", "U32": "<u4", "U8": "u1", "I32": "<i4",
          "F64": "<f8", "I64": "<i8", "U16": "<u2", "I16": "<i2", "I8": "i1", "BOOL": "u1"}


def read_safetensors(path, check_layout):
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    header_bytes = raw[8:8 + n]
    header = json.loads(header_bytes)
    data = raw[8 + n:]
    tensors = {}
    if check_layout:
        if (8 + n) % 8 != 0:
            fail(f"{path}: header length {n}: 8 + N is not a multiple of 8")
        text = header_bytes.decode("utf-8")
        stripped = text.rstrip(" ")
        if not stripped.endswith("}") or len(text) - len(stripped) > 7:
            fail(f"{path}: header padding is not 0..7 trailing spaces")
        pairs = json.loads(stripped, object_pairs_hook=lambda kv: kv)  # top level, in order
        keys = [k for k, _ in pairs]
        if keys != sorted(keys):
            fail(f"{path}: header keys are not sorted")
        if header.get("__metadata__") != {"format": "mlx"}:
            fail(f"{path}: __metadata__ is {header.get('__metadata__')}, expected format mlx")
    offset = 0
    for name in sorted(k for k in header if k != "__metadata__"):
        info = header[name]
        begin, end = info["data_offsets"]
        if check_layout and begin != offset:
            fail(f"{path}: {name} starts at {begin}, expected {offset} (hole or overlap)")
        offset = end
        dt = np.dtype(DTYPES[info["dtype"]])
        count = int(np.prod(info["shape"])) if info["shape"] else 1
        if end - begin != count * dt.itemsize:
            fail(f"{path}: {name}: {end - begin} bytes for {info['dtype']} {info['shape']}")
        arr = np.frombuffer(data[begin:end], dtype=dt).reshape(info["shape"])
        tensors[name] = (info["dtype"], arr, data[begin:end])
    if check_layout and offset != len(data):
        fail(f"{path}: data section is {len(data)} bytes, tensors cover {offset}")
    return tensors


def read_model_dir(d, check_layout):
    index_path = os.path.join(d, "model.safetensors.index.json")
    files = set()
    if os.path.exists(index_path):
        index = json.load(open(index_path))
        files = sorted(set(index["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    tensors = {}
    for f in files:
        part = read_safetensors(os.path.join(d, f), check_layout)
        if os.path.exists(index_path):
            for name in part:
                if index["weight_map"].get(name) != f:
                    fail(f"index.json puts {name} in {index['weight_map'].get(name)}, found in {f}")
        tensors.update(part)
    if os.path.exists(index_path) and set(index["weight_map"]) != set(tensors):
        fail("index.json weight_map does not list exactly the tensors in the files")
    return tensors


# ---------------------------------------------------------------- GGUF (float tensors only)


GGUF_NAMES = {"token_embd": "model.embed_tokens", "output_norm": "model.norm",
              "output": "lm_head"}
BLOCK_NAMES = {"attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
               "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj",
               "attn_q_norm": "self_attn.q_norm", "attn_k_norm": "self_attn.k_norm",
               "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj",
               "attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm"}


def read_gguf(path):
    raw = open(path, "rb").read()
    pos = 0

    def take(fmt):
        nonlocal pos
        vals = struct.unpack_from("<" + fmt, raw, pos)
        pos += struct.calcsize("<" + fmt)
        return vals if len(vals) > 1 else vals[0]

    def string():
        nonlocal pos
        n = take("Q")
        s = raw[pos:pos + n].decode("utf-8", "replace")
        pos += n
        return s

    scalar = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q",
              12: "d"}

    def value(vtype):
        if vtype in scalar:
            return take(scalar[vtype])
        if vtype == 8:
            return string()
        if vtype == 9:
            etype, count = take("IQ")
            return [value(etype) for _ in range(count)]
        raise ValueError(f"GGUF value type {vtype}")

    assert raw[:4] == b"GGUF"
    pos = 4
    version, n_tensors, n_kv = take("IQQ")
    meta = {}
    for _ in range(n_kv):
        key = string()
        meta[key] = value(take("I"))
    infos = []
    for _ in range(n_tensors):
        name = string()
        n_dims = take("I")
        dims = [take("Q") for _ in range(n_dims)]
        ttype, offset = take("IQ")
        infos.append((name, dims, ttype, offset))
    align = meta.get("general.alignment", 32)
    data_start = (pos + align - 1) // align * align
    tensors = {}
    for name, dims, ttype, offset in infos:
        dt = {0: "<f4", 1: "<f2"}[ttype]
        shape = list(reversed(dims))  # GGUF lists the contiguous dimension first
        count = int(np.prod(shape))
        b = data_start + offset
        arr = np.frombuffer(raw[b:b + count * np.dtype(dt).itemsize], dtype=dt).reshape(shape)
        base, _, suffix = name.rpartition(".")
        if base.startswith("blk."):
            _, layer, part = base.split(".", 2)
            hf = f"model.layers.{layer}.{BLOCK_NAMES[part]}.{suffix}"
        else:
            hf = f"{GGUF_NAMES.get(base, base)}.{suffix}"
        tensors[hf] = ({0: "F32", 1: "F16"}[ttype], arr, arr.tobytes())
    return meta, tensors


def unpermute(arr, heads):
    """Invert llama.cpp's permute (reshape [heads, 2, hd/2] and swap the last two axes)."""
    rest = arr.shape[1:]
    half = arr.shape[0] // heads // 2
    return arr.reshape(heads, half, 2, *rest).swapaxes(1, 2).reshape(arr.shape)


# ---------------------------------------------------------------- checks


def as_f32(dtype, arr):
    if dtype == "BF16":
        return bf16_to_f32(arr)
    return arr.astype(np.float32)


def unpack_codes(packed, bits, cols):
    """packed U32 [rows, words] -> codes [rows, cols] from each row's LSB-first bit stream."""
    rows = packed.shape[0]
    stream = np.unpackbits(packed.astype("<u4").view(np.uint8).reshape(rows, -1),
                           axis=1, bitorder="little")
    stream = stream[:, :cols * bits].reshape(rows, cols, bits).astype(np.int64)
    return (stream << np.arange(bits)).sum(axis=2)


STORAGE_STEP = {"F32": 0.0, "F16": 2.0 ** -11, "BF16": 2.0 ** -8}


def check_affine(name, w, codes, scales_f, biases_f, deq, bits, group, scale_dtype, stats):
    rows, cols = w.shape
    n_bins = (1 << bits) - 1
    sc = np.repeat(scales_f, group, axis=1)
    bi = np.repeat(biases_f, group, axis=1)
    err = np.abs(w.astype(np.float64) - deq.astype(np.float64))
    end = (codes == 0) | (codes == n_bins)
    step = STORAGE_STEP[scale_dtype]
    storage = step * (n_bins * np.abs(sc) + np.abs(bi)) * 1.01
    slack = 4e-7 * (np.abs(w) + np.abs(sc) * n_bins + np.abs(bi)) + 1e-30
    bound = np.abs(sc).astype(np.float64) * np.where(end, 1.0, 0.5) + storage + slack
    bad = err > bound
    if bad.any():
        r, c = np.argwhere(bad)[0]
        fail(f"{name}: |w - deq| = {err[r, c]:.3g} > bound {bound[r, c]:.3g} at [{r},{c}] "
             f"(code {codes[r, c]}, scale {sc[r, c]:.6g})")
    inner = ~end
    if inner.any():
        stats["max_inner_err_over_scale"] = max(stats.get("max_inner_err_over_scale", 0.0),
                                                float((err[inner] / np.abs(sc[inner])).max()))
    if scale_dtype == "F32":
        g = w.reshape(rows, cols // group, group)
        dg = deq.reshape(rows, cols // group, group)
        lo, hi = g.min(axis=2), g.max(axis=2)
        edge_is_lo = np.abs(lo) > np.abs(hi)
        edge = np.where(edge_is_lo, lo, hi)
        idx = np.where(edge_is_lo, g.argmin(axis=2), g.argmax(axis=2))
        edge_deq = np.take_along_axis(dg, idx[..., None], axis=2)[..., 0]
        # A group whose edge rounds to code 0 (all values ~0) has bias 0: not exact by rule.
        ok = (edge_deq == edge) | (np.abs(edge) < np.abs(scales_f) * 0.5)
        if not ok.all():
            r, gi = np.argwhere(~ok)[0]
            fail(f"{name}: group [{r},{gi}] edge {edge[r, gi]!r} dequantizes to "
                 f"{edge_deq[r, gi]!r} (not exact)")
        stats["exact_edges"] = stats.get("exact_edges", 0) + int(ok.sum())


def check_microscaling(name, w, codes, scale_codes, deq, mode, group, stats):
    if mode == "nvfp4":
        s = e4m3(scale_codes)
    else:
        s = e8m0(scale_codes)
    s_full = np.repeat(s, group, axis=1)
    grid = np.unique(np.abs(E2M1 if mode in ("mxfp4", "nvfp4") else
                            e4m3(np.arange(256))[np.isfinite(e4m3(np.arange(256)))]))
    t = np.abs(w / np.where(s_full == 0, 1, s_full))
    # The chosen element must be a nearest grid value of |w / s| (or the top one when beyond).
    chosen = np.abs(deq / np.where(s_full == 0, 1, s_full))
    nearest = grid[np.abs(t[..., None] - grid).argmin(axis=-1)]
    dist_chosen = np.abs(t - chosen)
    dist_best = np.abs(t - nearest)
    bad = (dist_chosen > dist_best * (1 + 1e-6) + 1e-12) & (s_full > 0)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        fail(f"{name}: [{r},{c}] w/s = {t[r, c]} decoded to {chosen[r, c]}, nearest {nearest[r, c]}")
    stats["microscaling_elements"] = stats.get("microscaling_elements", 0) + int(w.size)


def check_one(out_dir, source, deq_dir):
    """Checks one output directory; returns the stats (failures go to FAILURES)."""
    config = json.load(open(os.path.join(out_dir, "config.json")))
    q = config.get("quantization")
    if q is None or config.get("quantization_config") != q:
        fail("config.json: quantization missing or quantization_config differs from it")
        q = q or {}
    mode = q.get("mode", "affine")
    out = read_model_dir(out_dir, check_layout=True)

    permute_heads = {}
    if source.endswith(".gguf"):
        meta, src = read_gguf(source)
        arch = meta["general.architecture"]
        if arch == "llama":
            heads = meta[f"{arch}.attention.head_count"]
            kv = meta.get(f"{arch}.attention.head_count_kv", heads)
            for name in src:
                if ".self_attn.q_proj." in name:
                    permute_heads[name] = heads
                elif ".self_attn.k_proj." in name:
                    permute_heads[name] = kv
        if "lm_head.weight" not in src:
            config_tied = config.get("tie_word_embeddings")
            if config_tied is not True:
                fail(f"GGUF without output.weight, config tie_word_embeddings = {config_tied}")
    else:
        src = read_model_dir(source, check_layout=False)
    stats = {"quantized": [], "copied": [], "mode": mode}
    seen = set()
    for name in sorted(src):
        dtype, arr, raw = src[name]
        if name in permute_heads:
            arr = unpermute(arr, permute_heads[name])
            raw = arr.tobytes()
        module = name[:-len(".weight")] if name.endswith(".weight") else None
        if module and module + ".scales" in out:
            seen.update({name, module + ".scales", module + ".biases"})
            override = q.get(module)
            bits = override["bits"] if isinstance(override, dict) else q["bits"]
            group = override["group_size"] if isinstance(override, dict) else q["group_size"]
            pdt, packed, _ = out[name]
            sdt, scales, _ = out[module + ".scales"]
            rows, cols = arr.shape
            if pdt != "U32" or packed.shape != (rows, cols * bits // 32):
                fail(f"{name}: packed {pdt} {packed.shape}, expected U32 {(rows, cols * bits // 32)}")
                continue
            if scales.shape != (rows, cols // group):
                fail(f"{module}.scales shape {scales.shape}, expected {(rows, cols // group)}")
                continue
            codes = unpack_codes(packed, bits, cols)
            w = as_f32(dtype, arr)
            if mode == "affine":
                if sdt != dtype:
                    fail(f"{module}.scales is {sdt}, the source weight is {dtype}")
                bdt, biases, _ = out[module + ".biases"]
                sf, bf = as_f32(sdt, scales), as_f32(bdt, biases)
                deq = (np.repeat(sf, group, axis=1) * codes.astype(np.float32)).astype(
                    np.float32) + np.repeat(bf, group, axis=1)
                deq = deq.astype(np.float32)
                check_affine(name, w, codes, sf, bf, deq, bits, group, sdt, stats)
            else:
                if sdt != "U8" or module + ".biases" in out:
                    fail(f"{module}: {mode} wants U8 scales and no biases")
                s = e4m3(scales) if mode == "nvfp4" else e8m0(scales)
                elem = E2M1[codes & 0xF] if bits == 4 else e4m3(codes)
                deq = (np.repeat(s, group, axis=1) * elem).astype(np.float32)
                check_microscaling(name, w, codes, scales, deq, mode, group, stats)
            if deq_dir:
                path = os.path.join(deq_dir, name + ".f32")
                cxx = np.fromfile(path, dtype="<f4").reshape(deq.shape)
                if not np.array_equal(cxx.view(np.uint32), deq.view(np.uint32)):
                    diff = np.argwhere(cxx.view(np.uint32) != deq.view(np.uint32))[0]
                    fail(f"{name}: C++ dequantization differs at {list(diff)}: "
                         f"{cxx[tuple(diff)]!r} vs {deq[tuple(diff)]!r}")
            err = np.abs(w.astype(np.float64) - deq)
            stats["quantized"].append({"name": name, "bits": bits, "group_size": group,
                                       "max_abs_err": float(err.max()),
                                       "rms_err": float(np.sqrt((err ** 2).mean()))})
        elif name in out:
            seen.add(name)
            odt, _, oraw = out[name]
            if odt != dtype or oraw != raw:
                fail(f"{name}: copied tensor differs from the source ({odt} vs {dtype})")
            stats["copied"].append(name)
        elif name == "lm_head.weight" and config.get("tie_word_embeddings"):
            continue
        else:
            fail(f"{name}: missing from the output")
    extra = set(out) - seen
    if extra:
        fail(f"output tensors not in the source: {sorted(extra)[:5]}")
    for module, value in q.items():
        if module in ("group_size", "bits", "mode"):
            continue
        if value is False and module + ".scales" in out:
            fail(f"{module}: override false but quantized")
        if isinstance(value, dict) and module + ".scales" not in out:
            fail(f"{module}: override {value} but not quantized")
    return stats


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--source")
    ap.add_argument("--deq")
    ap.add_argument("--jobs", help="JSON list of {out, source, deq}: one line of stats each")
    a = ap.parse_args()
    jobs = json.load(open(a.jobs)) if a.jobs else [{"out": a.out, "source": a.source,
                                                     "deq": a.deq}]
    for job in jobs:
        before = len(FAILURES)
        stats = check_one(job["out"], job["source"], job.get("deq"))
        for i in range(before, len(FAILURES)):
            FAILURES[i] = f"{job['out']}: {FAILURES[i]}"
        print(json.dumps(stats))
    for f in FAILURES:
        print("FAIL:", f, file=sys.stderr)
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
