#!/usr/bin/env bash
# Configures and builds proctor (Release) into ./build. Extra arguments go to cmake's configure.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${PROCTOR_BUILD_DIR:-build}
# ccache (when installed) keys on paths relative to the checkout, so another clone of the same
# sources on this machine reuses the objects.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
# Tests and benchmarks on, also in a build directory scripts/demo.sh configured without them;
# precompiled headers off, so ccache serves repeat builds (CMakeLists.txt: PROCTOR_PCH).
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPROCTOR_TESTS=ON -DPROCTOR_BENCH=ON \
  -DPROCTOR_PCH=OFF "$@" >/dev/null
cmake --build "$build_dir" -j "$(nproc)"
