// UTF-8 helpers with Python's string semantics: strings are sequences of code points (len,
// indexing and slicing count code points), and str.isspace() is Unicode's whitespace set.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace proctor::jinja {

// Decodes the code point at *pos and advances *pos; an invalid byte decodes as itself
// (0x80..0xFF) and advances one byte, so any input is consumed.
char32_t DecodeUtf8(std::string_view s, size_t* pos);
void AppendUtf8(char32_t cp, std::string* out);

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
