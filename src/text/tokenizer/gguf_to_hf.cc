#include "text/tokenizer/gguf_to_hf.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "formats/gguf.h"
#include "text/tokenizer/gguf_presets.h"
#include "util/error.h"

namespace proctor::text {
namespace {

using ojson = nlohmann::ordered_json;

constexpr int64_t kUnknown = 2, kControl = 3, kUserDefined = 4;  // llama.cpp's token types

std::optional<bool> FindBool(const GgufFile& gguf, std::string_view key) {
  const GgufValue* v = gguf.Find(key);
  if (v == nullptr) return std::nullopt;
  return v->AsBool();
}

// What both kinds of vocabulary share: the tokens, their types, the special ids and flags.
struct Vocabulary {
  std::span<const std::string_view> tokens;
  std::vector<int64_t> types;
  int64_t bos = -1, eos = -1, unk = -1;
  bool add_bos = false, add_eos = false;

  ojson TokenAt(int64_t id) const {
    if (id < 0 || static_cast<size_t>(id) >= tokens.size()) return nullptr;
    return std::string(tokens[id]);
  }
};

Vocabulary ReadVocabulary(const GgufFile& gguf, bool default_add_bos) {
  Vocabulary v;
  v.tokens = gguf.GetStringArray("tokenizer.ggml.tokens");
  v.types = gguf.Find("tokenizer.ggml.token_type") ? gguf.GetIntArray("tokenizer.ggml.token_type")
                                                   : std::vector<int64_t>(v.tokens.size(), 1);
  v.types.resize(v.tokens.size(), 1);
  v.bos = gguf.FindInt("tokenizer.ggml.bos_token_id").value_or(-1);
  v.eos = gguf.FindInt("tokenizer.ggml.eos_token_id").value_or(-1);
  v.unk = gguf.FindInt("tokenizer.ggml.unknown_token_id").value_or(-1);
  v.add_bos = FindBool(gguf, "tokenizer.ggml.add_bos_token").value_or(default_add_bos);
  v.add_eos = FindBool(gguf, "tokenizer.ggml.add_eos_token").value_or(false);
  return v;
}

// Unknown, control and user-defined tokens, as added tokens (special but for user-defined ones).
ojson AddedTokens(const Vocabulary& v) {
  ojson added = ojson::array();
  for (size_t id = 0; id < v.tokens.size(); ++id) {
    const int64_t type = v.types[id];
    if (type != kUnknown && type != kControl && type != kUserDefined) continue;
    added.push_back({{"id", id},
                     {"content", std::string(v.tokens[id])},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", type != kUserDefined}});
  }
  return added;
}

// BOS / EOS around one sequence (and pairs) as the flags say.
ojson PostProcessor(const Vocabulary& v) {
  if (!v.add_bos && !v.add_eos) return nullptr;
  const std::string bos = v.add_bos ? std::string(v.tokens[v.bos]) : "";
  const std::string eos = v.add_eos ? std::string(v.tokens[v.eos]) : "";
  auto sequence = [&](const char* name, int type_id) {
    ojson items = ojson::array();
    if (v.add_bos) items.push_back({{"SpecialToken", {{"id", bos}, {"type_id", type_id}}}});
    items.push_back({{"Sequence", {{"id", name}, {"type_id", type_id}}}});
    if (v.add_eos) items.push_back({{"SpecialToken", {{"id", eos}, {"type_id", type_id}}}});
    return items;
  };
  ojson pair = sequence("A", 0);
  for (auto& item : sequence("B", 1)) pair.push_back(item);
  ojson specials = ojson::object();
  if (v.add_bos) specials[bos] = {{"id", bos}, {"ids", {v.bos}}, {"tokens", {bos}}};
  if (v.add_eos) specials[eos] = {{"id", eos}, {"ids", {v.eos}}, {"tokens", {eos}}};
  return {{"type", "TemplateProcessing"},
          {"single", sequence("A", 0)},
          {"pair", pair},
          {"special_tokens", specials}};
}

ojson ModelBpe(const Vocabulary& v, ojson merges, bool byte_fallback, bool ignore_merges) {
  ojson vocab = ojson::object();
  for (size_t id = 0; id < v.tokens.size(); ++id) vocab[std::string(v.tokens[id])] = id;
  return {{"type", "BPE"},
          {"dropout", nullptr},
          {"unk_token", byte_fallback ? v.TokenAt(v.unk) : ojson(nullptr)},
          {"continuing_subword_prefix", nullptr},
          {"end_of_word_suffix", nullptr},
          {"fuse_unk", byte_fallback},
          {"byte_fallback", byte_fallback},
          {"ignore_merges", ignore_merges},
          {"vocab", vocab},
          {"merges", std::move(merges)}};
}

HfTokenizerFiles Files(const GgufFile& gguf, const Vocabulary& v, ojson normalizer,
                       ojson pre_tokenizer, ojson decoder, ojson model) {
  ojson j;
  j["version"] = "1.0";
  j["truncation"] = nullptr;
  j["padding"] = nullptr;
  j["added_tokens"] = AddedTokens(v);
  j["normalizer"] = std::move(normalizer);
  j["pre_tokenizer"] = std::move(pre_tokenizer);
  j["post_processor"] = PostProcessor(v);
  j["decoder"] = std::move(decoder);
  j["model"] = std::move(model);
  ojson config = {{"tokenizer_class", "PreTrainedTokenizerFast"},
                  {"add_bos_token", v.add_bos},
                  {"add_eos_token", v.add_eos},
                  {"bos_token", v.TokenAt(v.bos)},
                  {"eos_token", v.TokenAt(v.eos)},
                  {"clean_up_tokenization_spaces", false}};
  if (v.unk >= 0) config["unk_token"] = v.TokenAt(v.unk);
  if (const auto chat = gguf.FindString("tokenizer.chat_template")) {
    config["chat_template"] = std::string(*chat);
  }
  return {j.dump(1) + "\n", config.dump(2) + "\n"};
}

bool NamesItsSpecialTokens(const Vocabulary& v, std::string* why) {
  if ((v.add_bos && v.TokenAt(v.bos).is_null()) || (v.add_eos && v.TokenAt(v.eos).is_null())) {
    *why = "it adds BOS / EOS tokens it does not name";
    return false;
  }
  return true;
}

// SentencePiece merges as Hugging Face's converters derive them from a vocabulary with scores:
// every split of a token into two tokens of the vocabulary (at code point boundaries; the pairs
// of one token ordered by the two ids), all ranked by the merged token's score, highest first
// (stable: ties keep token order).
ojson SentencePieceMerges(std::span<const std::string_view> tokens,
                          const std::vector<float>& scores) {
  std::unordered_map<std::string_view, size_t> ids;
  for (size_t id = 0; id < tokens.size(); ++id) ids.emplace(tokens[id], id);
  struct Merge {
    size_t left, right;
    float score;
  };
  std::vector<Merge> merges;
  for (size_t id = 0; id < tokens.size(); ++id) {
    const std::string_view token = tokens[id];
    std::vector<Merge> local;
    for (size_t cut = 1; cut < token.size(); ++cut) {
      if ((static_cast<unsigned char>(token[cut]) & 0xC0) == 0x80) continue;  // inside a char
      const auto l = ids.find(token.substr(0, cut)), r = ids.find(token.substr(cut));
      if (l != ids.end() && r != ids.end()) local.push_back({l->second, r->second, scores[id]});
    }
    std::sort(local.begin(), local.end(), [](const Merge& a, const Merge& b) {
      return a.left != b.left ? a.left < b.left : a.right < b.right;
    });
    merges.insert(merges.end(), local.begin(), local.end());
  }
  std::stable_sort(merges.begin(), merges.end(),
                   [](const Merge& a, const Merge& b) { return a.score > b.score; });
  ojson out = ojson::array();
  for (const Merge& m : merges) {
    out.push_back({std::string(tokens[m.left]), std::string(tokens[m.right])});
  }
  return out;
}

// tokenizer.ggml.model "llama": Hugging Face's LlamaTokenizerFast form (BPE with byte fallback,
// a U+2581 space prefix and spaces as U+2581 in the normalizer).
std::optional<HfTokenizerFiles> SentencePiece(const GgufFile& gguf, std::string* why) {
  const Vocabulary v = ReadVocabulary(gguf, true);
  if (!NamesItsSpecialTokens(v, why)) return std::nullopt;
  std::vector<float> scores = gguf.Find("tokenizer.ggml.scores")
                                  ? gguf.GetFloatArray("tokenizer.ggml.scores")
                                  : std::vector<float>();
  scores.resize(v.tokens.size(), 0.0f);
  const std::string space = "\xE2\x96\x81";
  ojson replace = {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", space}};
  ojson normalizer =
      FindBool(gguf, "tokenizer.ggml.add_space_prefix").value_or(true)
          ? ojson{{"type", "Sequence"},
                  {"normalizers", {{{"type", "Prepend"}, {"prepend", space}}, replace}}}
          : replace;
  ojson decoder = {{"type", "Sequence"},
                   {"decoders",
                    {{{"type", "Replace"}, {"pattern", {{"String", space}}}, {"content", " "}},
                     {{"type", "ByteFallback"}},
                     {{"type", "Fuse"}},
                     {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}};
  return Files(gguf, v, std::move(normalizer), nullptr, std::move(decoder),
               ModelBpe(v, SentencePieceMerges(v.tokens, scores), true, false));
}

// tokenizer.ggml.model "gpt2": byte-level BPE after the preset's regexes.
std::optional<HfTokenizerFiles> ByteLevelBpe(const GgufFile& gguf, std::string* why) {
  const std::string pre(gguf.FindString("tokenizer.ggml.pre").value_or("default"));
  const std::optional<GgufBpePreset> preset = FindGgufBpePreset(pre);
  if (!preset) {
    *why = fmt::format("its pre-tokenizer \"{}\" is not one proctor knows", pre);
    return std::nullopt;
  }
  const Vocabulary v = ReadVocabulary(gguf, preset->add_bos);
  if (!NamesItsSpecialTokens(v, why)) return std::nullopt;
  ojson merges = ojson::array();
  for (const std::string_view merge : gguf.GetStringArray("tokenizer.ggml.merges")) {
    const size_t cut = merge.find(' ');
    if (cut == std::string_view::npos) {
      Fail("tokenizer", "{}: merge \"{}\" has no space between its two tokens", gguf.file_name(),
           merge);
    }
    merges.push_back({std::string(merge.substr(0, cut)), std::string(merge.substr(cut + 1))});
  }
  ojson pretokenizers = ojson::array();
  for (const std::string& regex : preset->regexes) {
    pretokenizers.push_back({{"type", "Split"},
                             {"pattern", {{"Regex", regex}}},
                             {"behavior", "Isolated"},
                             {"invert", false}});
  }
  pretokenizers.push_back({{"type", "ByteLevel"},
                           {"add_prefix_space", false},
                           {"trim_offsets", true},
                           {"use_regex", false}});
  ojson decoder = {{"type", "ByteLevel"},
                   {"add_prefix_space", true},
                   {"trim_offsets", true},
                   {"use_regex", true}};
  return Files(gguf, v, nullptr, {{"type", "Sequence"}, {"pretokenizers", pretokenizers}},
               std::move(decoder), ModelBpe(v, std::move(merges), false, preset->ignore_merges));
}

}  // namespace

std::optional<HfTokenizerFiles> GgufVocabAsHfTokenizer(const GgufFile& gguf, std::string* why) {
  const std::string_view model = gguf.FindString("tokenizer.ggml.model").value_or("");
  if (model == "gpt2") return ByteLevelBpe(gguf, why);
  if (model == "llama") return SentencePiece(gguf, why);
  *why = fmt::format(
      "its vocabulary is tokenizer.ggml.model \"{}\" (only byte-level BPE, \"gpt2\", and "
      "SentencePiece, \"llama\", have a tokenizer.json form here)",
      model);
  return std::nullopt;
}

std::vector<std::pair<std::string, std::string>> HfTokenizerFilesOf(
    const std::filesystem::path& gguf, std::string* why) {
  const std::optional<HfTokenizerFiles> files = GgufVocabAsHfTokenizer(*GgufFile::Open(gguf), why);
  if (!files) return {};
  return {{"tokenizer.json", files->tokenizer_json},
          {"tokenizer_config.json", files->tokenizer_config_json}};
}

}  // namespace proctor::text
