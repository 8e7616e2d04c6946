#!/usr/bin/env python3
"""Independent reimplementation of `proctor corpus` (and of the token stream `proctor ppl` packs)
for src/eval/corpus_builder_test.cc: the expected tokens.bin from other people's code.

  rows      read here from the input files: a .jsonl file is one row per non-blank line
            ({"text"}, {"messages"}, {"prompt", "chosen"|"completion"}); any other file is one
            row (its whole text, line ends kept);
  order     mulberry32 Fisher-Yates (FORMATS.md section 5), checked at start-up against the
            golden sampleIndices values written in FORMATS.md;
  chat      rendered by Python Jinja2 the way transformers does (tools/chat_template_oracle.py:
            add_generation_prompt False, enable_thinking False, the row's tools, the special
            tokens of tokenizer_config.json), then encoded without special tokens;
  text      ids with special tokens (BOS as the tokenizer adds it) plus EOS unless the ids end
            with it (mlx_lm's TextDataset.process); "" rows are skipped;
  ids       from Hugging Face `tokenizers` (the Python package of the oracle environment,
            tools/oracle/setup.sh) for a tokenizer.json folder, or from llama.cpp
            (tools/llama_cpp_tokenize.c, path given by --llama-cpp-tokenize) for a GGUF
            vocabulary (BOS added when --add-bos);
  stream    rows concatenated in order, taken until the stream holds ctx_len * n_seqs tokens;
            the first ctx_len * n_seqs become tokens.bin.

Usage:
  corpus_oracle.py (--hf-dir TOKENIZER_DIR | --gguf FILE --llama-cpp-tokenize TOOL [--add-bos])
      --config L:N:SEED [--config ...] --out-dir DIR INPUT...
For each config (N = "max": as many sequences as the whole stream fills) writes
DIR/expected_L_N_SEED.bin (int32 little-endian tokens) and one DIR/expected.json:
{"rows_total", "stream_tokens" (every row), "configs": [{ctx_len, n_seqs, seed, rows_used,
"tokens_tokenized", file}]}. Token ids do not depend on the order, so rows are tokenized once.
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chat_template_oracle  # noqa: E402  (transformers' Jinja environment)

TOOLS = os.path.dirname(os.path.abspath(__file__))
MASK = 0xFFFFFFFF
# FORMATS.md section 5 golden values.
GOLDEN_1319_50_42 = [2, 91, 134, 174, 202, 214, 231, 237, 256, 258, 281, 306, 311, 316, 334,
                     341, 342, 369, 381, 386, 395, 461, 548, 565, 591, 594, 621, 650, 657, 714,
                     721, 736, 761, 766, 797, 807, 812, 858, 868, 930, 935, 957, 1077, 1098,
                     1140, 1150, 1182, 1255, 1305, 1313]


def mulberry32(seed):
    state = seed & MASK

    def draw():
        nonlocal state
        state = (state + 0x6D2B79F5) & MASK
        t = state
        t = ((t ^ (t >> 15)) * (t | 1)) & MASK
        t ^= (t + (((t ^ (t >> 7)) * (t | 61)) & MASK)) & MASK
        return ((t ^ (t >> 14)) & MASK) / 4294967296.0

    return draw


def shuffled(total, seed):
    perm = list(range(total))
    rand = mulberry32(seed)
    for i in range(total - 1, 0, -1):
        j = int(rand() * (i + 1))
        perm[i], perm[j] = perm[j], perm[i]
    return perm


def check_sampler():
    got = sorted(shuffled(1319, 42)[:50])
    if got != GOLDEN_1319_50_42 or sorted(shuffled(5, 42)[:50]) != [0, 1, 2, 3, 4]:
        sys.exit("corpus_oracle: mulberry32 does not reproduce the FORMATS.md golden values")


def pair_messages(prompt, answer):
    messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else list(prompt)
    if isinstance(answer, str):
        messages.append({"role": "assistant", "content": answer})
    else:
        messages.extend(answer)
    return messages


def read_rows(paths):
    rows = []
    for path in paths:
        with open(path, encoding="utf-8", newline="") as f:
            text = f.read()
        if not path.endswith(".jsonl"):
            rows.append({"kind": "text", "text": text})
            continue
        for line in text.split("\n"):
            if line.strip(" \t\r\n") == "":
                continue
            obj = json.loads(line)
            if "text" in obj:
                rows.append({"kind": "text", "text": obj["text"]})
                continue
            if "messages" in obj:
                messages = obj["messages"]
            elif "prompt" in obj and "chosen" in obj:
                messages = pair_messages(obj["prompt"], obj["chosen"])
            else:
                messages = pair_messages(obj["prompt"], obj["completion"])
            rows.append({"kind": "chat", "messages": messages, "tools": obj.get("tools")})
    return rows


def hf_encode(tokenizer_json, texts):
    """(ids without special tokens, ids with them) per text, from Hugging Face tokenizers."""
    import tokenizers
    tok = tokenizers.Tokenizer.from_file(tokenizer_json)
    return ([tok.encode(t, add_special_tokens=False).ids for t in texts],
            [tok.encode(t, add_special_tokens=True).ids for t in texts])


def llama_cpp_encode(tool, gguf, texts):
    """(ids per text, bos, eos) from llama.cpp's tokenizer (specials parsed, no BOS added)."""
    with tempfile.TemporaryDirectory() as tmp:
        inp, out = os.path.join(tmp, "inputs"), os.path.join(tmp, "ids")
        with open(inp, "wb") as f:
            for text in texts:
                data = text.encode("utf-8")
                f.write(b"%d\n" % len(data) + data)
        subprocess.run([tool, gguf, inp, out], check=True)
        with open(out, encoding="utf-8") as f:
            lines = f.read().split("\n")
    bos, eos = int(lines[0].split()[1]), int(lines[1].split()[1])
    ids = [[int(x) for x in line.split()] for line in lines[2:2 + len(texts)]]
    return ids, (None if bos < 0 else bos), (None if eos < 0 else eos)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hf-dir")
    parser.add_argument("--gguf")
    parser.add_argument("--llama-cpp-tokenize", help="tools/llama_cpp_tokenize.c built")
    parser.add_argument("--add-bos", action="store_true")
    parser.add_argument("--config", action="append", required=True, help="L:N:SEED")
    parser.add_argument("--out-dir", required=True)
    parser.add_argument("inputs", nargs="+")
    args = parser.parse_args()
    check_sampler()

    rows = read_rows(args.inputs)
    texts = []  # what gets encoded, per row in file order
    for row in rows:
        if row["kind"] == "text":
            texts.append(row["text"])
            continue
        with open(os.path.join(args.hf_dir, "tokenizer_config.json"), encoding="utf-8") as f:
            config = json.load(f)
        source = chat_template_oracle.template_from_config(config, row["tools"] is not None)
        special = chat_template_oracle.special_tokens_from_config(config)
        texts.append(chat_template_oracle.compile_template(source).render(
            messages=row["messages"], tools=row["tools"], documents=None,
            add_generation_prompt=False, enable_thinking=False, **special))

    if args.hf_dir:
        with open(os.path.join(args.hf_dir, "tokenizer_config.json"), encoding="utf-8") as f:
            eos_text = chat_template_oracle.token_text(json.load(f).get("eos_token"))
        plain, special = hf_encode(os.path.join(args.hf_dir, "tokenizer.json"),
                                   texts + [eos_text])
        eos_ids = plain.pop()
        special.pop()
        assert len(eos_ids) == 1, "eos_token must be one token"
        eos = eos_ids[0]
    else:
        plain, bos_id, eos = llama_cpp_encode(args.llama_cpp_tokenize, args.gguf, texts)
        bos = [bos_id] if args.add_bos else []
        special = [bos + ids for ids in plain]

    def row_tokens(index):
        row = rows[index]
        if row["kind"] == "chat":
            return plain[index]
        if row["text"] == "":
            return []
        ids = list(special[index])
        if eos is not None and (not ids or ids[-1] != eos):
            ids.append(eos)
        return ids

    stream_tokens = sum(len(row_tokens(i)) for i in range(len(rows)))
    out = {"rows_total": len(rows), "stream_tokens": stream_tokens, "configs": []}
    for spec in args.config:
        ctx_len, n_seqs, seed = spec.split(":")
        ctx_len, seed = int(ctx_len), int(seed)
        n_seqs = stream_tokens // ctx_len if n_seqs == "max" else int(n_seqs)
        needed = ctx_len * n_seqs
        stream, used = [], 0
        for index in shuffled(len(rows), seed):
            if len(stream) >= needed:
                break
            used += 1
            stream.extend(row_tokens(index))
        kept = stream[:needed]
        name = "expected_%d_%d_%d.bin" % (ctx_len, n_seqs, seed)
        with open(os.path.join(args.out_dir, name), "wb") as f:
            f.write(struct.pack("<%di" % len(kept), *kept))
        out["configs"].append({"ctx_len": ctx_len, "n_seqs": n_seqs, "seed": seed,
                               "rows_used": used, "tokens_tokenized": len(stream),
                               "file": name})
    with open(os.path.join(args.out_dir, "expected.json"), "w") as f:
        json.dump(out, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
