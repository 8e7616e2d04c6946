#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, runs the whole suite with ctest,
# then runs each libFuzzer target briefly (clang build in ./build-fuzz).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
build_dir=${PROCTOR_BUILD_DIR:-build}
(cd "$build_dir" && ctest --output-on-failure -j "$(nproc)" --timeout 900)
bash scripts/fuzz.sh
