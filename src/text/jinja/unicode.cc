#include "text/jinja/unicode.h"

#include <algorithm>

namespace proctor::jinja {

char32_t DecodeUtf8(std::string_view s, size_t* pos) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const size_t i = *pos;
  const unsigned char b0 = byte(i);
  int extra = 0;
  char32_t cp = 0;
  if (b0 < 0x80) {
    *pos = i + 1;
    return b0;
  } else if ((b0 & 0xe0) == 0xc0) {
    extra = 1;
    cp = b0 & 0x1f;
  } else if ((b0 & 0xf0) == 0xe0) {
    extra = 2;
    cp = b0 & 0x0f;
  } else if ((b0 & 0xf8) == 0xf0) {
    extra = 3;
    cp = b0 & 0x07;
  } else {
    *pos = i + 1;
    return b0;
  }
  if (i + static_cast<size_t>(extra) >= s.size()) {
    *pos = i + 1;
    return b0;
  }
  for (int k = 1; k <= extra; ++k) {
    const unsigned char b = byte(i + static_cast<size_t>(k));
    if ((b & 0xc0) != 0x80) {
      *pos = i + 1;
      return b0;
    }
    cp = (cp << 6) | (b & 0x3f);
  }
  *pos = i + 1 + static_cast<size_t>(extra);
  return cp;
}

void AppendUtf8(char32_t cp, std::string* out) {
  if (cp < 0x80) {
    *out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    *out += static_cast<char>(0xc0 | (cp >> 6));
    *out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    *out += static_cast<char>(0xe0 | (cp >> 12));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    *out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    *out += static_cast<char>(0xf0 | (cp >> 18));
    *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    *out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

bool IsPySpace(char32_t cp) {
  switch (cp) {
    case 0x09: case 0x0a: case 0x0b: case 0x0c: case 0x0d: case 0x1c: case 0x1d: case 0x1e:
    case 0x1f: case 0x20: case 0x85: case 0xa0: case 0x1680: case 0x2028: case 0x2029:
    case 0x202f: case 0x205f: case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200a;
  }
}

bool IsAscii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

size_t CodePointCount(std::string_view s) {
  if (IsAscii(s)) return s.size();
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++n) DecodeUtf8(s, &i);
  return n;
}

std::vector<size_t> CodePointOffsets(std::string_view s) {
  std::vector<size_t> offsets;
  offsets.reserve(s.size() + 1);
  for (size_t i = 0; i < s.size();) {
    offsets.push_back(i);
    DecodeUtf8(s, &i);
  }
  offsets.push_back(s.size());
  return offsets;
}

std::string PyStrip(std::string_view s, const std::string* chars, bool left, bool right) {
  std::vector<char32_t> set;
  if (chars != nullptr) {
    for (size_t i = 0; i < chars->size();) set.push_back(DecodeUtf8(*chars, &i));
  }
  const auto strip_cp = [&](char32_t cp) {
    return chars == nullptr ? IsPySpace(cp) : std::find(set.begin(), set.end(), cp) != set.end();
  };
  const std::vector<size_t> offsets = CodePointOffsets(s);
  size_t begin = 0;
  size_t end = offsets.size() - 1;  // in code points
  const auto cp_at = [&](size_t k) {
    size_t p = offsets[k];
    return DecodeUtf8(s, &p);
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
