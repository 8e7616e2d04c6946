// PCRE2 wrapper (see regex.h).
#define PCRE2_CODE_UNIT_WIDTH 8
#include "text/tokenizer/regex.h"

#include <pcre2.h>

#include "util/error.h"
#include "util/utf8.h"

namespace proctor::text {

namespace {

// One match-data block per thread, grown on demand (no allocation per call).
struct MatchData {
  pcre2_match_data* data = nullptr;
  ~MatchData() {
    if (data) pcre2_match_data_free(data);
  }
};
thread_local MatchData t_match_data;

pcre2_match_data* GetMatchData() {
  if (!t_match_data.data) t_match_data.data = pcre2_match_data_create(32, nullptr);
  return t_match_data.data;
}

std::string Pcre2Message(int code) {
  PCRE2_UCHAR message[256];
  pcre2_get_error_message(code, message, sizeof(message));
  return reinterpret_cast<const char*>(message);
}

}  // namespace

Regex::Regex(std::string pattern, RegexOptions options) : pattern_(std::move(pattern)) {
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  uint32_t flags = PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK;
  if (options.ignore_case) flags |= PCRE2_CASELESS;
  if (options.multiline) flags |= PCRE2_MULTILINE;
  pcre2_compile_context* context = pcre2_compile_context_create(nullptr);
  pcre2_set_newline(context, PCRE2_NEWLINE_LF);
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern_.data()), pattern_.size(),
                                   flags, &error_code, &error_offset, context);
  pcre2_compile_context_free(context);
  if (!code) {
    Fail("tokenizer", "regex '{}' does not compile at offset {}: {}", pattern_, error_offset,
         Pcre2Message(error_code));
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter on failure
  code_ = code;
}

Regex::~Regex() {
  if (code_) pcre2_code_free(static_cast<pcre2_code*>(code_));
}

int Regex::Match(std::string_view subject, size_t start, uint32_t options) const {
  const int rc =
      pcre2_match(static_cast<pcre2_code*>(code_), reinterpret_cast<PCRE2_SPTR>(subject.data()),
                  subject.size(), start, PCRE2_NO_UTF_CHECK | options, GetMatchData(), nullptr);
  if (rc < 0 && rc != PCRE2_ERROR_NOMATCH) {
    Fail("tokenizer", "regex '{}' failed: {}", pattern_, Pcre2Message(rc));
  }
  return rc;
}

void Regex::FindAll(std::string_view subject, std::vector<std::pair<size_t, size_t>>& out) const {
  out.clear();
  size_t offset = 0;
  while (offset <= subject.size()) {
    if (Match(subject, offset, 0) == PCRE2_ERROR_NOMATCH) break;
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(GetMatchData());
    size_t begin = ov[0], end = ov[1];
    if (end > begin) {
      out.emplace_back(begin, end);
      offset = end;
    } else {
      if (begin >= subject.size()) break;
      offset = begin + Utf8SequenceLength(static_cast<uint8_t>(subject[begin]));
    }
  }
}

bool Regex::Search(std::string_view subject) const {
  return Match(subject, 0, 0) != PCRE2_ERROR_NOMATCH;
}

size_t Regex::Count(std::string_view subject) const {
  std::vector<std::pair<size_t, size_t>> matches;
  FindAll(subject, matches);
  return matches.size();
}

std::vector<std::string_view> Regex::Split(std::string_view subject) const {
  std::vector<std::pair<size_t, size_t>> matches;
  FindAll(subject, matches);
  std::vector<std::string_view> pieces;
  size_t begin = 0;
  for (const auto& [match_begin, match_end] : matches) {
    pieces.push_back(subject.substr(begin, match_begin - begin));
    begin = match_end;
  }
  pieces.push_back(subject.substr(begin));
  return pieces;
}

std::optional<Regex::Groups> Regex::Find(std::string_view subject, size_t start,
                                         bool anchored) const {
  const int rc = Match(subject, start, anchored ? PCRE2_ANCHORED : 0);
  if (rc == PCRE2_ERROR_NOMATCH) return std::nullopt;
  uint32_t captures = 0;
  pcre2_pattern_info(static_cast<pcre2_code*>(code_), PCRE2_INFO_CAPTURECOUNT, &captures);
  const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(GetMatchData());
  Groups groups;
  for (uint32_t i = 0; i <= captures; ++i) {
    if (static_cast<int>(i) < rc && ov[2 * i] != PCRE2_UNSET) {
      groups.emplace_back(ov[2 * i], ov[2 * i + 1]);
    } else {
      groups.emplace_back(std::string_view::npos, std::string_view::npos);
    }
  }
  return groups;
}

std::string Regex::Replace(std::string_view subject, std::string_view replacement) const {
  std::string out(subject.size() + replacement.size() + 16, '\0');
  for (int attempt = 0; attempt < 2; ++attempt) {
    PCRE2_SIZE length = out.size();
    const int rc =
        pcre2_substitute(static_cast<pcre2_code*>(code_),
                         reinterpret_cast<PCRE2_SPTR>(subject.data()), subject.size(), 0,
                         PCRE2_SUBSTITUTE_GLOBAL | PCRE2_SUBSTITUTE_UNSET_EMPTY |
                             PCRE2_SUBSTITUTE_OVERFLOW_LENGTH | PCRE2_NO_UTF_CHECK,
                         nullptr, nullptr, reinterpret_cast<PCRE2_SPTR>(replacement.data()),
                         replacement.size(), reinterpret_cast<PCRE2_UCHAR*>(out.data()), &length);
    if (rc == PCRE2_ERROR_NOMEMORY && attempt == 0) {
      out.resize(length);
      continue;
    }
    if (rc < 0) {
      Fail("tokenizer", "regex '{}' cannot replace with '{}': {}", pattern_, replacement,
           Pcre2Message(rc));
    }
    out.resize(length);
    return out;
  }
  Fail("tokenizer", "regex '{}': the replacement did not fit", pattern_);
}

std::string RegexEscape(std::string_view literal) {
  std::string out;
  for (char c : literal) {
    if (std::string_view("\\^$.|?*+()[]{}-/#&~ ").find(c) != std::string_view::npos) {
      out.push_back('\\');
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace proctor::text
