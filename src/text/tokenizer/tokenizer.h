// The one tokenizer interface every model vocabulary implements (tokenizer.json, GGUF "llama"
// and "gpt2" vocabularies), and LoadTokenizer, which picks the right one for a path.
//
// The encoding rule the evals rely on: text rendered by a chat template already contains BOS, so
// encode it with add_special_tokens = false; raw text is encoded with add_special_tokens = true
// (the tokenizer.json post-processor or the GGUF add_bos/add_eos flags decide what is added).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace proctor::text {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Token ids of text (valid UTF-8, else Error). Special tokens written inside the text are
  // recognised; add_special_tokens adds BOS/EOS as the vocabulary prescribes.
  virtual std::vector<int32_t> Encode(std::string_view text, bool add_special_tokens) const = 0;
  // Text of ids; unknown ids are skipped. skip_special_tokens drops special (control) tokens.
  virtual std::string Decode(std::span<const int32_t> ids, bool skip_special_tokens) const = 0;

  // -1 when the token does not exist.
  virtual int32_t TokenToId(std::string_view token) const = 0;
  // nullopt when the id has no token.
  virtual std::optional<std::string> IdToToken(int32_t id) const = 0;
  // One past the largest token id (the logits width a model needs at least).
  virtual size_t VocabSize() const = 0;
  virtual bool IsSpecial(int32_t id) const = 0;
  // -1 when the vocabulary has none.
  virtual int32_t BosId() const = 0;
  virtual int32_t EosId() const = 0;
  // A short description: kind and source ("tokenizer.json (BPE) /path/...").
  virtual std::string Describe() const = 0;
};

// Loads a tokenizer from: a folder with tokenizer.json (+ tokenizer_config.json for bos/eos),
// a tokenizer.json file, or a .gguf file (vocabulary-only files included). A folder without
// tokenizer.json but with exactly one .gguf file loads that file.
std::unique_ptr<Tokenizer> LoadTokenizer(const std::filesystem::path& path);

// tokenizer.json text (config_json may be empty). `source` names the file in errors.
std::unique_ptr<Tokenizer> LoadHfTokenizer(std::string_view tokenizer_json,
                                           std::string_view config_json, const std::string& source);

}  // namespace proctor::text
