#!/usr/bin/env python3
"""Oracle for the forward-pass tests: Hugging Face transformers' own modeling code (PyPI
transformers + torch, pinned in tools/oracle/requirements.txt, run on the CPU) builds tiny random
models of any config, saves them and records what they compute.

usage: hf_model.py CASES_JSON OUT_DIR
  CASES_JSON: [{"name": str, "model_type": "llama" | "qwen3" | ..., "config": {...},
                "dtype": "float32" | "bfloat16" | "float16", "seed": int,
                "prompt_len": int, "greedy_len": int}, ...]
  "config" holds the config class's keyword arguments (HF v5 spelling: rope_parameters, ...).

Each case becomes OUT_DIR/<name>/ in the layout of ../shared/fixtures/hf-goldens:
  config.json, model.safetensors   HF save_pretrained (weights in the storage dtype)
  tokens.json                      {"prompt": [...], "greedy": [...]}
  logits.f32                       [prompt_len, vocab] one full forward, no cache
  greedy_logits.f32                [greedy_len, vocab] logits of each greedy step (KV-cache decode)
  hidden_states.f32                [layers + 1, prompt_len, hidden] output_hidden_states
and OUT_DIR/versions.json records torch and transformers versions.

Weights ("wide" init, as the hf-goldens fixtures): embeddings N(0, 1), matrices N(0, 1/fan_in),
1-D parameters HF's init plus N(0, 0.1^2), under torch.manual_seed(seed); then rounded to the
storage dtype, so the logits are f32 compute on exactly the bytes in the file (compute f32,
eager attention, one thread). Prompt: token 1, then numpy default_rng(seed).integers(0, vocab).
Greedy: prefill the prompt with HF's cache, then one token per forward; argmax with the lowest
index winning ties; EOS does not stop.
"""
import json
import os
import sys

import numpy as np
import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def wide_init(model: torch.nn.Module, seed: int) -> None:
    generator = torch.Generator().manual_seed(seed)
    embed = model.get_input_embeddings().weight
    with torch.no_grad():
        for name, param in model.named_parameters():
            if param is embed:
                param.copy_(torch.randn(param.shape, generator=generator))
            elif param.dim() == 2:
                param.copy_(torch.randn(param.shape, generator=generator) / param.shape[1] ** 0.5)
            else:
                param.add_(0.1 * torch.randn(param.shape, generator=generator))


def argmax_lowest(row: np.ndarray) -> int:
    return int(np.argmax(row))  # numpy returns the first (lowest) index of the maximum


def build_case(case: dict, out_dir: str) -> dict:
    name = case["name"]
    dtype = DTYPES[case.get("dtype", "float32")]
    seed = int(case.get("seed", 1))
    config = AutoConfig.for_model(case["model_type"], **case.get("config", {}))
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, attn_implementation="eager",
                                             dtype=torch.float32)
    wide_init(model, seed)
    with torch.no_grad():  # round to the storage dtype, compute in f32 on the rounded values
        for param in model.parameters():
            param.copy_(param.to(dtype).to(torch.float32))
    model.eval()

    vocab = config.vocab_size
    rng = np.random.default_rng(seed)
    prompt = [1] + [int(t) for t in rng.integers(0, vocab, size=case["prompt_len"] - 1)]
    ids = torch.tensor([prompt])
    with torch.no_grad():
        full = model(ids, use_cache=False, output_hidden_states=True)
        logits = full.logits[0].float().numpy()
        hidden = torch.stack([h[0] for h in full.hidden_states]).float().numpy()

        greedy, steps = [], []
        out = model(ids, use_cache=True)
        cache = out.past_key_values
        row = out.logits[0, -1].float().numpy()
        for _ in range(case.get("greedy_len", 16)):
            token = argmax_lowest(row)
            greedy.append(token)
            steps.append(row)
            out = model(torch.tensor([[token]]), past_key_values=cache, use_cache=True)
            cache = out.past_key_values
            row = out.logits[0, -1].float().numpy()

    case_dir = os.path.join(out_dir, name)
    os.makedirs(case_dir, exist_ok=True)
    model.to(dtype)
    model.config.dtype = dtype
    model.save_pretrained(case_dir, safe_serialization=True)
    with open(os.path.join(case_dir, "tokens.json"), "w") as f:
        json.dump({"prompt": prompt, "greedy": greedy}, f)
    logits.astype("<f4").tofile(os.path.join(case_dir, "logits.f32"))
    np.stack(steps).astype("<f4").tofile(os.path.join(case_dir, "greedy_logits.f32"))
    hidden.astype("<f4").tofile(os.path.join(case_dir, "hidden_states.f32"))
    top2 = np.sort(np.stack(steps), axis=1)[:, -2:]
    return {"name": name, "greedy_min_margin": float((top2[:, 1] - top2[:, 0]).min())}


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    cases_path, out_dir = sys.argv[1:]
    with open(cases_path) as f:
        cases = json.load(f)
    torch.set_num_threads(1)
    os.makedirs(out_dir, exist_ok=True)
    built = [build_case(case, out_dir) for case in cases]
    with open(os.path.join(out_dir, "versions.json"), "w") as f:
        json.dump({"torch": torch.__version__, "transformers": transformers.__version__,
                   "cases": built}, f, indent=1)
    print(json.dumps({"torch": torch.__version__, "transformers": transformers.__version__,
                      "cases": built}))


if __name__ == "__main__":
    main()
