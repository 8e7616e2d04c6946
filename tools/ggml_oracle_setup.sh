#!/bin/sh
# Builds (once per build tree, cached) the ggml oracle used by src/quant tests: installs the npm
# packages node-llama-cpp and @node-llama-cpp/linux-x64 3.21.1 (prebuilt libggml-base.so and
# llama.cpp's source as a git bundle) into BUILD_DIR/ggml-oracle/npm, takes ggml.h from the
# bundle and compiles tools/ggml_oracle.cc against it.
# Usage: ggml_oracle_setup.sh SOURCE_DIR BUILD_DIR
# Prints the oracle's path and exits 0, or prints why it is unavailable and exits 3.
set -u
src=$1
dir=$2/ggml-oracle
mkdir -p "$dir/npm" "$dir/include" || exit 3
exec 9>"$dir/lock"
flock 9
if [ -x "$dir/ggml_oracle" ] && [ "$dir/ggml_oracle" -nt "$src/tools/ggml_oracle.cc" ]; then
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
if [ ! -f "$dir/include/ggml.h" ]; then
  rm -rf "$dir/llama.git"
  git clone -q --bare "$bundle" "$dir/llama.git" > "$dir/git.log" 2>&1 &&
    git --git-dir="$dir/llama.git" show HEAD:ggml/include/ggml.h > "$dir/include/ggml.h.tmp" &&
    mv "$dir/include/ggml.h.tmp" "$dir/include/ggml.h" || { echo "no ggml.h in the bundle"; exit 3; }
  rm -rf "$dir/llama.git"
fi
if ! c++ -std=c++17 -O1 -I"$dir/include" "$src/tools/ggml_oracle.cc" -L"$bins" -lggml-base \
    -Wl,-rpath,"$bins" -o "$dir/ggml_oracle.tmp" > "$dir/build.log" 2>&1; then
  echo "compiling the oracle failed (see $dir/build.log)"
  exit 3
fi
mv "$dir/ggml_oracle.tmp" "$dir/ggml_oracle"
echo "$dir/ggml_oracle"
