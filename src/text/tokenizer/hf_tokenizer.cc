// Hugging Face tokenizer.json tokenizer: added tokens, normalizer, pre-tokenizer, BPE model,
// post-processor and decoder, run in the order of the Rust `tokenizers` crate.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <set>

#include "text/tokenizer/added_tokens.h"
#include "text/tokenizer/bpe.h"
#include "text/tokenizer/hf_components.h"
#include "text/tokenizer/hf_json.h"
#include "text/tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/utf8.h"

namespace proctor::text {

namespace {

using json = nlohmann::json;

const std::set<std::string>& KnownTopLevelKeys() {
  static const std::set<std::string> keys = {"version",      "truncation",     "padding",
                                             "added_tokens", "normalizer",     "pre_tokenizer",
                                             "model",        "post_processor", "decoder"};
  return keys;
}

// "bos_token": "<s>" or {"content": "<s>", ...} or null.
std::string ConfigToken(const json& config, const char* key) {
  auto it = config.find(key);
  if (it == config.end()) return std::string();
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
    return (*it)["content"].get<std::string>();
  }
  return std::string();
}

class HfTokenizer : public Tokenizer {
 public:
  HfTokenizer(TokenizerJson doc, std::string_view config_text, const std::string& source)
      : source_(source) {
    const json& root = doc.root;
    for (const auto& [key, value] : root.items()) {
      if (!KnownTopLevelKeys().count(key)) {
        Fail("tokenizer", "{}: top-level field \"{}\" is not supported", source, key);
      }
    }
    if (root.contains("truncation") && !root["truncation"].is_null()) {
      Fail("tokenizer", "{}: \"truncation\" is set; proctor does not truncate", source);
    }
    if (root.contains("padding") && !root["padding"].is_null()) {
      Fail("tokenizer", "{}: \"padding\" is set; proctor does not pad", source);
    }
    LoadModel(doc, source);
    normalizer_ = MakeNormalizer(root.value("normalizer", json()), source);
    pre_tokenizer_ = MakePreTokenizer(root.value("pre_tokenizer", json()), source);
    post_processor_ = MakePostProcessor(root.value("post_processor", json()), source);
    decoder_ = MakeDecoder(root.value("decoder", json()), source);
    LoadAddedTokens(root.value("added_tokens", json::array()), source);
    CheckPostProcessorIds(source);

    if (!config_text.empty()) {
      json config = json::parse(config_text, nullptr, false);
      if (config.is_discarded() || !config.is_object()) {
        Fail("tokenizer", "{}: tokenizer_config.json is not a JSON object", source);
      }
      bos_id_ = TokenToId(ConfigToken(config, "bos_token"));
      eos_id_ = TokenToId(ConfigToken(config, "eos_token"));
    }
    if (bos_id_ < 0 && post_processor_) {
      auto prefix = post_processor_->Prefix();
      if (!prefix.empty()) bos_id_ = prefix.front();
    }
    if (eos_id_ < 0 && post_processor_) {
      auto suffix = post_processor_->Suffix();
      if (!suffix.empty()) eos_id_ = suffix.back();
    }
  }

  std::vector<int32_t> Encode(std::string_view text, bool add_special_tokens) const override {
    if (!IsValidUtf8(text)) Fail("tokenizer", "input text is not valid UTF-8");
    std::vector<int32_t> ids;
    ids.reserve(text.size() / 3 + 4);
    std::vector<AddedSplit> outer, inner;
    raw_matcher_.Split(text, outer);
    std::string normalized;
    std::vector<Piece> pieces, scratch;
    for (const AddedSplit& seg : outer) {
      if (seg.token >= 0) {
        ids.push_back(added_[seg.token].id);
        continue;
      }
      if (seg.end == seg.begin) continue;
      normalized.assign(text.substr(seg.begin, seg.end - seg.begin));
      bool at_origin = seg.begin == 0;
      if (normalizer_) normalizer_->Apply(normalized, &at_origin);
      normalized_matcher_.Split(normalized, inner);
      for (const AddedSplit& sub : inner) {
        if (sub.token >= 0) {
          ids.push_back(added_[sub.token].id);
          continue;
        }
        if (sub.end == sub.begin) continue;
        pieces.clear();
        pieces.push_back(
            Piece{normalized.substr(sub.begin, sub.end - sub.begin), at_origin && sub.begin == 0});
        if (pre_tokenizer_) pre_tokenizer_->Apply(pieces, scratch);
        for (const Piece& p : pieces) model_->Tokenize(p.text, ids);
      }
    }
    if (add_special_tokens && post_processor_) post_processor_->Apply(ids);
    return ids;
  }

