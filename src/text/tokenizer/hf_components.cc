// tokenizer.json pipeline stages, part 1: the shared JSON field helpers (hf_component_util.h),
// normalizers and pre-tokenizers (see hf_components.h; post-processors and decoders are in
// hf_decoders.cc).
#include "text/tokenizer/hf_components.h"

#include <fmt/format.h>

#include <algorithm>

#include "text/tokenizer/hf_component_util.h"
#include "text/tokenizer/unicode.h"
#include "util/error.h"
#include "util/utf8.h"

namespace proctor::text {

namespace {

using json = nlohmann::json;
using Ranges = std::vector<std::pair<size_t, size_t>>;

}  // namespace

// ---- shared helpers (hf_component_util.h) ----

std::string TypeOf(const json& j, const std::string& where) {
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) {
    Fail("tokenizer", "{}: {} has no \"type\"", where, j.dump().substr(0, 200));
  }
  return j["type"].get<std::string>();
}

bool GetBool(const json& j, const char* key, bool fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) Fail("tokenizer", "\"{}\" is not a boolean: {}", key, it->dump());
  return it->get<bool>();
}

std::string GetString(const json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) {
    Fail("tokenizer", "{}: {} needs a string \"{}\"", where, TypeOf(j, where), key);
  }
  return it->get<std::string>();
}

[[noreturn]] void Unsupported(const char* stage, const std::string& type,
                              const std::string& where) {
  Fail("tokenizer", "{}: {} type \"{}\" is not supported", where, stage, type);
}

size_t GrowthLimit(size_t input_bytes) { return input_bytes * 16 + 4096; }

void CheckGrowth(size_t input_bytes, size_t output_bytes, std::string_view step,
                 const std::string& where) {
  if (output_bytes > GrowthLimit(input_bytes)) {
    Fail("tokenizer",
         "{}: {} would grow a {}-byte text to {} bytes, more than the {} allowed (16 times, plus "
         "4096)",
         where, step, input_bytes, output_bytes, GrowthLimit(input_bytes));
  }
}

std::string ReplaceAll(std::string_view s, const Pattern& pattern, std::string_view content,
                       const std::string& where) {
  thread_local Ranges matches;
  pattern.FindAll(s, matches);
  if (matches.empty()) return std::string(s);
  size_t removed = 0;
  for (auto [b, e] : matches) removed += e - b;
  const size_t out_bytes = s.size() - removed + matches.size() * content.size();
  CheckGrowth(s.size(), out_bytes, "Replace", where);
  std::string out;
  out.reserve(out_bytes);
  size_t prev = 0;
  for (auto [b, e] : matches) {
    out.append(s.substr(prev, b - prev));
    out.append(content);
    prev = e;
  }
  out.append(s.substr(prev));
  return out;
}

PrependScheme ParsePrependScheme(const json& j, const std::string& where) {
  auto it = j.find("prepend_scheme");
  if (it != j.end() && !it->is_null()) {
    std::string s = it->get<std::string>();
    if (s == "always") return PrependScheme::kAlways;
    if (s == "first") return PrependScheme::kFirst;
    if (s == "never") return PrependScheme::kNever;
    Fail("tokenizer", "{}: Metaspace prepend_scheme \"{}\" is not always, first or never", where,
         s);
  }
  // Older files: add_prefix_space true = always.
  return GetBool(j, "add_prefix_space", true) ? PrependScheme::kAlways : PrependScheme::kNever;
}

char32_t ParseReplacement(const json& j, const std::string& where) {
  std::string r = GetString(j, "replacement", where);
  size_t pos = 0;
  char32_t cp = r.empty() ? 0 : DecodeUtf8(r, &pos, InvalidByte::kFlagged);
  if (r.empty() || pos != r.size()) {
    Fail("tokenizer", "{}: Metaspace replacement '{}' is not one character", where, r);
  }
  return cp;
}

