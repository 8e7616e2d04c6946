#!/usr/bin/env python3
"""Oracle for the tokenizer tests: Hugging Face's `tokenizers` (the Rust library, PyPI, pinned in
tools/oracle/requirements.txt) encodes and decodes every input of a JSON array and writes the
results as JSON.

usage: hf_tokenize.py TOKENIZER_JSON INPUTS_JSON OUTPUT_JSON [--bench]
  output: {"cases": [{"ids": [...] (no special tokens), "ids_special": [...],
                      "decoded": decode(ids, False), "decoded_skip": decode(ids_special, True)}],
           "load_seconds": s, "encode_seconds": s (sequential encode of all inputs, no special),
           "version": tokenizers.__version__}
--bench keeps only "ids" per case. Run with RAYON_NUM_THREADS=1 for a one-thread timing.
"""
import json
import sys
import time

import tokenizers


def main() -> None:
    tokenizer_json, inputs_json, output_json, *flags = sys.argv[1:]
    with open(inputs_json, encoding="utf-8") as f:
        inputs = json.load(f)
    bench = "--bench" in flags
    t0 = time.perf_counter()
    tok = tokenizers.Tokenizer.from_file(tokenizer_json)
    load_seconds = time.perf_counter() - t0

    # Timed pass: sequential single encodes.
    t0 = time.perf_counter()
    plain = [tok.encode(text, add_special_tokens=False).ids for text in inputs]
    encode_seconds = time.perf_counter() - t0
    cases = []
    for text, ids in zip(inputs, plain):
        if bench:
            cases.append({"ids": ids})
            continue
        special = tok.encode(text, add_special_tokens=True).ids
        cases.append({
            "ids": ids,
            "ids_special": special,
            "decoded": tok.decode(ids, skip_special_tokens=False),
            "decoded_skip": tok.decode(special, skip_special_tokens=True),
        })
    with open(output_json, "w", encoding="utf-8") as f:
        json.dump({"cases": cases, "load_seconds": load_seconds, "encode_seconds": encode_seconds,
                   "version": tokenizers.__version__}, f, ensure_ascii=False)


if __name__ == "__main__":
    main()
