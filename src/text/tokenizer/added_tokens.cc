// Added-token matching (see added_tokens.h).
#include "text/tokenizer/added_tokens.h"

#include <algorithm>

#include "text/tokenizer/unicode.h"
#include "util/utf8.h"

namespace proctor::text {

namespace {

bool IsWordChar(char32_t c) { return IsAlphanumeric(c) || c == '_'; }

// The last character of s, or 0 when s is empty.
char32_t LastChar(std::string_view s) {
  if (s.empty()) return 0;
  size_t pos = Utf8SequenceStartBefore(s, s.size());
  return DecodeUtf8(s, &pos, InvalidByte::kFlagged);
}

}  // namespace

void AddedTokenMatcher::Build(const std::vector<AddedToken>* tokens,
                              const std::vector<std::string>& patterns,
                              const std::vector<int32_t>& indices) {
  tokens_ = tokens;
  for (size_t i = 0; i < patterns.size(); ++i) {
    const std::string& p = patterns[i];
    if (p.empty()) continue;
    int32_t node = 0;
    for (unsigned char c : p) {
      int32_t child = Child(node, c);
      if (child < 0) {
        child = static_cast<int32_t>(terminal_.size());
        terminal_.push_back(-1);
        edges_[(static_cast<uint64_t>(node) << 8) | c] = child;
      }
      node = child;
    }
    if (terminal_[node] < 0) terminal_[node] = indices[i];  // the first token with a text wins
    first_byte_[static_cast<uint8_t>(p[0])] = true;
  }
}

void AddedTokenMatcher::Split(std::string_view text, std::vector<AddedSplit>& out) const {
  out.clear();
  size_t start_offset = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    if (!first_byte_[static_cast<uint8_t>(text[pos])]) {
      ++pos;
      continue;
    }
    // Longest match starting at pos.
    int32_t node = 0, best = -1;
    size_t best_end = 0;
    for (size_t i = pos; i < text.size(); ++i) {
      node = Child(node, static_cast<uint8_t>(text[i]));
      if (node < 0) break;
      if (terminal_[node] >= 0) {
        best = terminal_[node];
        best_end = i + 1;
      }
    }
    if (best < 0) {
      ++pos;
      continue;
    }
    size_t start = pos, stop = best_end;
    pos = best_end;  // the matcher resumes after the raw match
    const AddedToken& token = (*tokens_)[best];
    if (token.single_word) {
      bool start_space = start == 0 || !IsWordChar(LastChar(text.substr(0, start)));
      size_t p = stop;
      bool stop_space =
          stop == text.size() || !IsWordChar(DecodeUtf8(text, &p, InvalidByte::kFlagged));
      if (!start_space || !stop_space) continue;
    }
    if (token.lstrip) {
      // Back over whitespace before the match (not into an earlier match).
      size_t new_start = start;
      while (new_start > 0) {
        const size_t prev = Utf8SequenceStartBefore(text, new_start);
        size_t p = prev;
        if (!IsWhitespace(DecodeUtf8(text, &p, InvalidByte::kFlagged))) break;
        new_start = prev;
      }
      start = std::max(new_start, start_offset);
    }
    if (token.rstrip) {
      size_t p = stop;
      while (p < text.size()) {
        size_t q = p;
        if (!IsWhitespace(DecodeUtf8(text, &q, InvalidByte::kFlagged))) break;
        p = q;
      }
      stop = p;
      pos = std::max(pos, stop);
    }
    if (start_offset < start) out.push_back({-1, start_offset, start});
    out.push_back({best, start, stop});
    start_offset = stop;
  }
  if (start_offset < text.size() || out.empty()) out.push_back({-1, start_offset, text.size()});
}

}  // namespace proctor::text
