#!/usr/bin/env bash
# The README's main command: installs what is missing, builds the proctor executable (only it:
# no tests or benchmarks; ninja's progress on stderr), and runs proctor's main job on an embedded
# default (no downloads). scripts/build.sh and scripts/test.sh build everything.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --demo >&2
build_dir=${PROCTOR_BUILD_DIR:-build}
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
if [[ ! -f "$build_dir/CMakeCache.txt" ]]; then
  # A first configure: tests and benchmarks only where their packages are installed
  # (scripts/build.sh turns them on, and scripts/test.sh installs what they need).
  have() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
  tests=OFF bench=OFF
  have libgtest-dev && have libgmock-dev && tests=ON
  have libbenchmark-dev && bench=ON
  # Precompiled headers: this first build is the one they speed up (CMakeLists.txt says why
  # scripts/build.sh leaves them off).
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPROCTOR_TESTS=$tests \
    -DPROCTOR_BENCH=$bench -DPROCTOR_PCH=ON >/dev/null
fi
echo "demo.sh: building the proctor executable ($(nproc) jobs)" >&2
cmake --build "$build_dir" --target proctor -j "$(nproc)" >&2
exec "$build_dir/proctor" demo "$@"
