#!/bin/sh
# Sets up llama.cpp as a test oracle in DIR (default build/oracle-npm): installs the npm packages
# node-llama-cpp 3.21.1 + @node-llama-cpp/linux-x64 3.21.1 (prebuilt libllama/libggml), clones
# the llama.cpp source bundled with them (for llama.h), and compiles tools/llama_cpp_logits.c.
# Prints two lines: the tool's path and the backend directory. Exits non-zero (with the reason
# on stderr) when npm, git or a compiler is unavailable; tests then skip.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:-build/oracle-npm}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
lib="$dir/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64"
if [ ! -f "$lib/libllama.v0.4.0.so" ]; then
  command -v npm >/dev/null || { echo "npm not found" >&2; exit 1; }
  (cd "$dir" && npm i -E --omit=optional --ignore-scripts --no-audit --no-fund \
      node-llama-cpp@3.21.1 @node-llama-cpp/linux-x64@3.21.1 >&2)
fi
src="$dir/llama-src"
if [ ! -f "$src/include/llama.h" ]; then
  rm -rf "$src"
  git -c advice.detachedHead=false clone -q "$dir/node_modules/node-llama-cpp/llama/gitRelease.bundle" "$src" >&2 2>&1
fi
tool="$dir/llama_cpp_logits"
if [ ! -x "$tool" ] || [ "$here/llama_cpp_logits.c" -nt "$tool" ]; then
  cc -O2 -o "$tool" "$here/llama_cpp_logits.c" -I"$src/include" -I"$src/ggml/include" \
    "$lib/libllama.v0.4.0.so" "$lib/libggml.v0.4.0.so" "$lib/libggml-base.so" \
    -Wl,-rpath,"$lib" >&2
fi
echo "$tool"
echo "$lib"
