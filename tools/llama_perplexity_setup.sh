#!/bin/sh
# Builds llama.cpp's own `llama-perplexity` (once per build tree, cached) for the .kld interop
# test: installs the npm packages node-llama-cpp 3.21.1 (whose llama/gitRelease.bundle is the
# llama.cpp source of that release) into BUILD_DIR/llama-perplexity/npm, unless another oracle
# script already installed it in this build tree, clones the bundle and compiles only the
# llama-perplexity target (CPU backend, static libraries, no network, -j2).
# Usage: llama_perplexity_setup.sh SOURCE_DIR BUILD_DIR
# Prints llama-perplexity's path and exits 0, or prints why it is unavailable and exits 3.
# The build is cached outside the build tree, in $PROCTOR_LLAMA_CPP_CACHE, else
# ${XDG_CACHE_HOME:-$HOME/.cache}/proctor/llama-perplexity-3.21.1 (so a fresh clone or a deleted
# build directory does not rebuild it), else BUILD_DIR/llama-perplexity when HOME is unset.
set -u
build=$2
if [ -n "${PROCTOR_LLAMA_CPP_CACHE:-}" ]; then
  dir=$PROCTOR_LLAMA_CPP_CACHE
elif [ -n "${XDG_CACHE_HOME:-}" ] || [ -n "${HOME:-}" ]; then
  dir=${XDG_CACHE_HOME:-$HOME/.cache}/proctor/llama-perplexity-3.21.1
else
  dir=$build/llama-perplexity
fi
mkdir -p "$dir" || exit 3
exec 9>"$dir/lock"
flock 9
bin=$dir/build/bin/llama-perplexity
if [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi
for cmd in git cmake c++; do
  command -v "$cmd" > /dev/null || { echo "$cmd not found"; exit 3; }
done
bundle=
for candidate in "$dir/npm" "$build/ggml-oracle/npm" "$build/oracle-npm" "$build/oracle"; do
  if [ -f "$candidate/node_modules/node-llama-cpp/llama/gitRelease.bundle" ] &&
      grep -q '"version": "3.21.1"' "$candidate/node_modules/node-llama-cpp/package.json"; then
    bundle=$candidate/node_modules/node-llama-cpp/llama/gitRelease.bundle
    break
  fi
done
if [ -z "$bundle" ]; then
  command -v npm > /dev/null || { echo "npm not found"; exit 3; }
  mkdir -p "$dir/npm"
  [ -f "$dir/npm/package.json" ] || echo '{"private": true}' > "$dir/npm/package.json"
  if ! (cd "$dir/npm" && npm i -E --omit=optional --ignore-scripts --no-audit --no-fund \
      node-llama-cpp@3.21.1) > "$dir/npm.log" 2>&1; then
    echo "npm install failed (see $dir/npm.log)"
    exit 3
  fi
  bundle=$dir/npm/node_modules/node-llama-cpp/llama/gitRelease.bundle
fi
if [ ! -f "$dir/src/tools/perplexity/perplexity.cpp" ]; then
  rm -rf "$dir/src"
  git -c advice.detachedHead=false clone -q "$bundle" "$dir/src" > "$dir/git.log" 2>&1 || {
    echo "cannot read the llama.cpp bundle $bundle (see $dir/git.log)"; exit 3; }
fi
generator=
command -v ninja > /dev/null && generator="-G Ninja"
launcher=
command -v ccache > /dev/null &&
  launcher="-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache"
start=$(date +%s)
# shellcheck disable=SC2086
if ! cmake -S "$dir/src" -B "$dir/build" $generator $launcher -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_OPENSSL=OFF \
    -DLLAMA_USE_PREBUILT_UI=OFF -DGGML_OPENMP=OFF -DGGML_BACKEND_DL=OFF \
    > "$dir/build.log" 2>&1; then
  echo "configuring llama.cpp failed (see $dir/build.log)"
  exit 3
fi
if ! cmake --build "$dir/build" -j2 --target llama-perplexity >> "$dir/build.log" 2>&1; then
  echo "building llama-perplexity failed (see $dir/build.log)"
  exit 3
fi
echo "built llama-perplexity in $(($(date +%s) - start)) s" >> "$dir/build.log"
echo "$bin"
