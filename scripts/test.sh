#!/usr/bin/env bash
# The README's test command: installs what is missing (Debian packages, then the test oracles of
# tools/oracle/setup.sh), builds, runs the whole suite with ctest, then runs each libFuzzer target
# briefly (clang build in ./build-fuzz). Prints the time of each phase, the skipped tests by
# reason, and last the closing line "tests: N passed, N failed, N skipped".
# With CI=true a missing oracle fails: the oracle setup must succeed, and a test that skips for
# any reason but the CPU counts as failed (scripts/test_report.py).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${PROCTOR_BUILD_DIR:-build}
ci=false
[[ "${CI:-}" == true || "${CI:-}" == 1 ]] && ci=true

start=$(date +%s)
phase_start=$start
timings=()
phase_done() {
  local now
  now=$(date +%s)
  timings+=("$(printf '%-20s %5d s' "$1" $((now - phase_start)))")
  phase_start=$now
}

bash scripts/install-deps.sh
phase_done "deps"

mkdir -p "$build_dir"
if bash tools/oracle/setup.sh >"$build_dir/oracles.txt"; then
  echo "oracles:"
  sed 's/^/  /' "$build_dir/oracles.txt"
  python_versions=$(sed -n 's/^python_versions=//p' "$build_dir/oracles.txt")
  echo "oracle Python packages: $(grep -iE '^(tokenizers|jinja2|gguf|numpy)==' "$python_versions" |
    tr '\n' ' ')"
  echo "llama.cpp: the llama-cpp-python 0.3.36 sdist's source"
elif $ci; then
  echo "test: the oracle setup failed (above); in CI every oracle must be installed" >&2
  exit 1
else
  echo "test: the oracle setup failed (above); the oracle tests will skip" >&2
fi
phase_done "oracle environment"

bash scripts/build.sh
phase_done "build"

junit="$build_dir/ctest-junit.xml"
rm -f "$junit"
ctest_status=0
(cd "$build_dir" && ctest --output-on-failure -j "$(nproc)" --timeout 900 \
  --output-junit "$(basename "$junit")") || ctest_status=$?
phase_done "ctest"

report_status=0
if [[ -f "$junit" ]]; then
  report=$(/usr/bin/python3 scripts/test_report.py "$junit" $($ci && echo --ci)) || report_status=$?
else
  report=$'test: ctest wrote no results file
tests: 0 passed, 1 failed'
  report_status=1
fi
echo "$report" | sed '$d'
closing=$(echo "$report" | tail -1)

fuzz_status=0
bash scripts/fuzz.sh || fuzz_status=$?
phase_done "fuzz"

phase_start=$start
phase_done "total"
echo "time per phase:"
printf '  %s\n' "${timings[@]}"
((fuzz_status == 0)) || echo "test: a fuzz target failed (above)"
((ctest_status == 0 || report_status != 0)) || echo "test: ctest exited with $ctest_status"
echo "$closing"
((ctest_status == 0 && report_status == 0 && fuzz_status == 0))
