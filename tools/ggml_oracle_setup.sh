#!/bin/sh
# Builds (once per build tree, cached) the llama.cpp oracles used by the quant and model tests:
# installs the npm packages node-llama-cpp and @node-llama-cpp/linux-x64 3.21.1 (prebuilt
# libllama / libggml-base and llama.cpp's source as a git bundle) into BUILD_DIR/ggml-oracle/npm,
# takes llama.h and ggml's headers from the bundle and compiles tools/ggml_oracle.cc and
# tools/llama_quantize_oracle.cc against them (both binaries land in BUILD_DIR/ggml-oracle/).
# Usage: ggml_oracle_setup.sh SOURCE_DIR BUILD_DIR
# Prints ggml_oracle's path and exits 0, or prints why it is unavailable and exits 3.
set -u
src=$1
dir=$2/ggml-oracle
mkdir -p "$dir/npm" "$dir/include" || exit 3
exec 9>"$dir/lock"
flock 9
if [ -x "$dir/ggml_oracle" ] && [ "$dir/ggml_oracle" -nt "$src/tools/ggml_oracle.cc" ] &&
    [ -x "$dir/llama_quantize_oracle" ] &&
    [ "$dir/llama_quantize_oracle" -nt "$src/tools/llama_quantize_oracle.cc" ]; then
  echo "$dir/ggml_oracle"
  exit 0
fi
bins=$dir/npm/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
bundle=$dir/npm/node_modules/node-llama-cpp/llama/gitRelease.bundle
if [ ! -f "$bins/libggml-base.so" ] || [ ! -f "$bundle" ]; then
  command -v npm > /dev/null || { echo "npm not found"; exit 3; }
  [ -f "$dir/npm/package.json" ] || echo '{"private": true}' > "$dir/npm/package.json"
  if ! (cd "$dir/npm" && npm i -E --omit=optional --ignore-scripts --no-audit --no-fund \
      node-llama-cpp@3.21.1 @node-llama-cpp/linux-x64@3.21.1) > "$dir/npm.log" 2>&1; then
    echo "npm install failed (see $dir/npm.log)"
    exit 3
  fi
fi
headers="include/llama.h ggml/include/ggml.h ggml/include/ggml-cpu.h ggml/include/ggml-backend.h
  ggml/include/ggml-alloc.h ggml/include/ggml-opt.h ggml/include/gguf.h"
if [ ! -f "$dir/include/llama.h" ]; then
  rm -rf "$dir/llama.git"
  git clone -q --bare "$bundle" "$dir/llama.git" > "$dir/git.log" 2>&1 || {
    echo "cannot read the llama.cpp bundle (see $dir/git.log)"; exit 3; }
  for h in $headers; do
    git --git-dir="$dir/llama.git" show "HEAD:$h" > "$dir/include/$(basename "$h").tmp" || {
      echo "no $h in the bundle"; exit 3; }
  done
  for h in $headers; do mv "$dir/include/$(basename "$h").tmp" "$dir/include/$(basename "$h")"; done
  rm -rf "$dir/llama.git"
fi
if ! c++ -std=c++17 -O1 -I"$dir/include" "$src/tools/ggml_oracle.cc" -L"$bins" -lggml-base \
    -Wl,-rpath,"$bins" -o "$dir/ggml_oracle.tmp" > "$dir/build.log" 2>&1; then
  echo "compiling the oracle failed (see $dir/build.log)"
  exit 3
fi
if ! c++ -std=c++17 -O1 -I"$dir/include" "$src/tools/llama_quantize_oracle.cc" \
    "$bins/libllama.v0.4.0.so" "$bins/libggml-base.so" -Wl,-rpath,"$bins" \
    -o "$dir/llama_quantize_oracle.tmp" >> "$dir/build.log" 2>&1; then
  echo "compiling the llama quantize oracle failed (see $dir/build.log)"
  exit 3
fi
mv "$dir/ggml_oracle.tmp" "$dir/ggml_oracle"
mv "$dir/llama_quantize_oracle.tmp" "$dir/llama_quantize_oracle"
echo "$dir/ggml_oracle"
