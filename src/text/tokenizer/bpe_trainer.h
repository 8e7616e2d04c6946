// A small deterministic byte-level BPE trainer (GPT-2 style) and the tokenizer.json it writes.
//
// Used by `proctor demo` to give its generated teacher a real vocabulary without downloading
// one. Training: the text is split by the ByteLevel pre-tokenizer (GPT-2 regex, no prefix
// space), each piece becomes a word of byte-level characters, and the most frequent adjacent
// pair (counted over words weighted by their frequency; ties to the lower (left id, right id))
// is merged, repeatedly, until the vocabulary is full or no pair occurs twice. A merge whose
// string already is a token reuses that id (as Hugging Face's BpeTrainer does).
//
// Ids: the special tokens first (in the order given), then the 256 byte tokens in byte order,
// then the merged tokens in merge order. The tokenizer.json is a Hugging Face one (BPE model,
// ByteLevel pre-tokenizer and decoder, TemplateProcessing adding the first special token as BOS
// when add_bos) that proctor's LoadTokenizer and the Rust `tokenizers` library both load.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace proctor::text {

struct ByteLevelBpeOptions {
  int vocab_size = 512;                                       // upper bound on the token count
  std::vector<std::string> special_tokens = {"<s>", "</s>"};  // ids 0.. (BOS first, EOS second)
  bool add_bos = true;  // the post-processor prepends special_tokens[0] to raw text
};

struct ByteLevelBpe {
  std::vector<std::string> tokens;  // id -> token (byte-level characters, UTF-8)
  std::vector<std::pair<std::string, std::string>> merges;  // in rank order
  std::vector<std::string> special_tokens;
  bool add_bos = true;
};

// Error("[tokenizer] ...") when vocab_size leaves no room for the specials and the 256 bytes, or
// the text is not valid UTF-8.
ByteLevelBpe TrainByteLevelBpe(std::string_view text, const ByteLevelBpeOptions& options = {});

// The Hugging Face tokenizer.json text of a trained vocabulary.
std::string ByteLevelBpeTokenizerJson(const ByteLevelBpe& bpe);
// A tokenizer_config.json naming BOS (special_tokens[0]) and EOS (special_tokens[1], if any).
std::string ByteLevelBpeTokenizerConfigJson(const ByteLevelBpe& bpe);

}  // namespace proctor::text