  std::string Decode(std::span<const int32_t> ids, bool skip_special_tokens) const override {
    std::vector<std::string> tokens;
    tokens.reserve(ids.size());
    for (int32_t id : ids) {
      auto it = added_by_id_.find(id);
      if (it != added_by_id_.end()) {
        const AddedToken& t = added_[it->second];
        if (skip_special_tokens && t.special) continue;
        tokens.push_back(t.content);
        continue;
      }
      std::string_view t;
      if (model_->IdToToken(id, &t)) {
        if (skip_special_tokens && special_contents_.count(t)) continue;
        tokens.emplace_back(t);
      }
    }
    if (!decoder_) {
      std::string out;
      for (size_t i = 0; i < tokens.size(); ++i) {
        if (i) out.push_back(' ');
        out += tokens[i];
      }
      return out;
    }
    decoder_->Apply(tokens);
    std::string out;
    for (const auto& t : tokens) out += t;
    return out;
  }

  int32_t TokenToId(std::string_view token) const override {
    if (token.empty()) return -1;
    auto it = added_by_content_.find(token);
    if (it != added_by_content_.end()) return it->second;
    return model_->TokenToId(token);
  }
  std::optional<std::string> IdToToken(int32_t id) const override {
    auto it = added_by_id_.find(id);
    if (it != added_by_id_.end()) return added_[it->second].content;
    std::string_view t;
    if (model_->IdToToken(id, &t)) return std::string(t);
    return std::nullopt;
  }
  size_t VocabSize() const override { return vocab_size_; }
  bool IsSpecial(int32_t id) const override {
    auto it = added_by_id_.find(id);
    return it != added_by_id_.end() && added_[it->second].special;
  }
  int32_t BosId() const override { return bos_id_; }
  int32_t EosId() const override { return eos_id_; }
  std::string Describe() const override { return fmt::format("tokenizer.json (BPE) {}", source_); }

 private:
  void LoadModel(TokenizerJson& doc, const std::string& source) {
    if (!doc.root.contains("model") || !doc.root["model"].is_object()) {
      Fail("tokenizer", "{}: no \"model\" object", source);
    }
    const json& m = doc.root["model"];
    std::string type = m.value("type", std::string());
    if (type.empty() && doc.has_merges) type = "BPE";  // older files omit the type
    if (type != "BPE") {
      Fail("tokenizer", "{}: model type \"{}\" is not supported (only BPE)", source, type);
    }
    static const std::set<std::string> known = {"type",
                                                "dropout",
                                                "unk_token",
                                                "continuing_subword_prefix",
                                                "end_of_word_suffix",
                                                "fuse_unk",
                                                "byte_fallback",
                                                "ignore_merges",
                                                "vocab",
                                                "merges"};
    for (const auto& [key, value] : m.items()) {
      if (!known.count(key))
        Fail("tokenizer", "{}: model field \"{}\" is not supported", source, key);
    }
    if (m.contains("dropout") && !m["dropout"].is_null() && m["dropout"].get<double>() != 0.0) {
      Fail("tokenizer", "{}: BPE dropout {} is random; proctor needs a deterministic tokenizer",
           source, m["dropout"].dump());
    }
    if (!doc.has_vocab_object) Fail("tokenizer", "{}: model has no \"vocab\" object", source);
    BpeOptions options;
    auto str = [&](const char* key) {
      auto it = m.find(key);
      return it == m.end() || it->is_null() ? std::string() : it->get<std::string>();
    };
    auto flag = [&](const char* key) {
      auto it = m.find(key);
      return it != m.end() && it->is_boolean() && it->get<bool>();
    };
    options.unk_token = str("unk_token");
    options.continuing_subword_prefix = str("continuing_subword_prefix");
    options.end_of_word_suffix = str("end_of_word_suffix");
    options.fuse_unk = flag("fuse_unk");
    options.byte_fallback = flag("byte_fallback");
    options.ignore_merges = flag("ignore_merges");
    model_ = std::make_unique<BpeModel>(std::move(doc.vocab), doc.merges, options, source);
    doc.merges.clear();
  }

