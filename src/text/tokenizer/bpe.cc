// BPE model (see bpe.h).
#include "text/tokenizer/bpe.h"

#include <fmt/format.h>

#include <queue>

#include "util/error.h"
#include "util/utf8.h"

namespace proctor::text {

void CheckTokenIdRange(int64_t id, size_t token_count, std::string_view what,
                       const std::string& source) {
  const int64_t bound = 2 * static_cast<int64_t>(token_count) + 1024;
  if (id >= bound) {
    Fail("tokenizer",
         "{}: {} has id {}, but the file defines {} tokens: ids must stay below {} (twice the "
         "tokens, plus 1024; a vocabulary's ids are dense)",
         source, what, id, token_count, bound);
  }
}

BpeModel::BpeModel(std::vector<std::pair<std::string, int64_t>> vocab,
                   const std::vector<std::pair<std::string, std::string>>& merges,
                   BpeOptions options, const std::string& source)
    : options_(std::move(options)) {
  int64_t max_id = -1;
  for (const auto& [token, id] : vocab) {
    if (id < 0 || id > INT32_MAX) Fail("tokenizer", "{}: token '{}' has id {}", source, token, id);
    CheckTokenIdRange(id, vocab.size(), fmt::format("token '{}'", token), source);
    max_id = std::max(max_id, id);
  }
  id_to_token_.assign(static_cast<size_t>(max_id + 1), {0u, ~0u});
  token_count_ = vocab.size();
  vocab_.Reserve(vocab.size());
  for (const auto& [token, id] : vocab) {
    uint32_t offset = vocab_.Assign(token, static_cast<int32_t>(id));
    id_to_token_[id] = {offset, static_cast<uint32_t>(token.size())};
  }
  vocab.clear();
  vocab.shrink_to_fit();
  if (!options_.unk_token.empty()) {
    unk_id_ = TokenToId(options_.unk_token);
    if (unk_id_ < 0) {
      Fail("tokenizer", "{}: unk_token '{}' is not in the vocabulary", source, options_.unk_token);
    }
  }
  if (options_.byte_fallback) {
    byte_ids_.resize(256);
    for (int b = 0; b < 256; ++b) byte_ids_[b] = TokenToId(fmt::format("<0x{:02X}>", b));
  }
  const size_t prefix_len = options_.continuing_subword_prefix.size();
  merges_.Reserve(merges.size());
  std::string merged;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [a, b] = merges[rank];
    int32_t a_id = TokenToId(a), b_id = TokenToId(b);
    merged.assign(a);
    if (b.size() >= prefix_len) merged.append(b, prefix_len);
    int32_t merged_id = TokenToId(merged);
    if (a_id < 0 || b_id < 0 || merged_id < 0) {
      if (options_.skip_bad_merges) continue;
      Fail("tokenizer", "{}: merge {} '{} {}' uses a token that is not in the vocabulary ('{}')",
           source, rank, a, b,
           a_id < 0   ? a
           : b_id < 0 ? b
                      : merged);
    }
    uint64_t key = (static_cast<uint64_t>(a_id) << 32) | static_cast<uint32_t>(b_id);
    // A later duplicate wins, as in HF.
    merges_.Assign(key, (static_cast<uint64_t>(rank) << 32) | static_cast<uint32_t>(merged_id));
  }
}

bool BpeModel::IdToToken(int32_t id, std::string_view* token) const {
  if (id < 0 || static_cast<size_t>(id) >= id_to_token_.size()) return false;
  auto [offset, length] = id_to_token_[id];
  if (length == ~0u) return false;
  *token = vocab_.ArenaView(offset, length);
  return true;
}

void BpeModel::Tokenize(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (options_.ignore_merges) {
    int32_t id = TokenToId(word);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
  }
  const bool cacheable = word.size() < kMaxCachedWordBytes;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    auto it = cache_.find(word);
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  size_t first = out.size();
  TokenizeUncached(word, out);
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (cache_.size() >= kMaxCacheEntries) cache_.clear();
    cache_.emplace(std::string(word), std::vector<int32_t>(out.begin() + first, out.end()));
  }
}

