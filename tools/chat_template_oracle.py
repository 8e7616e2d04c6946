#!/usr/bin/python3
"""Renders chat templates with Python Jinja2 exactly as Hugging Face transformers does, to give
proctor's C++ Jinja interpreter an independent oracle (src/text/chat_template_oracle_test.cc).

The environment mirrors transformers' _compile_jinja_template / apply_chat_template:
ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, loopcontrols), tojson
overridden with json.dumps(ensure_ascii=False, indent, separators, sort_keys=False), the globals
raise_exception and strftime_now (its clock fixed here so both sides agree), and render(messages=,
tools=, documents=, add_generation_prompt=, **special_tokens, **kwargs).

Usage:
  chat_template_oracle.py --conversations testdata/chat/conversations.json \
      [--fixtures DIR_OF_JINJA_FILES] [--model NAME=DIR_WITH_TOKENIZER_CONFIG ...] --out FILE.json

Writes one JSON file: {"templates": [...], "cases": [{template, conversation, messages, tools,
extra, add_generation_prompt, enable_thinking, special_tokens, expected | error}]}.
"""
import argparse
import datetime
import json
import os
import sys

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

FIXED_NOW = datetime.datetime(2025, 3, 14, 15, 9, 26)  # proctor side: options.now
SPECIAL_TOKEN_NAMES = ["bos_token", "eos_token", "unk_token", "sep_token", "pad_token",
                       "cls_token", "mask_token"]


def compile_template(source):
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(format):
        return FIXED_NOW.strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env.from_string(source)


def token_text(value):
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return value["content"]


def special_tokens_from_config(config):
    """What transformers' special_tokens_map holds: set tokens only, as strings."""
    tokens = {}
    for name in SPECIAL_TOKEN_NAMES:
        text = token_text(config.get(name))
        if text:
            tokens[name] = text
    extra = [token_text(t) for t in config.get("additional_special_tokens") or []]
    extra = [t for t in extra if t is not None]
    if extra:
        tokens["additional_special_tokens"] = extra
    return tokens


def template_from_config(config, want_tool_use):
    ct = config.get("chat_template")
    if ct is None:
        return None
    if isinstance(ct, str):
        return ct
    named = {entry["name"]: entry["template"] for entry in ct}
    if want_tool_use and "tool_use" in named:
        return named["tool_use"]
    return named["default"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--conversations", required=True)
    parser.add_argument("--fixtures", help="folder of *.jinja chat templates")
    parser.add_argument("--model", action="append", default=[],
                        help="NAME=DIR: a folder holding tokenizer_config.json")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    with open(args.conversations, encoding="utf-8") as f:
        data = json.load(f)

    templates = []  # (name, kind, path, config or None)
    if args.fixtures:
        for file in sorted(os.listdir(args.fixtures)):
            if file.endswith(".jinja"):
                templates.append((file, "jinja_file", os.path.join(args.fixtures, file), None))
    for spec in args.model:
        name, _, folder = spec.partition("=")
        with open(os.path.join(folder, "tokenizer_config.json"), encoding="utf-8") as f:
            config = json.load(f)
        templates.append((name, "model_dir", folder, config))

    out = {"templates": [], "cases": []}
    compiled_cache = {}
    for name, kind, path, config in templates:
        entry = {"name": name, "kind": kind, "path": path}
        if config is not None and config.get("chat_template") is None:
            entry["skipped"] = "tokenizer_config.json has no chat_template"
            out["templates"].append(entry)
            continue
        out["templates"].append(entry)
        for conv in data["conversations"]:
            tools = data["tools"] if conv.get("tools") else None
            if config is None:
                with open(path, encoding="utf-8") as f:
                    source = f.read()
                special = data["fixture_special_tokens"].get(name, {})
            else:
                source = template_from_config(config, tools is not None)
                special = special_tokens_from_config(config)
            if (source, tools is not None) not in compiled_cache:
                compiled_cache[(source, tools is not None)] = compile_template(source)
            compiled = compiled_cache[(source, tools is not None)]
            for agp in (False, True):
                for thinking in (None, True, False):
                    kwargs = dict(special)
                    if thinking is not None:
                        kwargs["enable_thinking"] = thinking
                    kwargs.update(conv.get("extra", {}))
                    case = {
                        "template": name,
                        "conversation": conv["id"],
                        "messages": conv["messages"],
                        "tools": tools,
                        "extra": conv.get("extra", {}),
                        "add_generation_prompt": agp,
                        "enable_thinking": thinking,
                        "special_tokens": special,
                    }
                    try:
                        case["expected"] = compiled.render(
                            messages=conv["messages"], tools=tools, documents=None,
                            add_generation_prompt=agp, **kwargs)
                    except Exception as e:  # the template failed: proctor must fail the same way
                        case["error"] = {"type": type(e).__name__, "message": str(e)}
                    out["cases"].append(case)

    tmp = args.out + ".tmp.%d" % os.getpid()
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
    os.replace(tmp, args.out)
    print("chat_template_oracle: jinja2 %s, %d templates, %d cases -> %s"
          % (jinja2.__version__, len(out["templates"]), len(out["cases"]), args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
