#include "text/tokenizer/hf_to_gguf_vocab.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "formats/gguf_writer.h"
#include "text/tokenizer/gguf_presets.h"
#include "util/error.h"
#include "util/file.h"
#include "util/json_file.h"

namespace proctor::text {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr int32_t kNormal = 1, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6;

std::string ReplaceAll(const std::string& text, std::string_view from, std::string_view to) {
  std::string out;
  size_t done = 0;
  for (size_t at; (at = text.find(from, done)) != std::string::npos; done = at + from.size()) {
    out.append(text, done, at - done);
    out.append(to);
  }
  out.append(text, done);
  return out;
}

// Python's truth value of a JSON value (None, "", false, 0, [] and {} are false).
bool Truthy(const json& v) {
  if (v.is_null()) return false;
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_string()) return !v.get_ref<const std::string&>().empty();
  if (v.is_number()) return v.get<double>() != 0.0;
  return !v.empty();
}

// object[key], or null when `object` is not an object or has no such key (a reference into
// `object`, or to a static null).
const json& Get(const json& object, const char* key) {
  static const json kNull;
  if (!object.is_object()) return kNull;
  const auto found = object.find(key);
  return found == object.end() ? kNull : *found;
}

// `item`'s SpecialToken id in a TemplateProcessing template (null when it is not one).
const json& SpecialTokenId(const json& item) { return Get(Get(item, "SpecialToken"), "id"); }

// gguf-py's SpecialVocab: special token ids, add_* flags, the chat template and normalizer flags.
class SpecialVocab {
 public:
  // tc: tokenizer_config.json (null when absent), a copy that the post-processor's reading
  // completes as gguf-py's does.
  SpecialVocab(const fs::path& dir, const json& tokenizer, json tc, const json& config_json,
               std::optional<size_t> n_vocab, bool load_merges)
      : n_vocab_(n_vocab) {
    if (load_merges) ReadMerges(tokenizer);
    if (const json normalizer = Get(tokenizer, "normalizer"); Truthy(normalizer)) {
      ParseNormalizer(normalizer);
    }
    ReadPostProcessor(tokenizer, tc);
    if (Truthy(tc)) ReadTokenizerConfig(dir, tokenizer, tc);
    for (const std::string& type : types_) {
      json id = Get(config_json, (type + "_token_id").c_str());
      if (id.is_null()) id = Get(Get(config_json, "text_config"), (type + "_token_id").c_str());
      SetId(type, id);
    }
  }

  void AddTo(GgufMetadata& metadata) const {
    if (!merges_.empty()) metadata.SetStringArray("tokenizer.ggml.merges", merges_);
    static const std::map<std::string, std::string, std::less<>> kIdKeys = {
        {"bos", "bos_token_id"},       {"eos", "eos_token_id"},     {"unk", "unknown_token_id"},
        {"sep", "seperator_token_id"}, {"pad", "padding_token_id"}, {"mask", "mask_token_id"},
        {"eot", "eot_token_id"},       {"eom", "eom_token_id"}};
    for (const auto& [type, id] : ids_) {
      const auto key = kIdKeys.find(type);
      if (key != kIdKeys.end()) {
        metadata.SetUint32("tokenizer.ggml." + key->second, static_cast<uint32_t>(id));
      }
    }
    for (const auto& [type, add] : add_) {
      if (type == "bos" || type == "eos" || type == "sep") {
        metadata.SetBool("tokenizer.ggml.add_" + type + "_token", add);
      }
    }
    if (chat_template_) metadata.SetString("tokenizer.chat_template", *chat_template_);
    if (lowercase_) metadata.SetBool("tokenizer.ggml.normalizer.lowercase", *lowercase_);
    if (strip_accents_) {
      metadata.SetBool("tokenizer.ggml.normalizer.strip_accents", *strip_accents_);
    }
  }

  size_t merges() const { return merges_.size(); }