void BpeModel::TokenizeUncached(std::string_view word, std::vector<int32_t>& out) const {
  // Initial symbols: one per character (with prefix/suffix), byte fallback or unk.
  thread_local std::vector<int32_t> ids;
  thread_local std::string symbol;
  ids.clear();
  int32_t pending_unk = -1;  // an unk waiting to be emitted (fused when fuse_unk)
  size_t pos = 0;
  while (pos < word.size()) {
    size_t start = pos;
    pos += Utf8SequenceLength(static_cast<uint8_t>(word[pos]));
    if (pos > word.size()) pos = word.size();
    std::string_view ch = word.substr(start, pos - start);
    symbol.clear();
    if (start != 0) symbol += options_.continuing_subword_prefix;
    symbol += ch;
    if (pos == word.size()) symbol += options_.end_of_word_suffix;
    int32_t id = TokenToId(symbol);
    if (id >= 0) {
      if (pending_unk >= 0) {
        ids.push_back(pending_unk);
        pending_unk = -1;
      }
      ids.push_back(id);
      continue;
    }
    if (options_.byte_fallback) {
      bool all = true;
      for (unsigned char c : symbol) all = all && byte_ids_[c] >= 0;
      if (all) {
        for (unsigned char c : symbol) ids.push_back(byte_ids_[c]);
        continue;
      }
    }
    if (unk_id_ >= 0) {
      if (pending_unk >= 0 && !options_.fuse_unk) ids.push_back(pending_unk);
      pending_unk = unk_id_;
    }
  }
  if (pending_unk >= 0) ids.push_back(pending_unk);
  MergeAll(ids);
  out.insert(out.end(), ids.begin(), ids.end());
}

void BpeModel::MergeAll(std::vector<int32_t>& ids) const {
  const size_t n = ids.size();
  if (n < 2) return;
  struct Symbol {
    int32_t id;
    int32_t prev, next;
    bool alive;
  };
  struct Candidate {
    int32_t rank, pos, new_id;
    bool operator<(const Candidate& o) const {  // max-heap: lowest rank, then leftmost, on top
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  thread_local std::vector<Symbol> symbols;
  thread_local std::vector<Candidate> heap;
  symbols.resize(n);
  heap.clear();
  // (rank, merged id) of the pair, or rank -1.
  auto lookup = [this](int32_t a, int32_t b) -> std::pair<int32_t, int32_t> {
    const uint64_t* m = merges_.Find((static_cast<uint64_t>(a) << 32) | static_cast<uint32_t>(b));
    if (!m) return {-1, -1};
    return {static_cast<int32_t>(*m >> 32), static_cast<int32_t>(*m & 0xFFFFFFFFu)};
  };
  for (size_t i = 0; i < n; ++i) {
    symbols[i] = {ids[i], static_cast<int32_t>(i) - 1, i + 1 < n ? static_cast<int32_t>(i + 1) : -1,
                  true};
  }
  for (size_t i = 0; i + 1 < n; ++i) {
    auto m = lookup(ids[i], ids[i + 1]);
    if (m.first >= 0) heap.push_back({m.first, static_cast<int32_t>(i), m.second});
  }
  std::make_heap(heap.begin(), heap.end());
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end());
    Candidate top = heap.back();
    heap.pop_back();
    Symbol& left = symbols[top.pos];
    if (!left.alive || left.next < 0) continue;
    Symbol& right = symbols[left.next];
    if (lookup(left.id, right.id).second != top.new_id) continue;  // stale entry
    left.id = top.new_id;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.pos;
    if (left.prev >= 0) {
      auto pm = lookup(symbols[left.prev].id, left.id);
      if (pm.first >= 0) {
        heap.push_back({pm.first, left.prev, pm.second});
        std::push_heap(heap.begin(), heap.end());
      }
    }
    if (left.next >= 0) {
      auto nm = lookup(left.id, symbols[left.next].id);
      if (nm.first >= 0) {
        heap.push_back({nm.first, top.pos, nm.second});
        std::push_heap(heap.begin(), heap.end());
      }
    }
  }
  ids.clear();
  for (int32_t i = 0; i >= 0; i = symbols[i].next) ids.push_back(symbols[i].id);
}

}  // namespace proctor::text
