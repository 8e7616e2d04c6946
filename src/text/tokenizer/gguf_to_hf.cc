#include "text/tokenizer/gguf_to_hf.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "formats/gguf.h"
#include "text/tokenizer/gguf_presets.h"
#include "util/error.h"

namespace proctor::text {
namespace {

using ojson = nlohmann::ordered_json;

constexpr int64_t kControl = 3, kUserDefined = 4;  // llama.cpp's token types

std::optional<bool> FindBool(const GgufFile& gguf, std::string_view key) {
  const GgufValue* v = gguf.Find(key);
  if (v == nullptr) return std::nullopt;
  return v->AsBool();
}

// BOS / EOS around one sequence (and pairs) as the flags say.
ojson PostProcessor(bool add_bos, bool add_eos, const std::string& bos, int64_t bos_id,
                    const std::string& eos, int64_t eos_id) {
  if (!add_bos && !add_eos) return nullptr;
  auto sequence = [&](const char* name, int type_id) {
    ojson items = ojson::array();
    if (add_bos) items.push_back({{"SpecialToken", {{"id", bos}, {"type_id", type_id}}}});
    items.push_back({{"Sequence", {{"id", name}, {"type_id", type_id}}}});
    if (add_eos) items.push_back({{"SpecialToken", {{"id", eos}, {"type_id", type_id}}}});
    return items;
  };
  ojson pair = sequence("A", 0);
  for (auto& item : sequence("B", 1)) pair.push_back(item);
  ojson specials = ojson::object();
  if (add_bos) specials[bos] = {{"id", bos}, {"ids", {bos_id}}, {"tokens", {bos}}};
  if (add_eos) specials[eos] = {{"id", eos}, {"ids", {eos_id}}, {"tokens", {eos}}};
  return {{"type", "TemplateProcessing"},
          {"single", sequence("A", 0)},
          {"pair", pair},
          {"special_tokens", specials}};
}

}  // namespace

std::optional<HfTokenizerFiles> GgufVocabAsHfTokenizer(const GgufFile& gguf, std::string* why) {
  const std::string_view model = gguf.FindString("tokenizer.ggml.model").value_or("");
  if (model != "gpt2") {
    *why = fmt::format(
        "its vocabulary is tokenizer.ggml.model \"{}\" (only byte-level BPE, "
        "\"gpt2\", has a tokenizer.json form here)",
        model);
    return std::nullopt;
  }
  const std::string pre(gguf.FindString("tokenizer.ggml.pre").value_or("default"));
  const std::optional<GgufBpePreset> preset = FindGgufBpePreset(pre);
  if (!preset) {
    *why = fmt::format("its pre-tokenizer \"{}\" is not one proctor knows", pre);
    return std::nullopt;
  }
  const std::span<const std::string_view> tokens = gguf.GetStringArray("tokenizer.ggml.tokens");
  const std::vector<int64_t> types = gguf.Find("tokenizer.ggml.token_type")
                                         ? gguf.GetIntArray("tokenizer.ggml.token_type")
                                         : std::vector<int64_t>(tokens.size(), 1);
  ojson vocab = ojson::object();
  ojson added = ojson::array();
  for (size_t id = 0; id < tokens.size(); ++id) {
    const std::string token(tokens[id]);
    vocab[token] = id;
    const int64_t type = id < types.size() ? types[id] : 1;
    if (type == kControl || type == kUserDefined) {
      added.push_back({{"id", id},
                       {"content", token},
                       {"single_word", false},
                       {"lstrip", false},
                       {"rstrip", false},
                       {"normalized", false},
                       {"special", type == kControl}});
    }
  }
  ojson merges = ojson::array();
  for (const std::string_view merge : gguf.GetStringArray("tokenizer.ggml.merges")) {
    const size_t space = merge.find(' ');
    if (space == std::string_view::npos) {
      Fail("tokenizer", "{}: merge \"{}\" has no space between its two tokens", gguf.file_name(),
           merge);
    }
    merges.push_back({std::string(merge.substr(0, space)), std::string(merge.substr(space + 1))});
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
  const bool add_bos = FindBool(gguf, "tokenizer.ggml.add_bos_token").value_or(preset->add_bos);
  const bool add_eos = FindBool(gguf, "tokenizer.ggml.add_eos_token").value_or(false);
  const int64_t bos_id = gguf.FindInt("tokenizer.ggml.bos_token_id").value_or(-1);
  const int64_t eos_id = gguf.FindInt("tokenizer.ggml.eos_token_id").value_or(-1);
  auto token_at = [&](int64_t id) -> ojson {
    if (id < 0 || static_cast<size_t>(id) >= tokens.size()) return nullptr;
    return std::string(tokens[id]);
  };
  if ((add_bos && token_at(bos_id).is_null()) || (add_eos && token_at(eos_id).is_null())) {
    *why = "it adds BOS / EOS tokens it does not name";
    return std::nullopt;
  }
  ojson j;
  j["version"] = "1.0";
  j["truncation"] = nullptr;
  j["padding"] = nullptr;
  j["added_tokens"] = added;
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", pretokenizers}};
  j["post_processor"] = PostProcessor(add_bos, add_eos, add_bos ? std::string(tokens[bos_id]) : "",
                                      bos_id, add_eos ? std::string(tokens[eos_id]) : "", eos_id);
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
                {"ignore_merges", preset->ignore_merges},
                {"vocab", vocab},
                {"merges", merges}};
  ojson config = {{"tokenizer_class", "PreTrainedTokenizerFast"},
                  {"add_bos_token", add_bos},
                  {"add_eos_token", add_eos},
                  {"bos_token", token_at(bos_id)},
                  {"eos_token", token_at(eos_id)},
                  {"clean_up_tokenization_spaces", false}};
  if (const auto chat = gguf.FindString("tokenizer.chat_template")) {
    config["chat_template"] = std::string(*chat);
  }
  return HfTokenizerFiles{j.dump(1) + "\n", config.dump(2) + "\n"};
}

std::vector<std::pair<std::string, std::string>> HfTokenizerFilesOf(
    const std::filesystem::path& gguf, std::string* why) {
  const std::optional<HfTokenizerFiles> files = GgufVocabAsHfTokenizer(*GgufFile::Open(gguf), why);
  if (!files) return {};
  return {{"tokenizer.json", files->tokenizer_json},
          {"tokenizer_config.json", files->tokenizer_config_json}};
}

}  // namespace proctor::text