const json& ArrayField(const json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_array()) {
    Fail("tokenizer", "{}: Sequence needs an array \"{}\"", where, key);
  }
  return *it;
}

namespace {

// Per-character matches for a predicate (Rust's `impl Pattern for Fn(char) -> bool`).
template <typename Pred>
void CharMatches(std::string_view s, Pred pred, Ranges& out) {
  out.clear();
  size_t pos = 0;
  while (pos < s.size()) {
    size_t start = pos;
    char32_t cp = DecodeUtf8(s, &pos, InvalidByte::kFlagged);
    if (pred(cp)) out.emplace_back(start, pos);
  }
}

// ------------------------------------------------------------------ normalizers

class UnicodeNormalizer : public Normalizer {
 public:
  explicit UnicodeNormalizer(NormalForm form) : form_(form) {}
  void Apply(std::string& s, bool* at_origin) const override { s = Normalize(s, form_); }

 private:
  NormalForm form_;
};

class LowercaseNormalizer : public Normalizer {
 public:
  void Apply(std::string& s, bool* at_origin) const override { s = Lowercase(s); }
};

class PrependNormalizer : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prefix) : prefix_(std::move(prefix)) {}
  void Apply(std::string& s, bool* at_origin) const override {
    if (!s.empty()) s.insert(0, prefix_);
  }

 private:
  std::string prefix_;
};

class ReplaceNormalizer : public Normalizer {
 public:
  ReplaceNormalizer(const json& j, const std::string& where)
      : pattern_(j.at("pattern"), where), content_(GetString(j, "content", where)), where_(where) {}
  void Apply(std::string& s, bool* at_origin) const override {
    if (at_origin && content_.empty()) {
      thread_local Ranges matches;
      pattern_.FindAll(s, matches);
      if (!matches.empty() && matches[0].first == 0) *at_origin = false;
    }
    s = ReplaceAll(s, pattern_, content_, where_);
  }

 private:
  Pattern pattern_;
  std::string content_;
  std::string where_;
};

class StripNormalizer : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  void Apply(std::string& s, bool* at_origin) const override {
    size_t pos = 0, first = std::string::npos, last_end = 0;
    while (pos < s.size()) {
      size_t start = pos;
      if (!IsWhitespace(DecodeUtf8(s, &pos, InvalidByte::kFlagged))) {
        if (first == std::string::npos) first = start;
        last_end = pos;
      }
    }
    size_t begin = left_ ? (first == std::string::npos ? s.size() : first) : 0;
    size_t end = right_ ? (first == std::string::npos ? 0 : last_end) : s.size();
    if (at_origin && begin > 0) *at_origin = false;
    s = end > begin ? s.substr(begin, end - begin) : std::string();
  }

 private:
  bool left_, right_;
};

class SequenceNormalizer : public Normalizer {
 public:
  SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> parts, std::string where)
      : parts_(std::move(parts)), where_(std::move(where)) {}
  void Apply(std::string& s, bool* at_origin) const override {
    const size_t input_bytes = s.size();
    for (const auto& p : parts_) {
      p->Apply(s, at_origin);
      CheckGrowth(input_bytes, s.size(), "the normalizer Sequence", where_);
    }
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> parts_;
  std::string where_;
};

// ------------------------------------------------------------------ pre-tokenizers

