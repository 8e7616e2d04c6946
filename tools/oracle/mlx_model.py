#!/usr/bin/env python3
"""Oracle for MLX quantization and mlx-lm models: MLX (`mlx[cpu]`, its Linux CPU build) and
mlx-lm themselves, pinned in tools/oracle/requirements.txt.

usage:
  mlx_model.py source OUT --dtype float32|bfloat16|float16 [--seed 5] [--model-type llama]
      A random Llama-family checkpoint in Hugging Face layout (config.json + model.safetensors)
      whose widths are multiples of 128 (every group size fits), with adversarial rows in every
      matrix: all zeros, constant groups, one large outlier per group, values near the smallest
      normal, huge values. Written with the safetensors package.
  mlx_model.py quantize JOBS_JSON
      JOBS_JSON: [{"source": DIR, "out": DIR, "bits": B, "group_size": G, "mode": M,
                   "recipe": null | "mixed_3_6" | ...}, ...]
      Each job runs mlx-lm's own conversion pieces on the source: utils.load_model,
      utils.quantize_model (with convert.mixed_quant_predicate_builder for a recipe),
      utils.save_model and utils.save_config. That is `mlx_lm.convert` without the tokenizer
      (the test models have none) and without a dtype cast (none is asked for).
  mlx_model.py compare PAIRS_JSON
      PAIRS_JSON: [{"expected": DIR, "actual": DIR}, ...]. Prints a JSON list, one report per
      pair: every tensor of "expected" against "actual" (names, dtype, shape, bytes: mismatches
      name the tensor and count the differing elements) and both config.json "quantization"
      and "quantization_config" objects.
  mlx_model.py logits JOBS_JSON
      JOBS_JSON: [{"model": DIR, "tokens": [ids], "out": F32_FILE}, ...]. mlx-lm's own forward
      (utils.load_model, then model(tokens)) per job; f32 logits [T, vocab]. With "kv_bits",
      "kv_group_size", "kv_start" and "chunk": the tokens run in chunks through one prompt cache
      that mlx-lm quantizes as its generation path does (maybe_quantize_kv_cache after every call).
  mlx_model.py ppl MODEL TOKENS_BIN --ctx-len N [--batch-size 8]
      mlx_lm.perplexity.eval_ppl over int32 rows [n, ctx_len]; prints {"ppl", "se", "tokens"}.
"""
import argparse
import glob
import json
import os
import sys
from pathlib import Path

import numpy as np


