// Python's string semantics over UTF-8: strings are sequences of code points (len, indexing and
// slicing count code points), and str.isspace() is Unicode's whitespace set. The engine decodes
// with util/utf8.h's InvalidByte::kAsLatin1: a stray byte is one character U+0080..U+00FF.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace proctor::jinja {

// Python's str.isspace() for one code point.
bool IsPySpace(char32_t cp);

bool IsAscii(std::string_view s);
size_t CodePointCount(std::string_view s);
// Byte offset of each code point, plus s.size() at the end (size = count + 1).
std::vector<size_t> CodePointOffsets(std::string_view s);

// Python str.strip/lstrip/rstrip: with chars == nullptr strips whitespace, else any of chars.
std::string PyStrip(std::string_view s, const std::string* chars, bool left, bool right);

// Case mapping (ASCII letters only; other code points are kept).
std::string AsciiUpper(std::string_view s);
std::string AsciiLower(std::string_view s);

}  // namespace proctor::jinja
