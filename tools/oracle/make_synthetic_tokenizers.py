#!/usr/bin/python3
"""Writes small synthetic tokenizer.json files that exercise the tokenizer.json components the
real model files do not use (Metaspace, Digits, Punctuation, Whitespace, NFKC/NFD/Lowercase/
Strip/Replace, continuing_subword_prefix, end_of_word_suffix, Split behaviours and invert,
added-token flags, Strip/Replace/Metaspace decoders). They are test inputs only: the expected
ids come from Hugging Face's Rust library (tools/oracle/hf_tokenize.js), never from proctor.

usage: /usr/bin/python3 tools/oracle/make_synthetic_tokenizers.py testdata/tokenizer/synthetic
"""
import json
import os
import sys

WORDS = ["the", "and", "ing", "tion", "hello", "world", "token", "er", "in", "an", "re", "on",
         "can", "don", "is", "it", "12", "123", "ab", "na"]


def byte_level_chars():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for c in cs]


def build_bpe(prefix="", suffix="", space="\u2581", extra_chars=""):
    """Vocab and merges: single characters, <0xXX> bytes, specials, then left-to-right merges
    composing each word (with its space-marked variant)."""
    vocab = {}

    def add(tok):
        if tok not in vocab:
            vocab[tok] = len(vocab)

    for t in ["<unk>", "<s>", "</s>"]:
        add(t)
    for b in range(256):
        add("<0x%02X>" % b)
    chars = [chr(c) for c in range(0x20, 0x7F)] + [space] + list(extra_chars)
    for c in chars:
        add(c)
        if prefix:
            add(prefix + c)
        if suffix:
            add(c + suffix)
            if prefix:
                add(prefix + c + suffix)
    merges = []
    seen = set()
    words = WORDS + [space + w for w in WORDS]
    for w in words:
        sym = [w[0]] + [prefix + c for c in w[1:]]
        if suffix:
            sym[-1] = sym[-1] + suffix
        cur = sym[0]
        for s in sym[1:]:
            pair = (cur, s)
            merged = cur + s[len(prefix):]
            if pair not in seen:
                seen.add(pair)
                add(merged)
                merges.append([cur, s])
            cur = merged
    return vocab, merges


def model(vocab, merges, legacy=False, **opts):
    m = {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
         "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
         "ignore_merges": False, "vocab": vocab,
         "merges": [" ".join(p) for p in merges] if legacy else merges}
    m.update(opts)
    return m


def added(vocab, content, special=True, **flags):
    if content not in vocab:
        vocab[content] = len(vocab)
    t = {"id": vocab[content], "content": content, "single_word": False, "lstrip": False,
         "rstrip": False, "normalized": not special, "special": special}
    t.update(flags)
    return t


def template(prefix, suffix):
    single = [{"SpecialToken": {"id": p, "type_id": 0}} for p in prefix]
    single.append({"Sequence": {"id": "A", "type_id": 0}})
    single += [{"SpecialToken": {"id": s, "type_id": 0}} for s in suffix]
    specials = {}
    return single, specials


def template_processing(vocab, prefix, suffix):
    single, _ = template(prefix, suffix)
    specials = {t: {"id": t, "ids": [vocab[t]], "tokens": [t]} for t in prefix + suffix}
    return {"type": "TemplateProcessing", "single": single, "pair": single,
            "special_tokens": specials}