def cmd_source(args) -> None:
    from safetensors.numpy import save_file

    rng = np.random.default_rng(args.seed)
    hidden, heads, kv_heads, ff, vocab, layers = 256, 4, 2, 384, 640, 2
    head_dim = hidden // heads
    shapes = {"model.embed_tokens.weight": (vocab, hidden), "lm_head.weight": (vocab, hidden),
              "model.norm.weight": (hidden,)}
    for i in range(layers):
        p = f"model.layers.{i}."
        shapes.update({
            p + "self_attn.q_proj.weight": (heads * head_dim, hidden),
            p + "self_attn.k_proj.weight": (kv_heads * head_dim, hidden),
            p + "self_attn.v_proj.weight": (kv_heads * head_dim, hidden),
            p + "self_attn.o_proj.weight": (hidden, heads * head_dim),
            p + "mlp.gate_proj.weight": (ff, hidden),
            p + "mlp.up_proj.weight": (ff, hidden),
            p + "mlp.down_proj.weight": (hidden, ff),
            p + "input_layernorm.weight": (hidden,),
            p + "post_attention_layernorm.weight": (hidden,),
        })
    tensors = {}
    for name, shape in shapes.items():
        if len(shape) == 1:
            w = 1.0 + 0.1 * rng.standard_normal(shape)
        else:
            scale = 1.0 if "embed" in name else shape[1] ** -0.5
            w = scale * rng.standard_normal(shape)
            cols = shape[1]
            w[0, :] = 0.0                                    # an all-zero row
            w[1, :] = 0.25                                   # constant groups
            w[2, :] = np.repeat(rng.standard_normal(cols // 32), 32)  # constant per 32
            w[3, :: 32] = 40.0 * scale                       # one outlier per group
            w[4, 5:: 64] = -55.0 * scale                     # a negative outlier per 64
            w[5, :] = 1e-6 * rng.standard_normal(cols)       # tiny values
            w[6, :] = np.linspace(-3, 3, cols)               # an exact ramp
            w[7, :16] = 1e4                                  # huge values in the first group
        tensors[name] = w.astype(np.float32)
    dtype = {"float32": np.float32, "float16": np.float16}.get(args.dtype)
    if args.dtype == "bfloat16":
        import mlx.core as mx
        arrays = {k: mx.array(v).astype(mx.bfloat16) for k, v in tensors.items()}
        os.makedirs(args.out, exist_ok=True)
        mx.save_safetensors(os.path.join(args.out, "model.safetensors"), arrays)
    else:
        os.makedirs(args.out, exist_ok=True)
        save_file({k: v.astype(dtype) for k, v in tensors.items()},
                  os.path.join(args.out, "model.safetensors"))
    config = {
        "architectures": ["LlamaForCausalLM"], "model_type": args.model_type,
        "hidden_size": hidden, "intermediate_size": ff, "num_hidden_layers": layers,
        "num_attention_heads": heads, "num_key_value_heads": kv_heads, "head_dim": head_dim,
        "vocab_size": vocab, "max_position_embeddings": 512, "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0, "tie_word_embeddings": False, "hidden_act": "silu",
        "torch_dtype": args.dtype,
    }
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(config, f, indent=1)


def cmd_quantize(args) -> None:
    import importlib

    from mlx_lm import utils

    mlx_convert = importlib.import_module("mlx_lm.convert")  # the package exports a function

    with open(args.jobs) as f:
        jobs = json.load(f)
    for job in jobs:
        model, config = utils.load_model(Path(job["source"]))
        predicate = None
        if job.get("recipe"):
            predicate = mlx_convert.mixed_quant_predicate_builder(job["recipe"], model,
                                                                 job["group_size"])
        model, config = utils.quantize_model(model, config, job["group_size"], job["bits"],
                                             mode=job["mode"], quant_predicate=predicate)
        out = Path(job["out"])
        utils.save_model(out, model)
        utils.save_config(config, config_path=out / "config.json")


def load_dir(path: str) -> dict:
    from safetensors import safe_open

    tensors = {}
    for file in sorted(glob.glob(os.path.join(path, "*.safetensors"))):
        with safe_open(file, framework="numpy") as f:
            for key in f.keys():
                tensors[key] = file
    return tensors


def raw_tensor(file: str, name: str):
    """(dtype, shape, bytes) straight from the safetensors framing (bf16 included)."""
    with open(file, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
        info = header[name]
        begin, end = info["data_offsets"]
        f.seek(8 + n + begin)
        return info["dtype"], info["shape"], f.read(end - begin)


def compare_dirs(expected_dir: str, actual_dir: str) -> dict:
    expected, actual = load_dir(expected_dir), load_dir(actual_dir)
    report = {"expected": expected_dir, "actual": actual_dir, "tensors": len(expected),
              "missing": sorted(set(expected) - set(actual)),
              "extra": sorted(set(actual) - set(expected)), "mismatches": []}
    for name in sorted(set(expected) & set(actual)):
        e = raw_tensor(expected[name], name)
        a = raw_tensor(actual[name], name)
        if e[0] != a[0] or e[1] != a[1]:
            report["mismatches"].append(f"{name}: {e[0]}{e[1]} vs {a[0]}{a[1]}")
        elif e[2] != a[2]:
            width = {"U32": 4, "F32": 4, "F16": 2, "BF16": 2, "U8": 1}.get(e[0], 1)
            ev = np.frombuffer(e[2], dtype=np.uint8).reshape(-1, width)
            av = np.frombuffer(a[2], dtype=np.uint8).reshape(-1, width)
            differ = np.nonzero((ev != av).any(axis=1))[0]
            report["mismatches"].append(
                f"{name}: {len(differ)} of {len(ev)} elements differ, first at element "
                f"{int(differ[0])}")
    for key, path in (("expected", expected_dir), ("actual", actual_dir)):
        with open(os.path.join(path, "config.json")) as f:
            config = json.load(f)
        report[f"quantization_{key}"] = config.get("quantization")
        report[f"quantization_config_{key}"] = config.get("quantization_config")
    return report


def cmd_compare(args) -> None:
    with open(args.pairs) as f:
        pairs = json.load(f)
    print(json.dumps([compare_dirs(p["expected"], p["actual"]) for p in pairs]))


def cmd_logits(args) -> None:
    import mlx.core as mx
    from mlx_lm import utils

    with open(args.jobs) as f:
        jobs = json.load(f)
    for job in jobs:
        model, _ = utils.load_model(Path(job["model"]))
        if "kv_bits" not in job:
            logits = model(mx.array([job["tokens"]])).astype(mx.float32)
            np.array(logits[0]).astype("<f4").tofile(job["out"])
            continue
        # mlx-lm's generation path with a quantized KV cache, teacher-forced: the model is called
        # on consecutive chunks of the tokens with one prompt cache, and after every call
        # generate.maybe_quantize_kv_cache converts each KVCache whose offset reached
        # quantized_kv_start into a QuantizedKVCache (as generate_step does after each prefill
        # chunk and each decode step); attention then goes through
        # models.base.quantized_scaled_dot_product_attention.
        from mlx_lm.generate import maybe_quantize_kv_cache
        from mlx_lm.models.cache import make_prompt_cache

        cache = make_prompt_cache(model)
        tokens, chunk, rows = job["tokens"], job["chunk"], []
        for begin in range(0, len(tokens), chunk):
            logits = model(mx.array([tokens[begin:begin + chunk]]), cache=cache)
            rows.append(np.array(logits[0].astype(mx.float32)))
            maybe_quantize_kv_cache(cache, job["kv_start"], job["kv_group_size"], job["kv_bits"])
        np.concatenate(rows).astype("<f4").tofile(job["out"])


def cmd_ppl(args) -> None:
    import mlx.core as mx
    from mlx_lm import utils
    from mlx_lm.perplexity import eval_ppl

    model, _ = utils.load_model(Path(args.model))
    rows = np.fromfile(args.tokens, dtype="<i4").reshape(-1, args.ctx_len)
    stdout = sys.stdout
    sys.stdout = sys.stderr  # eval_ppl prints progress
    ppl, se = eval_ppl(model, mx.array(rows), batch_size=args.batch_size)
    sys.stdout = stdout
    print(json.dumps({"ppl": ppl, "se": se, "tokens": int(rows.shape[0] * (args.ctx_len - 1))}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("source")
    p.add_argument("out")
    p.add_argument("--dtype", choices=["float32", "bfloat16", "float16"], required=True)
    p.add_argument("--seed", type=int, default=5)
    p.add_argument("--model-type", default="llama")
    p.set_defaults(run=cmd_source)
    p = sub.add_parser("quantize")
    p.add_argument("jobs")
    p.set_defaults(run=cmd_quantize)
    p = sub.add_parser("compare")
    p.add_argument("pairs")
    p.set_defaults(run=cmd_compare)
    p = sub.add_parser("logits")
    p.add_argument("jobs")
    p.set_defaults(run=cmd_logits)
    p = sub.add_parser("ppl")
    p.add_argument("model")
    p.add_argument("tokens")
    p.add_argument("--ctx-len", type=int, required=True)
    p.add_argument("--batch-size", type=int, default=8)
    p.set_defaults(run=cmd_ppl)
    args = ap.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