 private:
  void ReadMerges(const json& tokenizer) {
    const json merges = Get(Get(tokenizer, "model"), "merges");
    if (!merges.is_array()) return;
    merges_.reserve(merges.size());
    for (const json& m : merges) {
      if (m.is_string()) {
        merges_.push_back(m.get<std::string>());
        continue;
      }
      if (!m.is_array() || m.size() != 2 || !m[0].is_string() || !m[1].is_string()) {
        Fail("tokenizer", "tokenizer.json: merge {} is neither \"a b\" nor [\"a\", \"b\"]",
             m.dump());
      }
      merges_.push_back(ReplaceAll(m[0].get<std::string>(), " ", "\xC4\xA0") + " " +
                        ReplaceAll(m[1].get<std::string>(), " ", "\xC4\xA0"));  // U+0120
    }
  }

  void ParseNormalizer(const json& normalizer) {
    const std::string type = Get(normalizer, "type").is_string() ? normalizer["type"] : "";
    if (type == "Lowercase") {
      lowercase_ = true;
    } else if (type == "StripAccents") {
      strip_accents_ = true;
    } else if (type == "BertNormalizer") {
      if (normalizer.contains("lowercase")) lowercase_ = Truthy(normalizer["lowercase"]);
      if (normalizer.contains("strip_accents")) {
        strip_accents_ = Truthy(normalizer["strip_accents"]);
      }
    } else if (type == "Sequence") {
      for (const json& n : Get(normalizer, "normalizers")) ParseNormalizer(n);
    }
  }

  void SetAdd(const std::string& type, bool value, bool only_if_unset) {
    for (auto& [t, v] : add_) {
      if (t != type) continue;
      if (!only_if_unset) v = value;
      return;
    }
    add_.emplace_back(type, value);
  }

  void SetId(const std::string& type, const json& id) {
    if (!id.is_number_integer()) return;
    const int64_t value = id.get<int64_t>();
    if (value < 0) Fail("tokenizer", "special token {} has the invalid id {}", type, value);
    if (n_vocab_ && static_cast<size_t>(value) >= *n_vocab_) return;  // gguf-py skips it
    for (const auto& [t, v] : ids_) {
      if (t == type) return;
    }
    ids_.emplace_back(type, value);
  }

  // The post-processor's word on BOS / EOS / SEP (gguf-py's crude TemplateProcessing parse).
  void ReadPostProcessor(const json& tokenizer, json& tc) {
    json bos = Get(tc, "bos_token"), cls = Get(tc, "cls_token"), eos = Get(tc, "eos_token"),
         sep = Get(tc, "sep_token");
    if (!Truthy(bos) && Truthy(cls) && Truthy(tc)) tc["bos_token"] = bos = cls;
    if (!Truthy(eos) && Truthy(sep) && Truthy(tc)) tc["eos_token"] = eos = sep;
    const json post = Get(tokenizer, "post_processor");
    if (!Truthy(post)) return;
    const json processors = post.contains("processors") ? post["processors"] : json::array({post});
    for (const json& processor : processors) {
      const json type = Get(processor, "type");
      if (type == "ByteLevel") {
        SetAdd("bos", false, true);
        SetAdd("eos", false, true);
      } else if (type == "RobertaProcessing") {
        SetAdd("bos", true, false);
        SetAdd("eos", true, false);
        SetAdd("sep", true, false);
        if (!Truthy(cls) && Truthy(tc)) {
          const json c = Get(processor, "cls");
          tc["cls_token"] = cls = c.is_array() && !c.empty() ? c[0] : bos;
        }
        if (!Truthy(sep) && Truthy(tc)) {
          const json s = Get(processor, "sep");
          tc["sep_token"] = sep = s.is_array() && !s.empty() ? s[0] : eos;
        }
      } else if (type == "TemplateProcessing") {
        ReadTemplate(processor, tc, bos, cls, eos, sep);
      }
    }
  }