def doc(m, added_tokens, normalizer, pre, post, decoder):
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added_tokens,
            "normalizer": normalizer, "pre_tokenizer": pre, "post_processor": post,
            "decoder": decoder, "model": m}


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    files = {}

    # 1. SentencePiece-like: NFKC + Lowercase + Strip, Metaspace "first" with split, byte
    #    fallback, fused unk, BOS+EOS template, Metaspace/ByteFallback/Fuse decoders.
    vocab, merges = build_bpe()
    toks = [added(vocab, "<s>"), added(vocab, "</s>"), added(vocab, "<unk>"),
            added(vocab, "[MASK]", special=True, lstrip=True, rstrip=True)]
    files["metaspace_nfkc"] = doc(
        model(vocab, merges, legacy=True, unk_token="<unk>", fuse_unk=True, byte_fallback=True),
        toks,
        {"type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "Lowercase"},
                                             {"type": "Strip", "strip_left": True,
                                              "strip_right": True}]},
        {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": True},
        template_processing(vocab, ["<s>"], ["</s>"]),
        {"type": "Sequence", "decoders": [{"type": "ByteFallback"}, {"type": "Metaspace",
                                           "replacement": "\u2581", "prepend_scheme": "first",
                                           "split": True}, {"type": "Fuse"}]})

    # 2. Metaspace "always" without split, NFD, unk not fused, no post-processor.
    vocab, merges = build_bpe()
    files["metaspace_always"] = doc(
        model(vocab, merges, unk_token="<unk>"),
        [added(vocab, "<s>"), added(vocab, "</s>")],
        {"type": "NFD"},
        {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": False},
        None,
        {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": False})

    # 3. WordPiece-like BPE: continuing_subword_prefix, Whitespace + Digits + Punctuation, no
    #    decoder (tokens joined by spaces), Replace normalizer with a regex.
    vocab, merges = build_bpe(prefix="##")
    files["subword_prefix"] = doc(
        model(vocab, merges, unk_token="<unk>", continuing_subword_prefix="##"),
        [added(vocab, "[CLS]"), added(vocab, "[SEP]"),
         added(vocab, "hello", special=False, single_word=True)],
        {"type": "Sequence", "normalizers": [
            {"type": "Replace", "pattern": {"Regex": "\\s+"}, "content": " "},
            {"type": "Lowercase"}]},
        {"type": "Sequence", "pretokenizers": [{"type": "Whitespace"},
                                               {"type": "Digits", "individual_digits": False},
                                               {"type": "Punctuation", "behavior": "Isolated"}]},
        template_processing(vocab, ["[CLS]"], ["[SEP]"]),
        None)

    # 4. end_of_word_suffix, WhitespaceSplit, individual digits, Punctuation merged with previous.
    vocab, merges = build_bpe(suffix="</w>")
    files["word_suffix"] = doc(
        model(vocab, merges, unk_token="<unk>", end_of_word_suffix="</w>"),
        [],
        {"type": "NFKD"},
        {"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"},
                                               {"type": "Digits", "individual_digits": True},
                                               {"type": "Punctuation",
                                                "behavior": "MergedWithPrevious"}]},
        None,
        {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "</w>"}, "content": " "},
            {"type": "Fuse"}]})

    # 5. Split behaviours and invert, ignore_merges, Prepend, Replace/Strip decoders.
    vocab, merges = build_bpe()
    files["split_behaviors"] = doc(
        model(vocab, merges, unk_token="<unk>", byte_fallback=True, ignore_merges=True),
        [added(vocab, "<s>")],
        {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
                                             {"type": "Replace", "pattern": {"String": " "},
                                              "content": "\u2581"}]},
        {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"String": "\u2581"}, "behavior": "MergedWithNext",
             "invert": False},
            {"type": "Split", "pattern": {"Regex": "\\p{N}+"}, "behavior": "Contiguous",
             "invert": True},
            {"type": "Split", "pattern": {"Regex": "[aeiou]"}, "behavior": "MergedWithPrevious",
             "invert": False},
            {"type": "Split", "pattern": {"String": "x"}, "behavior": "Removed", "invert": False},
            {"type": "Split", "pattern": {"Regex": "[,.]"}, "behavior": "Isolated",
             "invert": False}]},
        template_processing(vocab, ["<s>"], []),
        {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]})

    # 6. Byte-level with add_prefix_space and the GPT-2 regex, added tokens with every flag
    #    (normalized ones matched after an NFC + Lowercase normalizer), ByteLevel decoder.
    bl = "".join(byte_level_chars())
    vocab, merges = build_bpe(space="\u0120", extra_chars=bl)
    toks = [added(vocab, "<|endoftext|>"),
            added(vocab, "<|user|>", special=True, lstrip=True),
            added(vocab, "<|bot|>", special=True, rstrip=True),
            added(vocab, "word", special=False, single_word=True),
            added(vocab, "mask", special=False, normalized=True, lstrip=True, rstrip=True),
            added(vocab, "Caps", special=False, normalized=True)]
    files["byte_level_added"] = doc(
        model(vocab, merges),
        toks,
        {"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Lowercase"}]},
        {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        {"type": "Sequence", "processors": [
            {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
             "use_regex": True},
            template_processing(vocab, ["<|endoftext|>"], ["<|endoftext|>"])]},
        {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True})

    for name, d in files.items():
        with open(os.path.join(out_dir, name + ".json"), "w", encoding="utf-8") as f:
            json.dump(d, f, ensure_ascii=False, indent=None, separators=(",", ":"))
            f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "testdata/tokenizer/synthetic")
