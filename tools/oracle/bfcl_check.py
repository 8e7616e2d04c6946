#!/usr/bin/env python3
"""Oracle: BFCL's own AST checker (bfcl-eval's ast_checker, Python rules, the "simple"
category) on cases from a JSON file, as tools/oracle/setup.sh unpacks it (BFCL_EVAL_PKG). The
checker imports the model table only to rename dotted functions for some API models; it is
replaced by a table in which no model renames, so names are compared as given.

usage: bfcl_check.py BFCL_EVAL_PKG CASES_JSON
  CASES_JSON: a list of {"function": {...}, "ground_truth": {NAME: {...}},
                         "calls": [{NAME: {ARG: VALUE}}, ...]}
Prints a JSON list of [valid, error_type], one per case.
"""
import json
import sys
import types


class _NoRename:
    underscore_to_dot = False


class _Table(dict):
    def __missing__(self, key):
        return _NoRename()


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.path.insert(0, sys.argv[1])
    stub = types.ModuleType("bfcl_eval.constants.model_config")
    stub.MODEL_CONFIG_MAPPING = _Table()
    sys.modules["bfcl_eval.constants.model_config"] = stub
    from bfcl_eval.constants.enums import Language
    from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker

    with open(sys.argv[2]) as f:
        cases = json.load(f)
    out = []
    for case in cases:
        result = ast_checker([case["function"]], case["calls"], [case["ground_truth"]],
                             Language.PYTHON, "simple", "proctor")
        out.append([bool(result["valid"]), result.get("error_type", "")])
    print(json.dumps(out))


if __name__ == "__main__":
    main()
