// Python string semantics over UTF-8 (see py_str.h).
#include "text/jinja/py_str.h"

#include <algorithm>

#include "util/utf8.h"

namespace proctor::jinja {

bool IsPySpace(char32_t cp) {
  switch (cp) {
    case 0x09:
    case 0x0a:
    case 0x0b:
    case 0x0c:
    case 0x0d:
    case 0x1c:
    case 0x1d:
    case 0x1e:
    case 0x1f:
    case 0x20:
    case 0x85:
    case 0xa0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202f:
    case 0x205f:
    case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200a;
  }
}

bool IsAscii(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

size_t CodePointCount(std::string_view s) {
  if (IsAscii(s)) return s.size();
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++n) DecodeUtf8(s, &i, InvalidByte::kAsLatin1);
  return n;
}

std::vector<size_t> CodePointOffsets(std::string_view s) {
  std::vector<size_t> offsets;
  offsets.reserve(s.size() + 1);
  for (size_t i = 0; i < s.size();) {
    offsets.push_back(i);
    DecodeUtf8(s, &i, InvalidByte::kAsLatin1);
  }
  offsets.push_back(s.size());
  return offsets;
}

std::string PyStrip(std::string_view s, const std::string* chars, bool left, bool right) {
  std::vector<char32_t> set;
  if (chars != nullptr) {
    for (size_t i = 0; i < chars->size();) {
      set.push_back(DecodeUtf8(*chars, &i, InvalidByte::kAsLatin1));
    }
  }
  const auto strip_cp = [&](char32_t cp) {
    return chars == nullptr ? IsPySpace(cp) : std::find(set.begin(), set.end(), cp) != set.end();
  };
  const std::vector<size_t> offsets = CodePointOffsets(s);
  size_t begin = 0;
  size_t end = offsets.size() - 1;  // in code points
  const auto cp_at = [&](size_t k) {
    size_t p = offsets[k];
    return DecodeUtf8(s, &p, InvalidByte::kAsLatin1);
  };
  if (left) {
    while (begin < end && strip_cp(cp_at(begin))) ++begin;
  }
  if (right) {
    while (end > begin && strip_cp(cp_at(end - 1))) --end;
  }
  return std::string(s.substr(offsets[begin], offsets[end] - offsets[begin]));
}

std::string AsciiUpper(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace proctor::jinja
