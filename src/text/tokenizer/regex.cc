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

}  // namespace

Regex::Regex(std::string pattern) : pattern_(std::move(pattern)) {
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern_.data()), pattern_.size(),
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &error_code,
                                   &error_offset, nullptr);
  if (!code) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error_code, message, sizeof(message));
    Fail("tokenizer", "regex '{}' does not compile at offset {}: {}", pattern_, error_offset,
         reinterpret_cast<const char*>(message));
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter on failure
  code_ = code;
}

Regex::~Regex() {
  if (code_) pcre2_code_free(static_cast<pcre2_code*>(code_));
}

void Regex::FindAll(std::string_view subject, std::vector<std::pair<size_t, size_t>>& out) const {
  out.clear();
  auto* code = static_cast<pcre2_code*>(code_);
  pcre2_match_data* md = GetMatchData();
  size_t offset = 0;
  const auto* s = reinterpret_cast<PCRE2_SPTR>(subject.data());
  while (offset <= subject.size()) {
    int rc = pcre2_match(code, s, subject.size(), offset, PCRE2_NO_UTF_CHECK, md, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(rc, message, sizeof(message));
      Fail("tokenizer", "regex '{}' failed: {}", pattern_, reinterpret_cast<const char*>(message));
    }
    PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
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