SplitBehavior ParseBehavior(const json& j, const std::string& where, SplitBehavior fallback) {
  auto it = j.find("behavior");
  if (it == j.end() || it->is_null()) return fallback;
  std::string b = it->is_string() ? it->get<std::string>() : it->dump();
  if (b == "Removed") return SplitBehavior::kRemoved;
  if (b == "Isolated") return SplitBehavior::kIsolated;
  if (b == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (b == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (b == "Contiguous") return SplitBehavior::kContiguous;
  Fail("tokenizer",
       "{}: split behavior \"{}\" is not one of Removed, Isolated, "
       "MergedWithPrevious, MergedWithNext, Contiguous",
       where, b);
}

// Applies `split(piece) -> matches` to every piece.
template <typename MatchFn>
void SplitAll(std::vector<Piece>& pieces, std::vector<Piece>& scratch, SplitBehavior behavior,
              bool invert, MatchFn find) {
  thread_local Ranges matches;
  scratch.clear();
  for (const Piece& p : pieces) {
    find(p.text, matches);
    SplitPiece(p, matches, behavior, invert, scratch);
  }
  pieces.swap(scratch);
}

const char kGpt2Pattern[] =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class ByteLevelPreTokenizer : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, bool use_regex)
      : add_prefix_space_(add_prefix_space) {
    if (use_regex) regex_ = std::make_unique<Regex>(kGpt2Pattern);
  }
  void Apply(std::vector<Piece>& pieces, std::vector<Piece>& scratch) const override {
    if (add_prefix_space_) {
      for (Piece& p : pieces) {
        if (p.text.empty() || p.text[0] != ' ') p.text = " " + p.text;
      }
    }
    if (regex_) {
      SplitAll(pieces, scratch, SplitBehavior::kIsolated, false,
               [this](std::string_view s, Ranges& m) { regex_->FindAll(s, m); });
    }
    std::string mapped;
    for (Piece& p : pieces) {
      mapped.clear();
      AppendByteLevel(mapped, p.text);
      p.text.swap(mapped);
    }
  }

 private:
  bool add_prefix_space_;
  std::unique_ptr<Regex> regex_;
};

class SplitPreTokenizer : public PreTokenizer {
 public:
  SplitPreTokenizer(const json& j, const std::string& where)
      : pattern_(j.at("pattern"), where),
        behavior_(ParseBehavior(j, where, SplitBehavior::kRemoved)),
        invert_(GetBool(j, "invert", false)) {
    if (!j.contains("behavior")) Fail("tokenizer", "{}: Split has no \"behavior\"", where);
  }
  void Apply(std::vector<Piece>& pieces, std::vector<Piece>& scratch) const override {
    SplitAll(pieces, scratch, behavior_, invert_,
             [this](std::string_view s, Ranges& m) { pattern_.FindAll(s, m); });
  }

 private:
  Pattern pattern_;
  SplitBehavior behavior_;
  bool invert_;
};

class MetaspacePreTokenizer : public PreTokenizer {
 public:
  MetaspacePreTokenizer(const json& j, const std::string& where)
      : replacement_(ParseReplacement(j, where)),
        scheme_(ParsePrependScheme(j, where)),
        split_(GetBool(j, "split", true)) {
    AppendUtf8(replacement_, &replacement_utf8_);
  }
  void Apply(std::vector<Piece>& pieces, std::vector<Piece>& scratch) const override {
    std::string replaced;
    for (Piece& p : pieces) {
      replaced.clear();
      for (char c : p.text) {
        if (c == ' ') {
          replaced += replacement_utf8_;
        } else {
          replaced.push_back(c);
        }
      }
      bool starts = replaced.compare(0, replacement_utf8_.size(), replacement_utf8_) == 0;
      if (!starts &&
          (scheme_ == PrependScheme::kAlways || (scheme_ == PrependScheme::kFirst && p.at_start))) {
        replaced.insert(0, replacement_utf8_);
      }
      p.text.swap(replaced);
    }
    if (split_) {
      char32_t r = replacement_;
      SplitAll(pieces, scratch, SplitBehavior::kMergedWithNext, false,
               [r](std::string_view s, Ranges& m) {
                 CharMatches(
                     s, [r](char32_t c) { return c == r; }, m);
               });
    }
  }

 private:
  char32_t replacement_;
  std::string replacement_utf8_;
  PrependScheme scheme_;
  bool split_;
};

template <typename Pred>
class CharSplitPreTokenizer : public PreTokenizer {
 public:
  CharSplitPreTokenizer(Pred pred, SplitBehavior behavior) : pred_(pred), behavior_(behavior) {}
  void Apply(std::vector<Piece>& pieces, std::vector<Piece>& scratch) const override {
    SplitAll(pieces, scratch, behavior_, false,
             [this](std::string_view s, Ranges& m) { CharMatches(s, pred_, m); });
  }

