// Python's str methods on UTF-8 text, for code that must agree with a Python reference to the
// character (IFEval's verifiers): whitespace as str.isspace() defines it, strip/split without
// arguments, isupper/islower with Python's cased-character rules (Unicode 14, Python 3.11).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace proctor::text {

// str.isspace() for one character: \t..\r, \x1c..\x1f, space, U+0085, U+00A0, U+1680,
// U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000.
bool IsPythonSpace(char32_t cp);
// A PCRE2 character class matching exactly those characters (Python's \s in a str pattern;
// PCRE2's own \s differs on \x1c..\x1f and U+180E).
inline constexpr const char* kPythonSpaceClass =
    "[\\t-\\r\\x{1c}-\\x{20}\\x{85}\\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}"
    "\\x{202f}\\x{205f}\\x{3000}]";

// A Python str pattern for PCRE2 (UTF + UCP): \s and \S become kPythonSpaceClass and its
// complement (inside a character class too); everything else is passed on as written.
std::string PythonPatternForPcre2(std::string_view pattern);

// str.strip() and str.rstrip() without arguments.
std::string_view PythonStrip(std::string_view s);
std::string_view PythonRStrip(std::string_view s);
// str.strip(chars) / lstrip(chars) / rstrip(chars) for ASCII `chars`.
std::string_view PythonStrip(std::string_view s, std::string_view chars);
std::string_view PythonLStrip(std::string_view s, std::string_view chars);
std::string_view PythonRStrip(std::string_view s, std::string_view chars);
// str.split() without arguments: the runs between whitespace, none empty.
std::vector<std::string_view> PythonSplitWhitespace(std::string_view s);
// str.split(sep) for a non-empty `sep`: one piece more than separators, empty pieces kept.
std::vector<std::string_view> PythonSplit(std::string_view s, std::string_view sep);
// str.replace(old, new) for a non-empty `old`.
std::string PythonReplace(std::string_view s, std::string_view old, std::string_view with);

// str.isupper(): at least one cased character and none lowercase or titlecase (Uppercase and
// Lowercase are the derived properties: Lu/Ll plus Other_Uppercase/Other_Lowercase).
bool PythonIsUpper(std::string_view s);
// str.islower(): at least one cased character and none uppercase or titlecase.
bool PythonIsLower(std::string_view s);
// The same for one character (a stray byte or a value past Unicode is neither).
bool IsPythonUpper(char32_t cp);
bool IsPythonLower(char32_t cp);
// The number of characters (code points), as len(str).
size_t PythonLength(std::string_view s);

}  // namespace proctor::text
