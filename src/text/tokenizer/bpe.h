// Byte-pair encoding model shared by tokenizer.json (model.type "BPE") and GGUF "gpt2"
// vocabularies: merge ranks in a hash map keyed by the id pair, merges applied lowest rank first
// (leftmost on ties) exactly as Hugging Face's Word::merge_all, and a word -> ids cache.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "text/tokenizer/flat_map.h"

namespace proctor::text {

// Hash that lets unordered_map<std::string, V> be searched with a string_view (no allocation).
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TokenMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

struct BpeOptions {
  bool byte_fallback = false;  // unknown chars become <0xXX> tokens when all exist
  bool ignore_merges = false;  // a word that is itself a token is emitted whole
  bool fuse_unk = false;       // consecutive unknown chars give one unk token
  std::string unk_token;       // empty: none (unknown chars are dropped)
  std::string continuing_subword_prefix;
  std::string end_of_word_suffix;
  // Merges whose parts or result are not tokens: true skips them (llama.cpp), false is an
  // Error (Hugging Face).
  bool skip_bad_merges = false;
};

// Token ids index tables (id -> text, and the tokenizer fingerprint of eval/runners/vocab_check.h
// walks every id), so their range is bounded by the tokens a file defines: the largest id must be
// below twice the token count plus 1024. Real vocabularies are dense; an id of 2^31-1 among four
// tokens would otherwise allocate gigabytes, or an added token with id 10^9 make the fingerprint
// loop over a billion ids. `what` names the token ("token 'x'") in the error.
void CheckTokenIdRange(int64_t id, size_t token_count, std::string_view what,
                       const std::string& source);

class BpeModel {
 public:
  // vocab: (token, id) pairs; merges in rank order. `source` names the file in errors.
  BpeModel(std::vector<std::pair<std::string, int64_t>> vocab,
           const std::vector<std::pair<std::string, std::string>>& merges, BpeOptions options,
           const std::string& source);

  // Appends the ids of one pre-tokenized word.
  void Tokenize(std::string_view word, std::vector<int32_t>& out) const;

  int32_t TokenToId(std::string_view token) const { return vocab_.Find(token); }
  // False when the id has no token.
  bool IdToToken(int32_t id, std::string_view* token) const;
  // One past the largest id.
  size_t IdLimit() const { return id_to_token_.size(); }
  // The tokens of the vocabulary (ids may leave holes: at most IdLimit()).
  size_t TokenCount() const { return token_count_; }

 private:
  void TokenizeUncached(std::string_view word, std::vector<int32_t>& out) const;
  void MergeAll(std::vector<int32_t>& ids) const;

  FlatTokenMap vocab_;
  // id -> (arena offset, length) of its text in vocab_; length ~0u when the id has no token.
  std::vector<std::pair<uint32_t, uint32_t>> id_to_token_;
  size_t token_count_ = 0;
  // (left id << 32 | right id) -> (rank << 32 | merged id)
  FlatU64Map merges_;
  BpeOptions options_;
  int32_t unk_id_ = -1;
  std::vector<int32_t> byte_ids_;  // <0xXX> ids for byte_fallback (-1 when absent)

  // Word -> ids cache (words shorter than kMaxCachedWordBytes).
  static constexpr size_t kMaxCachedWordBytes = 256;
  static constexpr size_t kMaxCacheEntries = 1 << 20;
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> cache_;
};

}  // namespace proctor::text
