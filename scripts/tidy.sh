#!/usr/bin/env bash
# clang-tidy (.clang-tidy: bugprone-*, performance-*; warnings are errors) on the C++ sources
# (.cc) that differ from BASE, with the compile commands of the build directory.
#   usage: scripts/tidy.sh [BASE]     BASE default: the commit in .ci/tidy-base, the last one whose
#                                     whole tree passed (scripts/tidy.sh --all checks everything)
# Needs a configured build (scripts/build.sh writes build/compile_commands.json).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${PROCTOR_BUILD_DIR:-build}
[[ -f "$build_dir/compile_commands.json" ]] ||
  { echo "tidy: no $build_dir/compile_commands.json (run scripts/build.sh first)" >&2; exit 1; }
command -v clang-tidy >/dev/null || { echo "tidy: clang-tidy is missing" >&2; exit 1; }
if [[ "${1:-}" == --all ]]; then
  mapfile -t files < <(git ls-files 'src/*.cc' 'bench/*.cc')
  what="every source"
else
  base=${1:-$(tr -d '[:space:]' < .ci/tidy-base)}
  git rev-parse --verify --quiet "$base^{commit}" >/dev/null ||
    { echo "tidy: base '$base' is not a commit of this repository" >&2; exit 1; }
  mapfile -t files < <(git diff --name-only --diff-filter=AMR "$base" -- 'src/*.cc' 'bench/*.cc')
  what="the sources changed since ${base:0:12}"
fi
# Fuzz targets are built by clang with -fsanitize=fuzzer only (scripts/fuzz.sh): not in the build.
mapfile -t files < <(printf '%s\n' "${files[@]}" | grep -v '_fuzz\.cc$' | grep -v '^$' || true)
if ((${#files[@]} == 0)); then
  echo "tidy: nothing to check ($what)"
  exit 0
fi
echo "tidy: clang-tidy on ${#files[@]} file(s) ($what)"
# The build's compile commands without its precompiled headers: clang cannot read GCC's .gch.
tidy_db=$(mktemp -d)
trap 'rm -rf "$tidy_db"' EXIT
/usr/bin/python3 - "$build_dir/compile_commands.json" "$tidy_db/compile_commands.json" <<'PY'
import json, re, sys
commands = json.load(open(sys.argv[1]))
for entry in commands:
    entry["command"] = re.sub(r" -include \S*cmake_pch\.hxx", "", entry["command"])
    entry["command"] = entry["command"].replace(" -Winvalid-pch", "")
json.dump(commands, open(sys.argv[2], "w"))
PY
# -Wshadow=local is GCC's spelling; clang-tidy's clang would warn about it.
if ! run-clang-tidy -quiet -p "$tidy_db" -j "$(nproc)" -extra-arg=-Wno-unknown-warning-option \
    "${files[@]/#/$PWD/}" >"$build_dir/tidy.log" 2>&1; then
  grep -E "(warning|error):" "$build_dir/tidy.log" | sort -u | head -50 >&2
  echo "tidy: clang-tidy found problems (full log: $build_dir/tidy.log)" >&2
  exit 1
fi
echo "tidy: clean"