  // The ids a post-processor adds (BOS, EOS, CLS...) are looked up in embedding tables: one
  // outside the vocabulary is refused here, not met as an index later.
  void CheckPostProcessorIds(const std::string& source) const {
    if (!post_processor_) return;
    std::vector<int32_t> added = post_processor_->Prefix();
    const std::vector<int32_t> suffix = post_processor_->Suffix();
    added.insert(added.end(), suffix.begin(), suffix.end());
    for (const int32_t id : added) {
      if (id < 0 || static_cast<size_t>(id) >= vocab_size_) {
        Fail("tokenizer",
             "{}: post_processor adds token id {}, outside the vocabulary (ids 0 to {})", source,
             id, vocab_size_ - 1);
      }
    }
  }

  void LoadAddedTokens(const json& list, const std::string& source) {
    vocab_size_ = model_->IdLimit();
    if (!list.is_array()) Fail("tokenizer", "{}: \"added_tokens\" is not an array", source);
    for (const json& t : list) {
      AddedToken token;
      token.id = t.at("id").get<int32_t>();
      token.content = t.at("content").get<std::string>();
      token.special = t.value("special", false);
      token.normalized = t.value("normalized", !token.special);
      token.lstrip = t.value("lstrip", false);
      token.rstrip = t.value("rstrip", false);
      token.single_word = t.value("single_word", false);
      // A normalized token is stored (and decoded) as its normalized text, as the Rust library.
      if (token.normalized && normalizer_) normalizer_->Apply(token.content, nullptr);
      if (token.id < 0)
        Fail("tokenizer", "{}: added token '{}' has id {}", source, token.content, token.id);
      CheckTokenIdRange(token.id, model_->TokenCount() + list.size(),
                        fmt::format("added token '{}'", token.content), source);
      added_by_id_[token.id] = static_cast<int32_t>(added_.size());
      added_by_content_.emplace(token.content, token.id);
      if (token.special) special_contents_.insert(token.content);
      vocab_size_ = std::max(vocab_size_, static_cast<size_t>(token.id) + 1);
      added_.push_back(std::move(token));
    }
    std::vector<std::string> raw_patterns, normalized_patterns;
    std::vector<int32_t> raw_indices, normalized_indices;
    for (size_t i = 0; i < added_.size(); ++i) {
      const AddedToken& t = added_[i];
      if (t.normalized) {
        normalized_patterns.push_back(t.content);
        normalized_indices.push_back(static_cast<int32_t>(i));
      } else {
        raw_patterns.push_back(t.content);
        raw_indices.push_back(static_cast<int32_t>(i));
      }
    }
    raw_matcher_.Build(&added_, raw_patterns, raw_indices);
    normalized_matcher_.Build(&added_, normalized_patterns, normalized_indices);
  }

  std::string source_;
  std::unique_ptr<BpeModel> model_;
  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  std::unique_ptr<PostProcessor> post_processor_;
  std::unique_ptr<Decoder> decoder_;
  std::vector<AddedToken> added_;
  std::unordered_map<int32_t, int32_t> added_by_id_;  // id -> index in added_
  TokenMap added_by_content_;
  std::set<std::string, std::less<>> special_contents_;
  AddedTokenMatcher raw_matcher_, normalized_matcher_;
  size_t vocab_size_ = 0;
  int32_t bos_id_ = -1, eos_id_ = -1;
};

}  // namespace

std::unique_ptr<Tokenizer> LoadHfTokenizer(std::string_view tokenizer_json,
                                           std::string_view config_json,
                                           const std::string& source) {
  // The components read their fields with nlohmann's checked accessors (at, get): a field that
  // is missing or of another type is an error naming the file, not an exception of the library.
  try {
    return std::make_unique<HfTokenizer>(ParseTokenizerJson(tokenizer_json, source), config_json,
                                         source);
  } catch (const nlohmann::json::exception& e) {
    Fail("tokenizer", "{}: {} (a field is missing or has another type)", source, e.what());
  }
}

}  // namespace proctor::text
