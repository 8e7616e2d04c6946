// The pipeline stages of a Hugging Face tokenizer.json, built from their JSON objects:
// normalizers, pre-tokenizers, post-processors and decoders. Each reproduces the Rust
// `tokenizers` crate's behaviour on token ids (offsets are not tracked). Unknown types are an
// Error naming the type and the file.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/tokenizer/regex.h"

namespace proctor::text {

// A piece of normalized text on its way to the model. at_start: it begins at offset 0 of the
// original input (Metaspace's prepend_scheme "first" looks at this).
struct Piece {
  std::string text;
  bool at_start = false;
};

// A "pattern" object: {"String": s} (literal) or {"Regex": r} (PCRE2, UTF + UCP).
class Pattern {
 public:
  Pattern(const nlohmann::json& j, const std::string& where);
  // Matches as [begin, end) byte ranges, non-overlapping, in order.
  void FindAll(std::string_view s, std::vector<std::pair<size_t, size_t>>& out) const;

 private:
  std::string literal_;
  std::unique_ptr<Regex> regex_;
};

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // Normalizes s. at_origin (may be null) tracks whether the first character of s still maps to
  // the first character of the original text; it becomes false when leading text is removed
  // (Strip, Replace with nothing), as Rust's offsets_original().0 == 0.
  virtual void Apply(std::string& s, bool* at_origin) const = 0;
};
// null JSON -> nullptr.
std::unique_ptr<Normalizer> MakeNormalizer(const nlohmann::json& j, const std::string& source);

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Replaces `pieces` with their sub-pieces (empty pieces are dropped). `scratch` is reused.
  virtual void Apply(std::vector<Piece>& pieces, std::vector<Piece>& scratch) const = 0;
};
std::unique_ptr<PreTokenizer> MakePreTokenizer(const nlohmann::json& j, const std::string& source);

// Splits one piece given the pattern's matches (Hugging Face's NormalizedString::split).
void SplitPiece(const Piece& piece, const std::vector<std::pair<size_t, size_t>>& matches,
                SplitBehavior behavior, bool invert, std::vector<Piece>& out);

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // Adds the special tokens of a single sequence around `ids`.
  virtual void Apply(std::vector<int32_t>& ids) const = 0;
  // The special ids added before / after a single sequence (for bos/eos discovery).
  virtual std::vector<int32_t> Prefix() const { return {}; }
  virtual std::vector<int32_t> Suffix() const { return {}; }
};
std::unique_ptr<PostProcessor> MakePostProcessor(const nlohmann::json& j,
                                                 const std::string& source);

class Decoder {
 public:
  virtual ~Decoder() = default;
  // decode_chain: tokens in, tokens out (joined by the caller).
  virtual void Apply(std::vector<std::string>& tokens) const = 0;
};
std::unique_ptr<Decoder> MakeDecoder(const nlohmann::json& j, const std::string& source);

}  // namespace proctor::text
