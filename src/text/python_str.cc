#include "text/python_str.h"

#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <utility>

#include "util/utf8.h"

namespace proctor::text {
namespace {

using Range = std::pair<char32_t, char32_t>;

// Characters Python's str.islower()/isupper() count beyond Ll/Lu (its Lowercase and Uppercase
// flags, Unicode 14 as Python 3.11 ships it), listed from Python itself.
constexpr std::array<Range, 24> kOtherLowercase = {{
    {0xAA, 0xAA},       {0xBA, 0xBA},       {0x2B0, 0x2B8},     {0x2C0, 0x2C1},
    {0x2E0, 0x2E4},     {0x345, 0x345},     {0x37A, 0x37A},     {0x1D2C, 0x1D6A},
    {0x1D78, 0x1D78},   {0x1D9B, 0x1DBF},   {0x2071, 0x2071},   {0x207F, 0x207F},
    {0x2090, 0x209C},   {0x2170, 0x217F},   {0x24D0, 0x24E9},   {0x2C7C, 0x2C7D},
    {0xA69C, 0xA69D},   {0xA770, 0xA770},   {0xA7F8, 0xA7F9},   {0xAB5C, 0xAB5F},
    {0x10780, 0x10780}, {0x10783, 0x10785}, {0x10787, 0x107B0}, {0x107B2, 0x107BA},
}};
constexpr std::array<Range, 5> kOtherUppercase = {{
    {0x2160, 0x216F},
    {0x24B6, 0x24CF},
    {0x1F130, 0x1F149},
    {0x1F150, 0x1F169},
    {0x1F170, 0x1F189},
}};

template <size_t N>
bool InRanges(const std::array<Range, N>& ranges, char32_t cp) {
  return std::any_of(ranges.begin(), ranges.end(),
                     [cp](const Range& r) { return cp >= r.first && cp <= r.second; });
}

enum class Case { kNone, kLower, kUpper, kTitle };

Case CaseOf(char32_t cp) {
  if (cp > kMaxCodePoint) return Case::kNone;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_LL:
      return Case::kLower;
    case UTF8PROC_CATEGORY_LU:
      return Case::kUpper;
    case UTF8PROC_CATEGORY_LT:
      return Case::kTitle;
    default:
      break;
  }
  if (InRanges(kOtherLowercase, cp)) return Case::kLower;
  if (InRanges(kOtherUppercase, cp)) return Case::kUpper;
  return Case::kNone;
}

// Whether every cased character of `s` has case `want` and there is at least one.
bool AllCasedAre(std::string_view s, Case want) {
  bool cased = false;
  size_t pos = 0;
  while (pos < s.size()) {
    const Case c = CaseOf(DecodeUtf8(s, &pos, InvalidByte::kFlagged));
    if (c == Case::kNone) continue;
    if (c != want) return false;
    cased = true;
  }
  return cased;
}

// The byte offset just past the leading whitespace, and the one where the trailing whitespace
// starts.
size_t SpaceEnd(std::string_view s, size_t pos) {
  while (pos < s.size()) {
    size_t next = pos;
    if (!IsPythonSpace(DecodeUtf8(s, &next, InvalidByte::kFlagged))) break;
    pos = next;
  }
  return pos;
}

}  // namespace

bool IsPythonSpace(char32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 ||
         cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

std::string PythonPatternForPcre2(std::string_view pattern) {
  const std::string_view space = kPythonSpaceClass;
  const std::string_view inner = space.substr(1, space.size() - 2);  // without [ and ]
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char next = pattern[++i];
      if (next == 's') {
        out.append(in_class ? inner : space);
      } else if (next == 'S' && !in_class) {
        out += "[^";
        out.append(inner);
        out += "]";
      } else {
        out += c;
        out += next;
      }
      continue;
    }
    if (c == '[' && !in_class) {
      in_class = true;
      out += c;
      // A ']' right after '[' or '[^' is a literal member.
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') out += pattern[++i];
      continue;
    }
    if (c == ']' && in_class) in_class = false;
    out += c;
  }
  return out;
}

std::string_view PythonRStrip(std::string_view s) {
  // Walk the characters once, remembering where the last non-space one ends.
  size_t end = 0;
  size_t pos = 0;
  while (pos < s.size()) {
    if (!IsPythonSpace(DecodeUtf8(s, &pos, InvalidByte::kFlagged))) end = pos;
  }
  return s.substr(0, end);
}

std::string_view PythonStrip(std::string_view s) { return PythonRStrip(s.substr(SpaceEnd(s, 0))); }

std::string_view PythonLStrip(std::string_view s, std::string_view chars) {
  const size_t begin = s.find_first_not_of(chars);
  return begin == std::string_view::npos ? std::string_view() : s.substr(begin);
}

std::string_view PythonRStrip(std::string_view s, std::string_view chars) {
  const size_t last = s.find_last_not_of(chars);
  return last == std::string_view::npos ? std::string_view() : s.substr(0, last + 1);
}

std::string_view PythonStrip(std::string_view s, std::string_view chars) {
  return PythonRStrip(PythonLStrip(s, chars), chars);
}

std::vector<std::string_view> PythonSplitWhitespace(std::string_view s) {
  std::vector<std::string_view> words;
  size_t pos = SpaceEnd(s, 0);
  while (pos < s.size()) {
    const size_t begin = pos;
    size_t end = pos;
    while (pos < s.size()) {
      size_t next = pos;
      if (IsPythonSpace(DecodeUtf8(s, &next, InvalidByte::kFlagged))) break;
      pos = next;
      end = pos;
    }
    words.push_back(s.substr(begin, end - begin));
    pos = SpaceEnd(s, pos);
  }
  return words;
}

std::vector<std::string_view> PythonSplit(std::string_view s, std::string_view sep) {
  std::vector<std::string_view> pieces;
  size_t begin = 0;
  for (size_t at = s.find(sep); at != std::string_view::npos; at = s.find(sep, begin)) {
    pieces.push_back(s.substr(begin, at - begin));
    begin = at + sep.size();
  }
  pieces.push_back(s.substr(begin));
  return pieces;
}

std::string PythonReplace(std::string_view s, std::string_view old, std::string_view with) {
  std::string out;
  const std::vector<std::string_view> pieces = PythonSplit(s, old);
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (i > 0) out.append(with);
    out.append(pieces[i]);
  }
  return out;
}

bool IsPythonUpper(char32_t cp) { return CaseOf(cp) == Case::kUpper; }
bool IsPythonLower(char32_t cp) { return CaseOf(cp) == Case::kLower; }

bool PythonIsUpper(std::string_view s) { return AllCasedAre(s, Case::kUpper); }
bool PythonIsLower(std::string_view s) { return AllCasedAre(s, Case::kLower); }

size_t PythonLength(std::string_view s) {
  size_t n = 0;
  size_t pos = 0;
  while (pos < s.size()) {
    DecodeUtf8(s, &pos, InvalidByte::kFlagged);
    ++n;
  }
  return n;
}

}  // namespace proctor::text
