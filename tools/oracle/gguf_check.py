#!/usr/bin/env python3
"""Oracle helper for the GGUF-from-safetensors tests: reads GGUF files with llama.cpp's own
gguf-py (the llama-cpp-python sdist's vendor/llama.cpp/gguf-py, passed as GGUF_PY) and
tokenizes with Hugging Face's tokenizers, so nothing of proctor's reader or tokenizer is used.

usage:
  gguf_check.py compare GGUF_PY A.gguf B.gguf OUT.json [--ignore KEY,KEY...]
      {"keys_a": [...], "keys_b": [...]           metadata keys in file order (ignored ones out),
       "differing_keys": [...]                      keys in both whose type or value differ,
       "tensors_a": [...], "tensors_b": [...]       tensor names in file order,
       "differing_tensors": [...]                   names in both whose type, shape or bytes differ}
  gguf_check.py tokenize LLAMA_CPP_TOKENIZE MODEL.gguf TOKENIZER_JSON INPUTS_JSON OUT.json
      llama.cpp's tokenizer on MODEL.gguf (tools/llama_cpp_tokenize.c: specials parsed, no BOS)
      against tokenizers.Tokenizer(TOKENIZER_JSON).encode(text, add_special_tokens=False):
      {"inputs": n, "mismatches": [{"index", "text", "llama_cpp", "hf"}]}
"""
import json
import os
import sys


def compare(gguf_py, path_a, path_b, out, ignore):
    sys.path.insert(0, gguf_py)
    import gguf  # noqa: E402  (llama.cpp's own reader)

    a, b = gguf.GGUFReader(path_a), gguf.GGUFReader(path_b)

    def keys(reader):
        return [k for k in reader.fields if not k.startswith("GGUF.") and k not in ignore]

    def value(field):
        return [int(t) for t in field.types], field.contents()

    differing = [k for k in keys(a) if k in b.fields and value(a.fields[k]) != value(b.fields[k])]
    tensors_b = {t.name: t for t in b.tensors}
    differing_tensors = []
    for t in a.tensors:
        u = tensors_b.get(t.name)
        if u is None:
            continue
        if (t.tensor_type != u.tensor_type or list(t.shape) != list(u.shape)
                or t.data.tobytes() != u.data.tobytes()):
            differing_tensors.append(t.name)
    result = {"keys_a": keys(a), "keys_b": keys(b), "differing_keys": differing,
              "tensors_a": [t.name for t in a.tensors], "tensors_b": [t.name for t in b.tensors],
              "differing_tensors": differing_tensors}
    with open(out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)


def tokenize(tool, model, tokenizer_json, inputs_json, out):
    # tools/corpus_oracle.py drives llama_cpp_tokenize and HF tokenizers the same way.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from corpus_oracle import hf_encode, llama_cpp_encode  # noqa: E402

    with open(inputs_json, encoding="utf-8") as f:
        inputs = json.load(f)
    got, _, _ = llama_cpp_encode(tool, model, inputs)
    want, _ = hf_encode(tokenizer_json, inputs)
    mismatches = [{"index": i, "text": text, "llama_cpp": got[i], "hf": want[i]}
                  for i, text in enumerate(inputs) if got[i] != want[i]]
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"inputs": len(inputs), "mismatches": mismatches}, f, indent=1)


def main():
    if len(sys.argv) >= 6 and sys.argv[1] == "compare":
        ignore = set()
        if len(sys.argv) == 8 and sys.argv[6] == "--ignore":
            ignore = set(sys.argv[7].split(","))
        compare(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], ignore)
    elif len(sys.argv) == 7 and sys.argv[1] == "tokenize":
        tokenize(*sys.argv[2:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
