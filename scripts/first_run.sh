#!/usr/bin/env bash
# Measures what the README promises for a first run: scripts/demo.sh on a copy of the checked-in
# sources with an empty build directory and ccache off (the packages are taken as installed; their
# download is the one part a machine that has them cannot time). Prints the build and demo times
# and the compile CPU seconds, and the closing line "first run: N s". scripts/test.sh runs it in
# CI, so the figure is in every CI log.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d "${TMPDIR:-/tmp}/proctor-first-run.XXXXXX")
trap 'rm -rf "$work"' EXIT
git ls-files -z | xargs -0 cp --parents -t "$work" 2>/dev/null || {
  echo "first_run: cannot copy the tracked files (not a git checkout?)" >&2
  exit 1
}
cd "$work"
start=$(date +%s.%N)
CCACHE_DISABLE=1 PROCTOR_BUILD_DIR=build bash scripts/demo.sh >demo.out 2>build.err || {
  tail -20 build.err >&2
  exit 1
}
end=$(date +%s.%N)
# Every compile and link step's time, from ninja's log (end - start, milliseconds).
cpu=$(awk -F'\t' 'NR > 1 { s += $2 - $1 } END { printf "%.0f", s / 1000 }' build/.ninja_log)
steps=$(awk 'END { print NR - 1 }' build/.ninja_log)
demo=$(sed -n 's/.*demo finished in \([0-9.]*\) s.*/\1/p' demo.out)
printf 'first run on %s (%d cores): %d build steps (%s s of compiling and linking), demo %s s\n' \
  "$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)" "$(nproc)" "$steps" "$cpu" \
  "${demo:-?}"
awk -v s="$start" -v e="$end" 'BEGIN { printf "first run: %.0f s\n", e - s }'
