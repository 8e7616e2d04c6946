#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, runs the whole suite with ctest,
# then runs each libFuzzer target briefly (clang build in ./build-fuzz).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
build_dir=${PROCTOR_BUILD_DIR:-build}
log="$build_dir/ctest-summary.log"
(cd "$build_dir" && ctest --output-on-failure -j "$(nproc)" --timeout 900) | tee "$log"
bash scripts/fuzz.sh
# One closing line for whoever reads the end of the output (ctest's own summary is above).
total=$(sed -nE 's/.* tests failed out of ([0-9]+).*/\1/p' "$log" | tail -1)
failed=$(sed -nE 's/.*, ([0-9]+) tests failed out of.*/\1/p' "$log" | tail -1)
echo "tests: $((total - failed)) passed, ${failed} failed"