  void ReadTemplate(const json& processor, json& tc, json& bos, json& cls, json& eos,
                    const json& sep) {
    const json single = Get(processor, "single");
    json pair = Get(processor, "pair");
    json first, last;
    if (single.is_array() && single.size() > 1) {
      first = SpecialTokenId(single.front());
      if (Truthy(first)) {
        if (!Truthy(tc)) {
          bos = first;
        } else if (first != bos && first != cls) {
          if (!Truthy(bos)) tc["bos_token"] = bos = first;
          if (!Truthy(cls)) tc["cls_token"] = cls = first;
        }
        SetAdd("bos", first == bos || first == cls, false);
      }
      last = SpecialTokenId(single.back());
      if (Truthy(last)) {
        if (!Truthy(tc)) {
          eos = last;
        } else if (last != eos) {
          for (const char* extra : {"eot", "eom"}) {
            if (std::find(types_.begin(), types_.end(), extra) != types_.end()) continue;
            types_.emplace_back(extra);
            tc[std::string(extra) + "_token"] = eos;
            break;
          }
          tc["eos_token"] = eos = last;
        }
        SetAdd("eos", last == eos, false);
      }
    }
    if (!pair.is_array() || pair.empty()) return;
    const size_t start = Truthy(first) && SpecialTokenId(pair.front()) == first ? 1 : 0;
    const size_t stop =
        Truthy(last) && SpecialTokenId(pair.back()) == last ? pair.size() - 1 : pair.size();
    if (start >= stop) return;
    const json inner(pair.begin() + static_cast<ptrdiff_t>(start),
                     pair.begin() + static_cast<ptrdiff_t>(stop));
    const json a = Get(Get(inner.front(), "Sequence"), "id");
    const json b = Get(Get(inner.back(), "Sequence"), "id");
    if (a != "A" || b != "B" || inner.size() <= 2) return;
    bool add_sep = false;
    const json entry = SpecialTokenId(inner[1]);
    if (Truthy(entry) && (entry == sep || entry == eos) && !Truthy(last)) add_sep = true;
    if (inner.size() == 4) {
      const json second = SpecialTokenId(inner[2]);
      if (Truthy(second) && (second == sep || second == eos)) add_sep = true;
    }
    SetAdd("sep", add_sep, false);
    if (add_sep && !Truthy(sep) && Truthy(tc)) tc["sep_token"] = eos;
  }

  void ReadTokenizerConfig(const fs::path& dir, const json& tokenizer, const json& tc) {
    json chat_template;
    const fs::path jinja = dir / "chat_template.jinja";
    if (fs::exists(jinja)) chat_template = ReadFileToString(jinja);
    if (tc.contains("chat_template")) chat_template = tc["chat_template"];
    if (chat_template.is_array()) {
      Fail("tokenizer",
           "{}: several named chat templates; proctor writes a GGUF with one "
           "(tokenizer.chat_template)",
           (dir / "tokenizer_config.json").string());
    }
    if (chat_template.is_string()) chat_template_ = chat_template.get<std::string>();
    const json added = Get(tokenizer, "added_tokens");
    for (const std::string& type : types_) {
      if (const json add = Get(tc, ("add_" + type + "_token").c_str()); add.is_boolean()) {
        SetAdd(type, add.get<bool>(), true);
      }
      const json entry = Get(tc, (type + "_token").c_str());
      json content = entry.is_object() ? Get(entry, "content") : entry;
      if (!content.is_string()) continue;
      json id;
      for (const json& token : added) {
        if (Get(token, "content") == content) {
          id = Get(token, "id");
          break;
        }
      }
      SetId(type, id);
    }
  }

  std::optional<size_t> n_vocab_;
  std::vector<std::string> types_ = {"bos", "eos", "unk", "sep", "pad", "cls", "mask"};
  std::vector<std::pair<std::string, int64_t>> ids_;
  std::vector<std::pair<std::string, bool>> add_;
  std::vector<std::string> merges_;
  std::optional<std::string> chat_template_;
  std::optional<bool> lowercase_, strip_accents_;
};

// id -> token text of the model vocabulary and the added tokens (an added token wins).
std::unordered_map<int64_t, std::string> TokensById(const json& tokenizer) {
  std::unordered_map<int64_t, std::string> by_id;
  const json vocab = Get(Get(tokenizer, "model"), "vocab");
  for (const auto& [text, id] : vocab.items()) by_id[id.get<int64_t>()] = text;
  for (const json& t : Get(tokenizer, "added_tokens")) {
    by_id[t.at("id").get<int64_t>()] = t.at("content").get<std::string>();
  }
  return by_id;
}