 private:
  Pred pred_;
  SplitBehavior behavior_;
};
template <typename Pred>
std::unique_ptr<PreTokenizer> MakeCharSplit(Pred pred, SplitBehavior behavior) {
  return std::make_unique<CharSplitPreTokenizer<Pred>>(pred, behavior);
}

class WhitespacePreTokenizer : public PreTokenizer {
 public:
  // \w as the Rust regex crate defines it (Unicode TR18): Alphabetic, marks, decimal digits,
  // connector punctuation and join controls; PCRE2's \w lacks marks and join controls.
  WhitespacePreTokenizer()
      : regex_(R"([\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\x{200C}\x{200D}]+|)"
               R"([^\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\x{200C}\x{200D}\s]+)") {}
  void Apply(std::vector<Piece>& pieces, std::vector<Piece>& scratch) const override {
    // split(Invert(regex), Removed): keeps exactly the matches.
    SplitAll(pieces, scratch, SplitBehavior::kRemoved, true,
             [this](std::string_view s, Ranges& m) { regex_.FindAll(s, m); });
  }

 private:
  Regex regex_;
};

class SequencePreTokenizer : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> parts)
      : parts_(std::move(parts)) {}
  void Apply(std::vector<Piece>& pieces, std::vector<Piece>& scratch) const override {
    for (const auto& p : parts_) p->Apply(pieces, scratch);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

}  // namespace

Pattern::Pattern(const json& j, const std::string& where) {
  if (j.contains("String") && j["String"].is_string()) {
    literal_ = j["String"].get<std::string>();
    if (literal_.empty()) Fail("tokenizer", "{}: empty String pattern", where);
  } else if (j.contains("Regex") && j["Regex"].is_string()) {
    regex_ = std::make_unique<Regex>(j["Regex"].get<std::string>());
  } else {
    Fail("tokenizer", "{}: pattern {} is neither {{\"String\": ...}} nor {{\"Regex\": ...}}", where,
         j.dump());
  }
}

void Pattern::FindAll(std::string_view s, Ranges& out) const {
  if (regex_) {
    regex_->FindAll(s, out);
    return;
  }
  out.clear();
  size_t pos = 0;
  while ((pos = s.find(literal_, pos)) != std::string_view::npos) {
    out.emplace_back(pos, pos + literal_.size());
    pos += literal_.size();
  }
}

void SplitPiece(const Piece& piece, const Ranges& matches, SplitBehavior behavior, bool invert,
                std::vector<Piece>& out) {
  // (range, is_match) covering the whole text, as Rust's Pattern::find_matches.
  thread_local std::vector<std::pair<std::pair<size_t, size_t>, bool>> parts;
  parts.clear();
  const std::string& s = piece.text;
  size_t prev = 0;
  for (auto [b, e] : matches) {
    if (prev != b) parts.push_back({{prev, b}, false});
    parts.push_back({{b, e}, true});
    prev = e;
  }
  if (prev != s.size()) parts.push_back({{prev, s.size()}, false});
  if (invert) {
    for (auto& p : parts) p.second = !p.second;
  }
  thread_local std::vector<std::pair<size_t, size_t>> kept;
  kept.clear();
  switch (behavior) {
    case SplitBehavior::kRemoved:
      for (auto& [r, m] : parts) {
        if (!m) kept.push_back(r);
      }
      break;
    case SplitBehavior::kIsolated:
      for (auto& [r, m] : parts) kept.push_back(r);
      break;
    case SplitBehavior::kMergedWithPrevious: {
      bool previous_match = false;
      for (auto& [r, m] : parts) {
        if (m && !previous_match && !kept.empty()) {
          kept.back().second = r.second;
        } else {
          kept.push_back(r);
        }
        previous_match = m;
      }
      break;
    }
    case SplitBehavior::kMergedWithNext: {
      bool previous_match = false;
      for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
        auto& [r, m] = *it;
        if (m && !previous_match && !kept.empty()) {
          kept.back().first = r.first;
        } else {
          kept.push_back(r);
        }
        previous_match = m;
      }
      std::reverse(kept.begin(), kept.end());
      break;
    }
    case SplitBehavior::kContiguous: {
      bool previous_match = false;
      for (auto& [r, m] : parts) {
        if (m == previous_match && !kept.empty()) {
          kept.back().second = r.second;
        } else {
          kept.push_back(r);
        }
        previous_match = m;
      }
      break;
    }
  }
  for (auto [b, e] : kept) {
    if (e > b) out.push_back(Piece{s.substr(b, e - b), piece.at_start && b == 0});
  }
}

