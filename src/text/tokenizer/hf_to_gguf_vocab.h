// Hugging Face tokenizer files as a GGUF vocabulary: the tokenizer.* keys that llama.cpp's
// convert_hf_to_gguf.py writes for a Llama-family checkpoint, so that a GGUF proctor makes from a
// safetensors directory tokenizes in llama.cpp (and in proctor) as the source does in Hugging
// Face's tokenizers.
//
// Read: tokenizer.json (required), tokenizer_config.json, chat_template.jinja and the model's
// config.json (its <type>_token_id). Two kinds of tokenizer.json have a GGUF form here:
//
//   byte-level BPE (model BPE without byte fallback) -> tokenizer.ggml.model "gpt2":
//     tokens: the ids 0..vocab_size-1 of the vocabulary and its added tokens, "[PAD<i>]" (type
//       unused) for an id that has none; added tokens are control (special, or looking special:
//       <|...|>, <pad>, <mask>, <unused...>) or user-defined; the rest normal;
//     merges: "left right", spaces inside a part written as U+0120;
//     tokenizer.ggml.pre: the llama.cpp preset whose regexes (the pre-tokenizer's Split regexes,
//       and GPT-2's when its ByteLevel step splits) and ignore_merges flag equal the tokenizer's
//       (text/tokenizer/gguf_presets.h); a pre-tokenizer no preset matches is an Error naming
//       its regexes. (convert_hf_to_gguf.py picks the name from a table of hashes of known
//       vocabularies instead, so for one tokenizer it may name another preset of the same
//       behaviour.)
//   SentencePiece-style BPE (byte fallback, a Sequence decoder) -> "llama", pre "default":
//     the base vocabulary in id order then the added tokens beyond it; <0xXX> tokens are type
//     byte, special tokens control. Scores: -(rank of the first merge that makes the token), and
//     -(number of merges + 1) for a token no merge makes, so llama.cpp's SentencePiece merging
//     (highest score first) follows the merge ranks as Hugging Face's BPE does.
//     (convert_hf_to_gguf.py writes -1000 for every score here, with which llama.cpp merges
//     left to right instead.)
//
// Then, as gguf-py's SpecialVocab: the special token ids (tokenizer_config's bos/eos/unk/sep/
// pad/mask tokens found among the added tokens, then config.json's ids), add_bos / add_eos /
// add_sep from the post-processor (ByteLevel, TemplateProcessing) and tokenizer_config.json,
// the chat template (tokenizer_config's, else chat_template.jinja), the normalizer's lowercase /
// strip-accents flags; and before everything tokenizer.ggml.add_space_prefix when
// tokenizer_config.json says add_prefix_space.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

namespace proctor {
class GgufMetadata;  // formats/gguf_writer.h
}

namespace proctor::text {

struct GgufVocabSummary {
  std::string model;  // tokenizer.ggml.model: "gpt2" or "llama"
  std::string pre;    // tokenizer.ggml.pre
  size_t tokens = 0;
  size_t merges = 0;
};

// Appends the tokenizer.* keys for the tokenizer files in `model_dir`. `config` is the model's
// config.json; `vocab_size` its vocabulary size. Error (naming the file) when tokenizer.json is
// missing or has no GGUF form here.
GgufVocabSummary AddHfTokenizerAsGgufVocab(const std::filesystem::path& model_dir,
                                           const nlohmann::json& config, int64_t vocab_size,
                                           GgufMetadata& metadata);

}  // namespace proctor::text