bool LooksSpecial(const std::string& t) {
  auto wraps = [&](std::string_view open, std::string_view close) {
    return t.size() >= open.size() + close.size() && t.starts_with(open) && t.ends_with(close);
  };
  return t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]" || wraps("<|", "|>") ||
         wraps("<\xEF\xBD\x9C", "\xEF\xBD\x9C>") || wraps("<unused", ">");
}

// The pre-tokenizer's regexes in llama.cpp's order: each Split (isolated), and GPT-2's when a
// ByteLevel step splits with its own regex.
std::vector<std::string> PreTokenizerRegexes(const json& pre, const fs::path& file) {
  // ByteLevel's own split is llama.cpp's "gpt-2" preset regex.
  static const std::string kGpt2 = FindGgufBpePreset("gpt-2")->regexes.front();
  std::vector<std::string> regexes;
  const json steps =
      Get(pre, "type") == "Sequence" ? Get(pre, "pretokenizers") : json::array({pre});
  for (const json& step : steps) {
    const json type = Get(step, "type");
    if (type == "ByteLevel") {
      if (Get(step, "use_regex") != false) regexes.push_back(kGpt2);
    } else if (type == "Split" && Get(step, "behavior") == "Isolated" &&
               Get(step, "invert") != true && Get(Get(step, "pattern"), "Regex").is_string()) {
      regexes.push_back(step["pattern"]["Regex"].get<std::string>());
    } else {
      Fail("tokenizer",
           "{}: pre-tokenizer step {} has no llama.cpp form (proctor writes GGUF vocabularies for "
           "isolated Split regexes and ByteLevel)",
           file.string(), step.dump());
    }
  }
  return regexes;
}

// llama.cpp writes the case-insensitive contractions group out by hand.
std::string AsLlamaCppRegex(std::string regex) {
  const std::string hf = "(?i:'s|'t|'re|'ve|'m|'ll|'d)";
  const std::string cpp = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])";
  if (const size_t at = regex.find(hf); at != std::string::npos) regex.replace(at, hf.size(), cpp);
  return regex;
}

std::string PresetFor(const json& tokenizer, const fs::path& file) {
  std::vector<std::string> regexes = PreTokenizerRegexes(Get(tokenizer, "pre_tokenizer"), file);
  for (std::string& r : regexes) r = AsLlamaCppRegex(r);
  const bool ignore_merges = Get(Get(tokenizer, "model"), "ignore_merges") == true;
  for (const auto& [name, preset] : GgufBpePresetsByName()) {
    if (preset.regexes == regexes && preset.ignore_merges == ignore_merges) return name;
  }
  std::string listed;
  for (const std::string& r : regexes) listed += "\n  " + r;
  Fail("tokenizer",
       "{}: no llama.cpp pre-tokenizer preset splits as this tokenizer does (ignore_merges {}, "
       "regexes:{}\n); proctor knows {}",
       file.string(), ignore_merges, listed, GgufBpePresetNames());
}

