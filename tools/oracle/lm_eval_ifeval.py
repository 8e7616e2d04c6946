#!/usr/bin/env python3
"""Oracle: IFEval as lm-evaluation-harness scores it (lm_eval/tasks/ifeval: its process_results,
its instruction classes), with nltk's Punkt and word_tokenize and langdetect themselves.

nltk's English punkt_tab cannot be downloaded here, so `train-punkt` trains Punkt parameters with
nltk's own PunktTrainer on a text and writes them in punkt_tab's format under
OUT/tokenizers/punkt_tab/english; NLTK_DATA=OUT then makes lm-eval and nltk load them exactly as
they load the real model. langdetect draws from an unseeded random generator unless
DetectorFactory.seed is set: every mode here sets it to 0 and loads the profiles in file-name
order (os.listdir's order is the file system's).

usage:
  lm_eval_ifeval.py train-punkt TEXT_FILE [TEXT_FILE ...] --out OUT
  lm_eval_ifeval.py punkt TEXTS_JSON [--nltk-data OUT] -> [{"sentences": [...], "words": [...]}]
      (OUT as train-punkt wrote it; without it nltk's untrained PunktSentenceTokenizer())
  lm_eval_ifeval.py langdetect TEXTS_JSON             -> ["en", "de", null (no features), ...]
  lm_eval_ifeval.py ifeval CASES_JSON                 -> per case lm-eval's process_results:
      {"prompt_level_strict_acc", "inst_level_strict_acc", "prompt_level_loose_acc",
       "inst_level_loose_acc"}; CASES_JSON: [{"key", "prompt", "instruction_id_list", "kwargs",
       "response"}]; needs NLTK_DATA with punkt_tab/english.
"""
import json
import os
import sys


def load_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def seeded_langdetect():
    """A DetectorFactory with seed 0 and the profiles in sorted order, installed as langdetect's
    module-level factory so that langdetect.detect() (what lm-eval calls) uses it."""
    from langdetect import detector_factory
    from langdetect.detector_factory import DetectorFactory, PROFILES_DIRECTORY

    DetectorFactory.seed = 0
    factory = DetectorFactory()
    profiles = []
    for name in sorted(os.listdir(PROFILES_DIRECTORY)):
        path = os.path.join(PROFILES_DIRECTORY, name)
        if not name.startswith(".") and os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                profiles.append(f.read())
    factory.load_json_profile(profiles)
    detector_factory._factory = factory
    return factory


def train_punkt(files, out):
    from nltk.tokenize.punkt import PunktTrainer

    text = ""
    for path in files:
        with open(path, encoding="utf-8") as f:
            text += f.read() + "\n\n"
    trainer = PunktTrainer()
    trainer.INCLUDE_ALL_COLLOCS = True
    trainer.train(text, finalize=True)
    params = trainer.get_params()
    target = os.path.join(out, "tokenizers", "punkt_tab", "english")
    os.makedirs(target, exist_ok=True)
    # punkt_tab's format, as nltk's TabEncoder writes it (sorted, for a reproducible file).
    files = {
        "abbrev_types.txt": "\n".join(sorted(params.abbrev_types)),
        "sent_starters.txt": "\n".join(sorted(params.sent_starters)),
        "collocations.tab": "\n".join("\t".join(c) for c in sorted(params.collocations)),
        "ortho_context.tab": "\n".join(f"{k}\t{v}" for k, v in sorted(params.ortho_context.items())),
    }
    for name, content in files.items():
        with open(os.path.join(target, name), "w", encoding="utf-8", newline="") as f:
            f.write(content)
    return {name: len(content.splitlines()) for name, content in files.items()}


def punkt(texts, nltk_data):
    if nltk_data:
        os.environ["NLTK_DATA"] = nltk_data
    from nltk.tokenize import NLTKWordTokenizer
    from nltk.tokenize.punkt import PunktSentenceTokenizer, PunktTokenizer

    if nltk_data:
        # nltk reads model files only under its data roots: NLTK_DATA, set before the import.
        tokenizer = PunktTokenizer("english")
    else:
        tokenizer = PunktSentenceTokenizer()
    words = NLTKWordTokenizer()
    out = []
    for text in texts:
        sentences = tokenizer.tokenize(text)
        out.append({"sentences": sentences,
                    "words": [w for s in sentences for w in words.tokenize(s)]})
    return out


def langdetect_all(texts):
    from langdetect.lang_detect_exception import LangDetectException

    factory = seeded_langdetect()
    out = []
    for text in texts:
        detector = factory.create()
        detector.append(text)
        try:
            out.append(detector.detect())
        except LangDetectException:
            out.append(None)
    return out


def ifeval(cases):
    if not os.environ.get("NLTK_DATA"):
        sys.exit("set NLTK_DATA to a folder with tokenizers/punkt_tab/english")
    seeded_langdetect()
    from lm_eval.tasks.ifeval import utils

    out = []
    for case in cases:
        doc = {k: case[k] for k in ("key", "prompt", "instruction_id_list", "kwargs")}
        out.append(utils.process_results(doc, [case["response"]]))
    return out


def main():
    # The JSON goes to the real stdout; anything else the libraries print (lm-eval's logger
    # writes to stdout) goes to stderr.
    result_stream = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "train-punkt":
        out = args[args.index("--out") + 1]
        result_stream.write(json.dumps(train_punkt(args[: args.index("--out")], out)))
        return
    texts = load_json(args[0])
    if mode == "punkt":
        root = args[args.index("--nltk-data") + 1] if "--nltk-data" in args else None
        result = punkt(texts, root)
    elif mode == "langdetect":
        result = langdetect_all(texts)
    elif mode == "ifeval":
        result = ifeval(texts)
    else:
        sys.exit(f"unknown mode {mode}")
    json.dump(result, result_stream, ensure_ascii=False)
    result_stream.flush()


if __name__ == "__main__":
    main()
