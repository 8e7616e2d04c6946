#!/usr/bin/env python3
"""Oracle: the MMLU prompts lm-evaluation-harness itself builds (its `mmlu_<subject>` task
configs, its ConfigurableTask and its few-shot sampler), over the original Hendrycks CSV files
instead of the Hugging Face dataset (which is not reachable here): each CSV is converted with
Python's csv module to the {question, choices, answer} rows of cais/mmlu and loaded with
datasets' local "json" builder.

usage: lm_eval_mmlu_prompts.py MMLU_DIR SUBJECT:INDEX [SUBJECT:INDEX ...]
Prints a JSON object {"SUBJECT/INDEX": prompt} on stdout: the context lm-eval scores the
continuations " A" .. " D" after (num_fewshot 5).
"""
import csv
import os

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
import json
import sys
import tempfile

import datasets
import lm_eval
from lm_eval.api.task import ConfigurableTask
from lm_eval.tasks._yaml_loader import load_yaml


def convert(csv_path, jsonl_path):
    with open(csv_path, newline="", encoding="utf-8") as f, open(jsonl_path, "w") as out:
        for row in csv.reader(f):
            out.write(json.dumps({"question": row[0], "choices": row[1:5],
                                  "answer": "ABCD".index(row[5])}) + "\n")


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    mmlu_dir, picks = sys.argv[1], sys.argv[2:]
    datasets.disable_progress_bars()
    datasets.logging.set_verbosity_error()
    task_dir = os.path.join(os.path.dirname(lm_eval.__file__), "tasks", "mmlu", "default")
    prompts = {}
    with tempfile.TemporaryDirectory() as tmp:
        for pick in picks:
            subject, index = pick.rsplit(":", 1)
            files = {}
            for split in ("dev", "test"):
                files[split] = os.path.join(tmp, f"{subject}_{split}.jsonl")
                convert(os.path.join(mmlu_dir, split, f"{subject}_{split}.csv"), files[split])
            config = load_yaml(os.path.join(task_dir, f"mmlu_{subject}.yaml"))
            config["dataset_path"] = "json"
            config["dataset_name"] = None
            config["dataset_kwargs"] = {"data_files": files, "cache_dir": os.path.join(tmp, "hf")}
            task = ConfigurableTask(config=config)
            doc = list(task.test_docs())[int(index)]
            prompts[f"{subject}/{index}"] = task.fewshot_context(doc, num_fewshot=5)
    print(json.dumps(prompts))


if __name__ == "__main__":
    main()