GgufVocabSummary ByteLevelBpe(const fs::path& dir, const json& tokenizer, const json& tc,
                              const json& config, int64_t vocab_size, GgufMetadata& metadata) {
  const fs::path file = dir / "tokenizer.json";
  const std::string pre = PresetFor(tokenizer, file);
  const std::unordered_map<int64_t, std::string> by_id = TokensById(tokenizer);
  std::unordered_map<std::string, const json*> added;
  std::unordered_map<int64_t, const json*> added_by_id;
  for (const json& t : Get(tokenizer, "added_tokens")) {
    added.emplace(t.at("content").get<std::string>(), &t);
    added_by_id.emplace(t.at("id").get<int64_t>(), &t);
  }
  for (const auto& [id, text] : by_id) {
    if (id >= vocab_size) {
      Fail("tokenizer", "{}: token {} \"{}\" is beyond the model's vocab_size {}", file.string(),
           id, text, vocab_size);
    }
  }
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  tokens.reserve(vocab_size);
  types.reserve(vocab_size);
  for (int64_t id = 0; id < vocab_size; ++id) {
    const auto found = by_id.find(id);
    if (found == by_id.end()) {
      tokens.push_back(fmt::format("[PAD{}]", id));
      types.push_back(kUnused);
      continue;
    }
    std::string token = found->second;
    const auto a = added.find(token);
    if (a == added.end()) {
      types.push_back(kNormal);
    } else {
      const auto own = added_by_id.find(id);
      const json& entry = own != added_by_id.end() ? *own->second : *a->second;
      if (Get(entry, "special") == true || LooksSpecial(token)) {
        types.push_back(kControl);
      } else {
        token = ReplaceAll(token, "\xE2\x96\x81", " ");
        types.push_back(kUserDefined);
      }
    }
    tokens.push_back(std::move(token));
  }
  metadata.SetString("tokenizer.ggml.model", "gpt2");
  metadata.SetString("tokenizer.ggml.pre", pre);
  metadata.SetStringArray("tokenizer.ggml.tokens", tokens);
  metadata.SetInt32Array("tokenizer.ggml.token_type", types);
  const SpecialVocab special(dir, tokenizer, tc, config, std::nullopt, true);
  special.AddTo(metadata);
  return {"gpt2", pre, tokens.size(), special.merges()};
}

bool IsByteToken(const std::string& t) {
  return t.size() == 6 && t.starts_with("<0x") && t.back() == '>' &&
         std::isxdigit(static_cast<unsigned char>(t[3])) &&
         std::isxdigit(static_cast<unsigned char>(t[4]));
}

// The ids tokenizer_config.json (`tc`) names as special (bos ... mask and the additional ones).
std::unordered_set<int64_t> SpecialIds(const json& tokenizer, const json& tc) {
  std::unordered_map<std::string, int64_t> ids;
  for (const auto& [text, id] : Get(Get(tokenizer, "model"), "vocab").items()) {
    ids[text] = id.get<int64_t>();
  }
  for (const json& t : Get(tokenizer, "added_tokens")) {
    ids[t.at("content").get<std::string>()] = t.at("id").get<int64_t>();
  }
  std::unordered_set<int64_t> special;
  auto add = [&](const json& entry) {
    const json content = entry.is_object() ? Get(entry, "content") : entry;
    if (!content.is_string()) return;
    const auto found = ids.find(content.get<std::string>());
    if (found != ids.end()) special.insert(found->second);
  };
  for (const char* type : {"bos", "eos", "unk", "sep", "pad", "cls", "mask"}) {
    add(Get(tc, (std::string(type) + "_token").c_str()));
  }
  for (const char* list : {"additional_special_tokens", "extra_special_tokens"}) {
    for (const json& entry : Get(tc, list)) add(entry);
  }
  return special;
}

