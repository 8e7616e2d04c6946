// Fast reader for Hugging Face tokenizer.json files: a SAX pass that streams model.vocab and
// model.merges straight into vectors (the bulk of a 33 MB file) and keeps everything else as a
// small nlohmann::json tree.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace proctor::text {

struct TokenizerJson {
  nlohmann::json root;  // the document without model.vocab / model.merges (when streamed)
  bool has_vocab_object = false;
  std::vector<std::pair<std::string, int64_t>> vocab;  // model.vocab in file order
  bool has_merges = false;
  std::vector<std::pair<std::string, std::string>> merges;  // both spellings, rank order
};

// Parses tokenizer.json text; `source` names the file in errors.
TokenizerJson ParseTokenizerJson(std::string_view text, const std::string& source);

}  // namespace proctor::text
