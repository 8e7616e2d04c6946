// A compiled PCRE2 pattern (UTF + UCP, JIT when available) and a find-all over a string: the
// regex engine behind the Split pre-tokenizer, Replace and the GGUF pre-tokenizer presets.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace proctor::text {

class Regex {
 public:
  // Throws Error naming the pattern and PCRE2's message when it does not compile.
  explicit Regex(std::string pattern);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Every non-overlapping match in order as [begin, end) byte offsets. Empty matches are
  // skipped (the search then resumes one character later). Invalid UTF-8 in the subject is
  // matched without validity checks, so callers should pass valid UTF-8.
  void FindAll(std::string_view subject, std::vector<std::pair<size_t, size_t>>& out) const;
  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_;
  void* code_ = nullptr;  // pcre2_code_8*
};

// Escapes a literal string for use inside a PCRE2 pattern.
std::string RegexEscape(std::string_view literal);

}  // namespace proctor::text
