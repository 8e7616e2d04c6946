// A compiled PCRE2 pattern (UTF + UCP, JIT when available) and a find-all over a string: the
// regex engine behind the Split pre-tokenizer, Replace and the GGUF pre-tokenizer presets.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace proctor::text {

// Matching options beyond the default (case-sensitive; ^ and $ at the subject's ends only).
struct RegexOptions {
  bool ignore_case = false;  // Unicode simple case folding, as Python's re.IGNORECASE
  bool multiline = false;    // ^ and $ also at each "\n", as Python's re.MULTILINE
};

class Regex {
 public:
  // Throws Error naming the pattern and PCRE2's message when it does not compile. "." never
  // matches "\n", and "\n" is the only line end (Python's re).
  explicit Regex(std::string pattern, RegexOptions options = {});
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Every non-overlapping match in order as [begin, end) byte offsets. Empty matches are
  // skipped (the search then resumes one character later). Invalid UTF-8 in the subject is
  // matched without validity checks, so callers should pass valid UTF-8.
  void FindAll(std::string_view subject, std::vector<std::pair<size_t, size_t>>& out) const;
  // Whether the pattern matches anywhere in `subject` (Python's re.search).
  bool Search(std::string_view subject) const;
  // The number of non-overlapping non-empty matches (len(re.findall) for patterns that cannot
  // match the empty string).
  size_t Count(std::string_view subject) const;
  // The pieces between the matches (Python's re.split for a pattern without groups that cannot
  // match the empty string): Count() + 1 pieces.
  std::vector<std::string_view> Split(std::string_view subject) const;
  // The first match at or after byte `start` (at `start` only when `anchored`, like Python's
  // re.match): group i's [begin, end) as groups[i], npos for a group that did not take part.
  // nullopt when there is none.
  using Groups = std::vector<std::pair<size_t, size_t>>;
  std::optional<Groups> Find(std::string_view subject, size_t start = 0,
                             bool anchored = false) const;
  // Every match replaced by `replacement`, in which $0..$9 (or ${N}) name a group and an unset
  // group is empty (Python's re.sub with \1 and \g<0> written as $1 and $0).
  std::string Replace(std::string_view subject, std::string_view replacement) const;
  const std::string& pattern() const { return pattern_; }

 private:
  // pcre2_match from byte `start` into the thread's match data: the match's return code (>= 0,
  // or PCRE2_ERROR_NOMATCH); any other error is an Error naming the pattern.
  int Match(std::string_view subject, size_t start, uint32_t options) const;

  std::string pattern_;
  void* code_ = nullptr;  // pcre2_code_8*
};

// Escapes a literal string for use inside a PCRE2 pattern.
std::string RegexEscape(std::string_view literal);

}  // namespace proctor::text