GgufVocabSummary SentencePieceBpe(const fs::path& dir, const json& tokenizer, const json& tc,
                                  const json& config, GgufMetadata& metadata) {
  const json& vocab = tokenizer["model"]["vocab"];
  const size_t base = vocab.size();
  std::vector<std::string> tokens(base);
  for (const auto& [text, id] : vocab.items()) {
    const int64_t i = id.get<int64_t>();
    if (i < 0 || static_cast<size_t>(i) >= base || !tokens[i].empty()) {
      Fail("tokenizer", "{}: vocabulary id {} of \"{}\" is not one of 0..{} exactly once",
           (dir / "tokenizer.json").string(), i, text, base - 1);
    }
    tokens[i] = text;
  }
  std::vector<std::pair<int64_t, std::string>> beyond;
  for (const json& t : Get(tokenizer, "added_tokens")) {
    const int64_t id = t.at("id").get<int64_t>();
    if (static_cast<size_t>(id) >= base)
      beyond.emplace_back(id, t.at("content").get<std::string>());
  }
  std::sort(beyond.begin(), beyond.end());
  // Scores from the merge ranks: the first merge that makes a token.
  std::unordered_map<std::string, size_t> first_rank;
  const json merges = Get(tokenizer["model"], "merges");
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const json& m = merges[rank];
    std::string made;
    if (m.is_string()) {
      const std::string& s = m.get_ref<const std::string&>();
      const size_t space = s.find(' ');
      made = space == std::string::npos ? s : s.substr(0, space) + s.substr(space + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      made = m[0].get<std::string>() + m[1].get<std::string>();
    }
    first_rank.emplace(std::move(made), rank);
  }
  const std::unordered_set<int64_t> special = SpecialIds(tokenizer, tc);
  std::vector<float> scores;
  std::vector<int32_t> types;
  auto score_of = [&](const std::string& t) {
    const auto r = first_rank.find(t);
    return -static_cast<float>(r == first_rank.end() ? merges.size() + 1 : r->second);
  };
  for (size_t id = 0; id < base; ++id) {
    scores.push_back(score_of(tokens[id]));
    types.push_back(IsByteToken(tokens[id])                   ? kByte
                    : special.count(static_cast<int64_t>(id)) ? kControl
                                                              : kNormal);
  }
  for (const auto& [id, text] : beyond) {
    tokens.push_back(text);
    scores.push_back(score_of(text));
    types.push_back(special.count(id) != 0 ? kControl : kUserDefined);
  }
  metadata.SetString("tokenizer.ggml.model", "llama");
  metadata.SetString("tokenizer.ggml.pre", "default");
  metadata.SetStringArray("tokenizer.ggml.tokens", tokens);
  metadata.SetFloat32Array("tokenizer.ggml.scores", scores);
  metadata.SetInt32Array("tokenizer.ggml.token_type", types);
  SpecialVocab(dir, tokenizer, tc, config, tokens.size(), false).AddTo(metadata);
  return {"llama", "default", tokens.size(), 0};
}

GgufVocabSummary AddVocabulary(const fs::path& model_dir, const json& config, int64_t vocab_size,
                               GgufMetadata& metadata) {
  const fs::path file = model_dir / "tokenizer.json";
  if (!fs::exists(file)) {
    Fail("tokenizer",
         "{}: no tokenizer.json, and a GGUF carries its vocabulary (llama.cpp cannot tokenize "
         "without one); put the model's tokenizer.json and tokenizer_config.json there",
         model_dir.string());
  }
  const json tokenizer = ReadJsonFile(file, "tokenizer");
  const json model = Get(tokenizer, "model");
  if (Get(model, "type") != "BPE" || !Get(model, "vocab").is_object()) {
    Fail("tokenizer",
         "{}: model type {} has no GGUF form in proctor (byte-level and SentencePiece-style BPE "
         "do)",
         file.string(), Get(model, "type").dump());
  }
  const fs::path tc_path = model_dir / "tokenizer_config.json";
  const json tc = fs::exists(tc_path) ? ReadJsonFile(tc_path, "tokenizer") : json();
  if (const json add_prefix_space = Get(tc, "add_prefix_space"); add_prefix_space.is_boolean()) {
    metadata.SetBool("tokenizer.ggml.add_space_prefix", add_prefix_space.get<bool>());
  }
  if (Get(model, "byte_fallback") == true && Get(Get(tokenizer, "decoder"), "type") == "Sequence") {
    return SentencePieceBpe(model_dir, tokenizer, tc, config, metadata);
  }
  return ByteLevelBpe(model_dir, tokenizer, tc, config, vocab_size, metadata);
}

}  // namespace

GgufVocabSummary AddHfTokenizerAsGgufVocab(const fs::path& model_dir, const json& config,
                                           int64_t vocab_size, GgufMetadata& metadata) {
  try {
    return AddVocabulary(model_dir, config, vocab_size, metadata);
  } catch (const json::exception& e) {
    Fail("tokenizer", "{}: a tokenizer file is not as Hugging Face writes it ({})",
         model_dir.string(), e.what());
  }
}

}  // namespace proctor::text
