#include "text/tokenizer/bpe_trainer.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "text/tokenizer/hf_components.h"
#include "text/tokenizer/unicode.h"
#include "util/error.h"
#include "util/utf8.h"

namespace proctor::text {
namespace {

constexpr const char* kComponent = "tokenizer";

struct Word {
  std::vector<int32_t> ids;
  int64_t count = 0;
};

uint64_t PairKey(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

// The ByteLevel pre-tokenizer's pieces of `text`, counted (ordered map: deterministic order).
std::map<std::string, int64_t> CountPieces(std::string_view text) {
  const auto pre = MakePreTokenizer(
      nlohmann::json{{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}},
      "bpe trainer");
  std::vector<Piece> pieces{Piece{std::string(text), true}}, scratch;
  pre->Apply(pieces, scratch);
  std::map<std::string, int64_t> counts;
  for (const auto& p : pieces) ++counts[p.text];
  return counts;
}

// Replaces every non-overlapping (left, right) in ids, left to right, by merged.
void ApplyMerge(std::vector<int32_t>& ids, int32_t left, int32_t right, int32_t merged) {
  size_t out = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i + 1 < ids.size() && ids[i] == left && ids[i + 1] == right) {
      ids[out++] = merged;
      ++i;
    } else {
      ids[out++] = ids[i];
    }
  }
  ids.resize(out);
}

}  // namespace

ByteLevelBpe TrainByteLevelBpe(std::string_view text, const ByteLevelBpeOptions& options) {
  const int n_special = static_cast<int>(options.special_tokens.size());
  if (options.vocab_size < n_special + 256) {
    Fail(kComponent,
         "a byte-level BPE vocabulary of {} tokens has no room for {} special tokens "
         "and the 256 byte tokens",
         options.vocab_size, n_special);
  }
  if (!IsValidUtf8(text)) Fail(kComponent, "BPE training text is not valid UTF-8");
  ByteLevelBpe bpe;
  bpe.special_tokens = options.special_tokens;
  bpe.add_bos = options.add_bos && n_special > 0;
  bpe.tokens = options.special_tokens;
  std::unordered_map<std::string, int32_t> token_ids;
  for (int b = 0; b < 256; ++b) {
    std::string t;
    AppendUtf8(ByteToChar(static_cast<uint8_t>(b)), &t);
    token_ids.emplace(t, static_cast<int32_t>(bpe.tokens.size()));
    bpe.tokens.push_back(t);
  }

  std::vector<Word> words;
  for (const auto& [piece, count] : CountPieces(text)) {
    Word w;
    w.count = count;
    for (size_t pos = 0; pos < piece.size();) {
      const int byte = CharToByte(DecodeUtf8(piece, &pos, InvalidByte::kFlagged));
      CHECK(byte >= 0);
      w.ids.push_back(n_special + byte);
    }
    if (w.ids.size() > 1) words.push_back(std::move(w));
  }

  std::unordered_map<uint64_t, int64_t> pair_counts;
  while (static_cast<int>(bpe.tokens.size()) < options.vocab_size) {
    pair_counts.clear();
    for (const auto& w : words) {
      for (size_t i = 0; i + 1 < w.ids.size(); ++i)
        pair_counts[PairKey(w.ids[i], w.ids[i + 1])] += w.count;
    }
    uint64_t best_key = 0;
    int64_t best_count = 0;
    for (const auto& [key, count] : pair_counts) {
      if (count > best_count || (count == best_count && key < best_key)) {
        best_key = key;
        best_count = count;
      }
    }
    if (best_count < 2) break;
    const auto left = static_cast<int32_t>(best_key >> 32);
    const auto right = static_cast<int32_t>(best_key & 0xFFFFFFFFu);
    const std::string merged_text = bpe.tokens[left] + bpe.tokens[right];
    auto [it, inserted] = token_ids.emplace(merged_text, static_cast<int32_t>(bpe.tokens.size()));
    if (inserted) bpe.tokens.push_back(merged_text);
    bpe.merges.emplace_back(bpe.tokens[left], bpe.tokens[right]);
    for (auto& w : words) ApplyMerge(w.ids, left, right, it->second);
    std::erase_if(words, [](const Word& w) { return w.ids.size() < 2; });
  }
  return bpe;
}

std::string ByteLevelBpeTokenizerJson(const ByteLevelBpe& bpe) {
  using ojson = nlohmann::ordered_json;
  const int n_special = static_cast<int>(bpe.special_tokens.size());
  ojson added = ojson::array();
  for (int i = 0; i < n_special; ++i) {
    added.push_back({{"id", i},
                     {"content", bpe.special_tokens[i]},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
  }
  ojson post = nullptr;
  if (bpe.add_bos) {
    const std::string& bos = bpe.special_tokens[0];
    post = {{"type", "TemplateProcessing"},
            {"single", ojson::array({{{"SpecialToken", {{"id", bos}, {"type_id", 0}}}},
                                     {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
            {"pair", ojson::array({{{"SpecialToken", {{"id", bos}, {"type_id", 0}}}},
                                   {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                                   {{"SpecialToken", {{"id", bos}, {"type_id", 1}}}},
                                   {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}})},
            {"special_tokens",
             {{bos, {{"id", bos}, {"ids", ojson::array({0})}, {"tokens", ojson::array({bos})}}}}}};
  }
  ojson vocab = ojson::object();
  for (size_t id = 0; id < bpe.tokens.size(); ++id) vocab[bpe.tokens[id]] = id;
  ojson merges = ojson::array();
  for (const auto& [l, r] : bpe.merges) merges.push_back(ojson::array({l, r}));
  ojson j;
  j["version"] = "1.0";
  j["truncation"] = nullptr;
  j["padding"] = nullptr;
  j["added_tokens"] = added;
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] = {{"type", "ByteLevel"},
                        {"add_prefix_space", false},
                        {"trim_offsets", true},
                        {"use_regex", true}};
  j["post_processor"] = post;
  j["decoder"] = {{"type", "ByteLevel"},
                  {"add_prefix_space", true},
                  {"trim_offsets", true},
                  {"use_regex", true}};
  j["model"] = {{"type", "BPE"},
                {"dropout", nullptr},
                {"unk_token", nullptr},
                {"continuing_subword_prefix", nullptr},
                {"end_of_word_suffix", nullptr},
                {"fuse_unk", false},
                {"byte_fallback", false},
                {"ignore_merges", false},
                {"vocab", vocab},
                {"merges", merges}};
  return j.dump(1) + "\n";
}

std::string ByteLevelBpeTokenizerConfigJson(const ByteLevelBpe& bpe) {
  nlohmann::ordered_json j;
  j["tokenizer_class"] = "PreTrainedTokenizerFast";
  j["bos_token"] = bpe.special_tokens.empty() ? nlohmann::ordered_json(nullptr)
                                              : nlohmann::ordered_json(bpe.special_tokens[0]);
  j["eos_token"] = bpe.special_tokens.size() < 2 ? nlohmann::ordered_json(nullptr)
                                                 : nlohmann::ordered_json(bpe.special_tokens[1]);
  j["add_bos_token"] = bpe.add_bos;
  j["model_max_length"] = 1 << 20;
  return j.dump(1) + "\n";
}

}  // namespace proctor::text