std::unique_ptr<Normalizer> MakeNormalizer(const json& j, const std::string& where) {
  if (j.is_null()) return nullptr;
  std::string type = TypeOf(j, where);
  if (type == "NFC") return std::make_unique<UnicodeNormalizer>(NormalForm::kNFC);
  if (type == "NFD") return std::make_unique<UnicodeNormalizer>(NormalForm::kNFD);
  if (type == "NFKC") return std::make_unique<UnicodeNormalizer>(NormalForm::kNFKC);
  if (type == "NFKD") return std::make_unique<UnicodeNormalizer>(NormalForm::kNFKD);
  if (type == "Lowercase") return std::make_unique<LowercaseNormalizer>();
  if (type == "Prepend") return std::make_unique<PrependNormalizer>(GetString(j, "prepend", where));
  if (type == "Replace") return std::make_unique<ReplaceNormalizer>(j, where);
  if (type == "Strip") {
    return std::make_unique<StripNormalizer>(GetBool(j, "strip_left", true),
                                             GetBool(j, "strip_right", true));
  }
  if (type == "Sequence") {
    std::vector<std::unique_ptr<Normalizer>> parts;
    for (const json& p : ArrayField(j, "normalizers", where)) {
      parts.push_back(MakeNormalizer(p, where));
    }
    return std::make_unique<SequenceNormalizer>(std::move(parts), where);
  }
  Unsupported("normalizer", type, where);
}

std::unique_ptr<PreTokenizer> MakePreTokenizer(const json& j, const std::string& where) {
  if (j.is_null()) return nullptr;
  std::string type = TypeOf(j, where);
  if (type == "ByteLevel") {
    return std::make_unique<ByteLevelPreTokenizer>(GetBool(j, "add_prefix_space", true),
                                                   GetBool(j, "use_regex", true));
  }
  if (type == "Split") return std::make_unique<SplitPreTokenizer>(j, where);
  if (type == "Metaspace") return std::make_unique<MetaspacePreTokenizer>(j, where);
  if (type == "Digits") {
    bool individual = GetBool(j, "individual_digits", false);
    return MakeCharSplit([](char32_t c) { return IsNumeric(c); },
                         individual ? SplitBehavior::kIsolated : SplitBehavior::kContiguous);
  }
  if (type == "Punctuation") {
    return MakeCharSplit([](char32_t c) { return IsPunctuation(c); },
                         ParseBehavior(j, where, SplitBehavior::kIsolated));
  }
  if (type == "Whitespace") return std::make_unique<WhitespacePreTokenizer>();
  if (type == "WhitespaceSplit") {
    return MakeCharSplit([](char32_t c) { return IsWhitespace(c); }, SplitBehavior::kRemoved);
  }
  if (type == "Sequence") {
    std::vector<std::unique_ptr<PreTokenizer>> parts;
    for (const json& p : ArrayField(j, "pretokenizers", where)) {
      parts.push_back(MakePreTokenizer(p, where));
    }
    return std::make_unique<SequencePreTokenizer>(std::move(parts));
  }
  Unsupported("pre_tokenizer", type, where);
}

}  // namespace proctor::text
