#!/bin/bash
# Peak memory of the saved-teacher loop at a long context (docs/statistics.md, "Long contexts"):
# a random 2-layer Llama with Qwen3's 151,936-token vocabulary and tokenizer
# (tools/write_random_llama.py), one WikiText-2 sequence of CTX tokens (default 32768), then
# `proctor dump` (top-k 2048) and `proctor kl --where` of its 4-bit MLX quantization, each under
# /usr/bin/time. Prints each step's peak RSS beside the bound weights + KV cache + two chunks of
# logits + 100 MB, and the size of llama.cpp's base file for the same run (2 bytes x vocab per
# position). A benchmark: it prints numbers and asserts nothing.
#
# usage: bench/long_context_memory.sh [CTX]     (needs build/proctor and ../shared/fixtures)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
proctor=$root/build/proctor
fixtures=${PROCTOR_FIXTURES:-$root/../shared/fixtures}
ctx=${1:-32768}
chunk=512
vocab=151936
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

/usr/bin/python3 "$root/tools/write_random_llama.py" "$work/model" --hidden 64 --layers 2 \
  --ff 128 --vocab $vocab --heads 4 --kv-heads 2 >/dev/null
sed -i "s/\"max_position_embeddings\": [0-9]*/\"max_position_embeddings\": $ctx/" \
  "$work/model/config.json"
xz -dc "$fixtures/tokenizers/qwen3/tokenizer.json.xz" >"$work/model/tokenizer.json"
cp "$fixtures/tokenizers/qwen3/tokenizer_config.json" "$work/model/"
"$proctor" --quiet corpus --tokenizer "$work/model" --out "$work/corpus" --ctx-len "$ctx" \
  --n-seqs 1 "$fixtures/wikitext-2/wiki.test.raw" >/dev/null
"$proctor" --quiet quantize "$work/model" --out "$work/q4" --bits 4 >/dev/null

# Bytes: weights (the files' tensors), the f32 KV cache (layers x ctx x kv heads x head dim x
# K and V x 4), one chunk of f32 logits.
kv=$((2 * ctx * 2 * 16 * 2 * 4))
logits_chunk=$((chunk * vocab * 4))
report() {  # step, peak KB, weight bytes
  awk -v step="$1" -v kb="$2" -v w="$3" -v kv=$kv -v chunk=$logits_chunk 'BEGIN {
    mb = 1048576
    printf "%-5s peak RSS %7.1f MB; bound %7.1f MB (weights %.1f + KV cache %.1f + two chunks %.1f + 100)\n",
      step, kb / 1024, (w + kv + 2 * chunk) / mb + 100, w / mb, kv / mb, 2 * chunk / mb }'
}
/usr/bin/time -f %M -o "$work/dump.rss" "$proctor" --quiet dump --teacher "$work/model" \
  --corpus "$work/corpus" --out "$work/dump" --chunk $chunk >/dev/null
/usr/bin/time -f %M -o "$work/kl.rss" "$proctor" --quiet kl --reference-logits "$work/dump" \
  --model "$work/q4" --chunk $chunk --where >/dev/null
echo "ctx_len $ctx, vocabulary $vocab, top-k 2048, chunk $chunk, $(nproc) threads, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
report dump "$(tail -1 "$work/dump.rss")" "$(stat -c %s "$work/model/model.safetensors")"
report kl "$(tail -1 "$work/kl.rss")" "$(du -cb "$work"/q4/*.safetensors | tail -1 | cut -f1)"
positions=$((ctx - 1))
awk -v dump="$(du -cb "$work"/dump/* | tail -1 | cut -f1)" -v base=$((positions * vocab * 2)) \
  'BEGIN { printf "dump on disk %.1f MB; llama.cpp base file for the same run %.1f MB (2 bytes x vocab per position)\n", dump / 1048576, base / 1048576 }'
