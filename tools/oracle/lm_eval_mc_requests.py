#!/usr/bin/env python3
"""Oracle: the log-likelihood requests lm-evaluation-harness itself builds for its 0-shot
multiple-choice tasks (its hellaswag, arc_easy, arc_challenge, piqa and winogrande configs,
their process_docs / doc_to_* functions and ConfigurableTask.construct_requests), over the
original files under FIXTURES (the Hugging Face datasets are not reachable here): each file is
converted with the standard library to the Hugging Face dataset's schema and loaded with
datasets' local "json" builder.

usage: lm_eval_mc_requests.py FIXTURES TASK INDEX [INDEX ...] | all [--scores LLS_JSON]
  TASK: hellaswag | arc-easy | arc-challenge | piqa | winogrande; INDEX: the item's line index.
  LLS_JSON: a list, per INDEX, of the log-likelihoods of its choices (a model's); then each entry
  also has "scores": lm-eval's own process_results on them ({"acc": ..., "acc_norm": ...}).
Prints a JSON list, one entry per INDEX: {"requests": [[context, continuation], ...], "gold": N}.
"""
import json
import os
import sys
import tempfile

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

import datasets  # noqa: E402
import lm_eval  # noqa: E402
from lm_eval.api.task import ConfigurableTask  # noqa: E402
from lm_eval.tasks._yaml_loader import load_yaml  # noqa: E402


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def hf_rows(fixtures, task):
    """The fixture's items in the Hugging Face dataset's schema, and the lm-eval yaml."""
    tasks = os.path.join(os.path.dirname(lm_eval.__file__), "tasks")
    if task == "hellaswag":
        rows = read_jsonl(os.path.join(fixtures, "hellaswag", "hellaswag_val_1000.jsonl"))
        for row in rows:
            row["label"] = str(row["label"])
        return rows, os.path.join(tasks, "hellaswag", "hellaswag.yaml")
    if task in ("arc-easy", "arc-challenge"):
        name = "ARC-Easy" if task == "arc-easy" else "ARC-Challenge"
        rows = []
        for row in read_jsonl(os.path.join(fixtures, "arc", f"{name}-Test.jsonl")):
            choices = row["question"]["choices"]
            rows.append({"id": row["id"], "question": row["question"]["stem"],
                         "choices": {"text": [c["text"] for c in choices],
                                     "label": [c["label"] for c in choices]},
                         "answerKey": row["answerKey"]})
        yaml = "arc_easy.yaml" if task == "arc-easy" else "arc_challenge.yaml"
        return rows, os.path.join(tasks, "arc", yaml)
    if task == "piqa":
        rows = read_jsonl(os.path.join(fixtures, "piqa", "dev.jsonl"))
        with open(os.path.join(fixtures, "piqa", "dev-labels.lst")) as f:
            labels = [int(line) for line in f if line.strip()]
        return ([{"goal": r["goal"], "sol1": r["sol1"], "sol2": r["sol2"], "label": label}
                 for r, label in zip(rows, labels)], os.path.join(tasks, "piqa", "piqa.yaml"))
    if task == "winogrande":
        rows = read_jsonl(os.path.join(fixtures, "winogrande", "dev.jsonl"))
        return rows, os.path.join(tasks, "winogrande", "default.yaml")
    sys.exit(f"unknown task {task}")


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    args = sys.argv[1:]
    scores = None
    if "--scores" in args:
        with open(args[args.index("--scores") + 1]) as f:
            scores = json.load(f)
        args = args[:args.index("--scores")]
    fixtures, task = args[0], args[1]
    datasets.disable_progress_bars()
    datasets.logging.set_verbosity_error()
    rows, yaml_path = hf_rows(fixtures, task)
    indices = range(len(rows)) if args[2:] == ["all"] else [int(i) for i in args[2:]]
    picked = [rows[i] for i in indices]
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "items.jsonl")
        with open(data, "w", encoding="utf-8") as f:
            for row in picked:
                f.write(json.dumps(row) + "\n")
        config = load_yaml(yaml_path)
        config.pop("tag", None)
        config["dataset_path"] = "json"
        config["dataset_name"] = None
        config["dataset_kwargs"] = {"data_files": {"validation": data},
                                    "cache_dir": os.path.join(tmp, "hf")}
        config["validation_split"] = "validation"
        config["test_split"] = None
        config["training_split"] = None
        task_object = ConfigurableTask(config=config)
        out = []
        for n, doc in enumerate(task_object.validation_docs()):
            context = task_object.fewshot_context(doc, num_fewshot=0)
            instances = task_object.construct_requests(doc, context, metadata=(task, 0, 1))
            entry = {"requests": [list(i.arguments) for i in instances],
                     "gold": task_object.doc_to_target(doc)
                     if not task_object.multiple_input else task_object.doc_to_text(doc)}
            if scores is not None:
                results = [(ll, False) for ll in scores[n]]
                entry["scores"] = {k: float(v) for k, v in
                                   task_object.process_results(doc, results).items()
                                   if k in ("acc", "acc_norm")}
            out.append(entry)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
