#!/usr/bin/env bash
# The README's test command: installs what is missing (Debian packages, then the test oracles of
# tools/oracle/setup.sh, beside the build), checks the house format (scripts/check_format.sh),
# builds, runs the whole suite with ctest, runs clang-tidy on the changed sources
# (scripts/tidy.sh), then runs each libFuzzer target briefly (clang build in ./build-fuzz), and in
# CI times the README's first run (scripts/first_run.sh).
# Prints the time of each phase, the skipped tests by reason, and last the closing line
# "tests: N passed, N failed, N skipped".
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

format_status=0
bash scripts/check_format.sh || format_status=$?
phase_done "format"

mkdir -p "$build_dir"
# The oracle environment installs (mostly downloads) while the project builds; both are waited for
# before ctest, and each is timed on its own.
oracle_log="$build_dir/oracle-setup.log"
(
  oracle_start=$(date +%s)
  status=0
  bash tools/oracle/setup.sh >"$build_dir/oracles.txt" 2>"$oracle_log" || status=$?
  echo "$(($(date +%s) - oracle_start))" >"$build_dir/oracle-setup.seconds"
  exit $status
) &
oracle_pid=$!
trap 'kill "$oracle_pid" 2>/dev/null || true' EXIT

bash scripts/build.sh
phase_done "build"

oracle_status=0
wait "$oracle_pid" || oracle_status=$?
phase_done "oracle wait"
cat "$oracle_log"
if ((oracle_status == 0)); then
  echo "oracles:"
  sed 's/^/  /' "$build_dir/oracles.txt"
  python_versions=$(sed -n 's/^python_versions=//p' "$build_dir/oracles.txt")
  # The pinned names as a pattern (pip freeze spells lm-eval lm_eval).
  pinned=$(grep -vE '^\s*(#|$)' tools/oracle/requirements.txt | sed -E 's/(\[|==).*//; s/[-_]/[-_]/g' |
    tr '\n' '|')
  echo "oracle Python packages: $(grep -iE "^(${pinned%|})==" "$python_versions" | tr '\n' ' ')"
  echo "llama.cpp: the llama-cpp-python 0.3.36 sdist's source"
elif $ci; then
  echo "test: the oracle setup failed (above); in CI every oracle must be installed" >&2
  exit 1
else
  echo "test: the oracle setup failed (above); the oracle tests will skip" >&2
fi
timings+=("$(printf '%-20s %5d s (beside the build)' "oracle environment" \
  "$(cat "$build_dir/oracle-setup.seconds" 2>/dev/null || echo 0)")")

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

tidy_status=0
bash scripts/tidy.sh || tidy_status=$?
phase_done "tidy"

fuzz_status=0
bash scripts/fuzz.sh || fuzz_status=$?
phase_done "fuzz"

# In CI: the README's first run (scripts/demo.sh from an empty build directory, ccache off),
# timed, so the figure the README gives is in every CI log.
first_run_status=0
if $ci; then
  bash scripts/first_run.sh || first_run_status=$?
  phase_done "first run"
fi

phase_start=$start
phase_done "total"
echo "time per phase:"
printf '  %s\n' "${timings[@]}"
((fuzz_status == 0)) || echo "test: a fuzz target failed (above)"
((first_run_status == 0)) || echo "test: the first run (scripts/demo.sh from nothing) failed (above)"
((format_status == 0)) || echo "test: files differ from .clang-format (above)"
((tidy_status == 0)) || echo "test: clang-tidy found problems (above)"
((ctest_status == 0 || report_status != 0)) || echo "test: ctest exited with $ctest_status"
echo "$closing"
((ctest_status == 0 && report_status == 0 && fuzz_status == 0 && format_status == 0 &&
  tidy_status == 0 && first_run_status == 0))
