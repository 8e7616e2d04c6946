#!/bin/bash
# Items per second of `proctor eval` per task on a synthetic TinyLlama-1.1B (random bf16 weights
# in TinyLlama's shapes, with Llama 2's tokenizer, which TinyLlama uses; no chat template, so the
# chat tasks run their raw-text form) at 1 and 2 threads, and what context reuse saves on mmlu
# and hellaswag (--no-context-reuse). Random weights rarely stop early, so the generation tasks
# run to their token limit: their items/s is a worst case. A benchmark: it prints numbers and
# asserts nothing.
#
# usage: bench/task_eval_speed.sh [N_GENERATE] [N_CHOICE]
#   items per generation task (default 2) and per likelihood task (default 16); needs
#   build/proctor, ../shared/fixtures and bubblewrap (humaneval runs in the sandbox)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
proctor=$root/build/proctor
fixtures=${PROCTOR_FIXTURES:-$root/../shared/fixtures}
n_generate=${1:-2}
n_choice=${2:-16}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/tokenizer"
xz -dc "$fixtures/tokenizers/llama2/tokenizer.json.xz" >"$work/tokenizer/tokenizer.json"
cp "$fixtures/tokenizers/llama2/tokenizer_config.json" "$work/tokenizer/"
model=synthetic:tinyllama-1.1b:bf16

# run TASK N THREADS [EXTRA FLAGS]: prints "items/s seconds"
run() {
  local task=$1 n=$2 threads=$3
  shift 3
  "$proctor" --quiet --threads "$threads" eval "$task" --model "$model" \
    --tokenizer "$work/tokenizer" --n "$n" --data-dir "$fixtures" --no-db \
    --json "$work/out.json" "$@" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; return 1; }
  python3 -c 'import json, sys
t = json.load(open(sys.argv[1]))["results"]["tasks"][0]
print("%.3f %.1f" % (t["n"] / t["seconds"], t["seconds"]))' "$work/out.json"
}

echo "proctor eval on $model ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs)," \
  "$(nproc) cores)"
printf '%-13s %5s %16s %16s\n' task n "1 thread items/s" "2 threads items/s"
for task in mmlu hellaswag arc-easy piqa winogrande gsm8k ifeval hashhop bfcl humaneval; do
  case $task in mmlu | hellaswag | arc-easy | piqa | winogrande) n=$n_choice ;; *) n=$n_generate ;; esac
  read -r one _ < <(run "$task" "$n" 1)
  read -r two _ < <(run "$task" "$n" 2)
  printf '%-13s %5s %16s %16s\n' "$task" "$n" "$one" "$two"
done
echo
echo "context reuse, 2 threads (items/s with it, without it)"
for task in mmlu hellaswag; do
  read -r with _ < <(run "$task" "$n_choice" 2)
  read -r without _ < <(run "$task" "$n_choice" 2 --no-context-reuse)
  printf '%-13s %5s %8s %8s  %.2fx\n' "$task" "$n_choice" "$with" "$without" \
    "$(python3 -c "print($with / $without)")"
done
