#!/usr/bin/env bash
# Tests of tools/oracle/setup.sh's tokenizers part and its argument check, on a copy of one real
# tokenizer folder (llama2) in a temporary fixtures tree and cache: a file whose sha256 differs
# from SOURCES.md is refused with the file named; the intact copy is decompressed and reused; an
# unknown part is refused before anything is made. Run by ctest (OracleSetup.*).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
fixtures=${PROCTOR_FIXTURES:-$here/../../../shared/fixtures}
if [[ ! -f "$fixtures/tokenizers/llama2/tokenizer.json.xz" ]]; then
  printf 'setup_test.sh: Skipped\nfixture absent: %s\n' "$fixtures/tokenizers/llama2"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
expect() {  # expect NAME CONDITION...
  local name=$1
  shift
  if "$@"; then echo "ok: $name"; else echo "FAILED: $name"; failures=$((failures + 1)); fi
}

mkdir -p "$work/fixtures/tokenizers/llama2"
grep -E '^\| (folder|---|llama2/)' "$fixtures/tokenizers/SOURCES.md" >"$work/fixtures/tokenizers/SOURCES.md"
cp "$fixtures/tokenizers/llama2/"* "$work/fixtures/tokenizers/llama2/"
chmod u+w "$work/fixtures/tokenizers/llama2/"*
run() {
  PROCTOR_FIXTURES=$work/fixtures PROCTOR_ORACLE_CACHE=$work/cache \
    bash "$here/setup.sh" "$@" >"$work/out" 2>"$work/err"
}

echo ' ' >>"$work/fixtures/tokenizers/llama2/tokenizer_config.json"
run tokenizers
status=$?
expect "a changed tokenizer_config.json is refused" test "$status" -eq 1
expect "the refusal names the file" grep -q 'llama2/tokenizer_config.json sha256 differs' "$work/err"
expect "nothing is left as installed" test ! -e "$work/cache/tokenizers/llama2"

cp "$fixtures/tokenizers/llama2/tokenizer_config.json" "$work/fixtures/tokenizers/llama2/"
run tokenizers
status=$?
expect "the intact copy installs" test "$status" -eq 0
expect "it prints where" grep -qx "tokenizers=$work/cache/tokenizers" "$work/out"
want=$(grep -E '^\| llama2/' "$work/fixtures/tokenizers/SOURCES.md" | cut -d'|' -f5 | tr -d ' `')
got=$(sha256sum "$work/cache/tokenizers/llama2/tokenizer.json" | cut -d' ' -f1)
expect "the decompressed tokenizer.json has the SOURCES.md sha256" test "$got" == "$want"
touch -d '2000-01-01' "$work/cache/tokenizers/llama2/tokenizer.json"
run tokenizers
expect "a second run reuses it" test "$(stat -c %Y "$work/cache/tokenizers/llama2/tokenizer.json")" \
  == "$(date -d '2000-01-01' +%s)"

run tokenizers nonsense
status=$?
expect "an unknown part is refused" test "$status" -eq 2
expect "the refusal names the part" grep -q "unknown part 'nonsense'" "$work/err"

echo "$failures failed"
((failures == 0))
