// Added tokens of a tokenizer.json ("added_tokens"): found in the text before the model runs,
// leftmost-longest like Hugging Face's aho-corasick matcher, with single_word, lstrip and
// rstrip applied as the Rust AddedVocabulary::find_matches does.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace proctor::text {

struct AddedToken {
  std::string content;
  int32_t id = -1;
  bool special = false;
  bool normalized = false;
  bool lstrip = false;
  bool rstrip = false;
  bool single_word = false;
};

// One part of a split text: a matched token (token >= 0, an index into the token list) or
// plain text (token == -1), as [begin, end) byte offsets.
struct AddedSplit {
  int32_t token;
  size_t begin, end;
};

class AddedTokenMatcher {
 public:
  // patterns[i] is matched as token index indices[i] of `tokens`.
  void Build(const std::vector<AddedToken>* tokens, const std::vector<std::string>& patterns,
             const std::vector<int32_t>& indices);
  bool empty() const { return terminal_.size() <= 1; }
  // Splits text into matched tokens and the text between them (covers all of text).
  void Split(std::string_view text, std::vector<AddedSplit>& out) const;

 private:
  int32_t Child(int32_t node, uint8_t byte) const {
    auto it = edges_.find((static_cast<uint64_t>(node) << 8) | byte);
    return it == edges_.end() ? -1 : it->second;
  }

  const std::vector<AddedToken>* tokens_ = nullptr;
  std::unordered_map<uint64_t, int32_t> edges_;  // (node << 8 | byte) -> child node
  std::vector<int32_t> terminal_{-1};            // node -> token index or -1 (node 0 = root)
  bool first_byte_[256] = {};
};

}  // namespace proctor::text
