#!/usr/bin/env bash
# The house format (.clang-format: Google style, 100 columns) over every C and C++ file git
# tracks: lists the files clang-format would change and exits 1 when there is any. To fix them:
#   git ls-files '*.cc' '*.h' '*.c' | xargs clang-format -i
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "check_format: clang-format is missing" >&2; exit 1; }
bad=()
while IFS= read -r file; do
  clang-format --dry-run --Werror "$file" >/dev/null 2>&1 || bad+=("$file")
done < <(git ls-files '*.cc' '*.h' '*.c')
if ((${#bad[@]})); then
  echo "check_format: ${#bad[@]} file(s) differ from .clang-format ($(clang-format --version)):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "check_format: every C/C++ file follows .clang-format"
