#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) into ./build-fuzz and runs each one for
# PROCTOR_FUZZ_SECONDS seconds (default 20). A crash fails the script. The targets that read text
# (templates, messages JSON, tokenizer.json) take inputs up to 1 MiB, deep enough to reach the
# nesting and size bounds; each run reports its executions and its corpus size.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${PROCTOR_FUZZ_SECONDS:-20}
# The targets carry debug info, and ccache then hashes the build directory too by default:
# without this a fresh clone (CI) never hits what another clone compiled.
export CCACHE_NOHASHDIR=1
if [[ ! -f fuzz/CMakeLists.txt ]]; then
  echo "fuzz: no fuzz targets yet"
  exit 0
fi
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPROCTOR_FUZZ=ON -DPROCTOR_BENCH=OFF -DPROCTOR_WERROR=OFF >/dev/null
cmake --build build-fuzz -j "$(nproc)" --target fuzz_all
for target in build-fuzz/fuzz/fuzz_*; do
  [[ -x "$target" && ! -d "$target" ]] || continue
  name=$(basename "$target")
  corpus="build-fuzz/corpus/$name"
  mkdir -p "$corpus"
  seeds="fuzz/seeds/${name#fuzz_}"
  echo "fuzz: $name for ${seconds}s"
  dirs=("$corpus")
  [[ -d "$seeds" ]] && dirs+=("$seeds")
  options=(-max_total_time="$seconds" -rss_limit_mb=4096 -print_final_stats=1
    -artifact_prefix="build-fuzz/$name-")
  case "$name" in
    fuzz_jinja | fuzz_chat_messages | fuzz_tokenizer) options+=(-max_len=1048576) ;;
  esac
  # The synthetic tokenizers of the tests seed the tokenizer target.
  [[ "$name" == fuzz_tokenizer ]] && dirs+=(testdata/tokenizer/synthetic)
  log="build-fuzz/$name.log"
  if ! "$target" "${options[@]}" "${dirs[@]}" >"$log" 2>&1; then
    tail -40 "$log" >&2
    echo "fuzz: $name found a crash (log: $log)" >&2
    exit 1
  fi
  executions=$(grep -oE "stat::number_of_executed_units: [0-9]+" "$log" | grep -oE "[0-9]+$" || echo "?")
  echo "fuzz: $name ran $executions inputs; corpus $(find "$corpus" -type f | wc -l) files"
done
