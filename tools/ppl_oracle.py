#!/usr/bin/python3
"""Independent perplexity statistics for src/eval/ppl_test.cc, with numpy: reads a fake
forward's logits and the target tokens and prints what `proctor ppl` must report.

Usage: ppl_oracle.py --logits FILE (float32 [>= n, vocab]) --targets FILE (int32 [n]) --vocab V
                     --rows R
Row p of the logits scores targets[p] (rows past n are ignored: a forward's last row predicts
nothing).
Prints JSON {mean_nll, ppl, standard_error, standard_error_rows, positions}: nll = logsumexp -
logit[target] in float64; ppl = exp(mean); standard errors by the delta method (ppl * sample
standard deviation (ddof 1) / sqrt(count)) over positions and over per-row means.
"""
import argparse
import json
import sys

import numpy as np


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--logits", required=True)
    parser.add_argument("--targets", required=True)
    parser.add_argument("--vocab", type=int, required=True)
    parser.add_argument("--rows", type=int, required=True)
    args = parser.parse_args()
    logits = np.fromfile(args.logits, dtype="<f4").astype(np.float64).reshape(-1, args.vocab)
    targets = np.fromfile(args.targets, dtype="<i4")
    assert logits.shape[0] >= targets.shape[0], "fewer logits rows than targets"
    logits = logits[:targets.shape[0]]  # row p predicts targets[p]; extra rows are unused
    shift = logits.max(axis=1, keepdims=True)
    lse = shift[:, 0] + np.log(np.exp(logits - shift).sum(axis=1))
    nll = lse - logits[np.arange(len(targets)), targets]
    mean = nll.mean()
    ppl = float(np.exp(mean))
    rows = nll.reshape(args.rows, -1).mean(axis=1)
    se_rows = ppl * float(rows.std(ddof=1)) / float(np.sqrt(args.rows)) if args.rows > 1 else None
    print(json.dumps({
        "positions": int(nll.size),
        "mean_nll": float(mean),
        "ppl": ppl,
        "standard_error": ppl * float(nll.std(ddof=1)) / float(np.sqrt(nll.size)),
        "standard_error_rows": se_rows,  # null with one row
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
