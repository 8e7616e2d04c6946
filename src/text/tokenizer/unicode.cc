// UTF-8 and Unicode helpers (see unicode.h).
#include "text/tokenizer/unicode.h"

#include <utf8proc.h>

#include <array>
#include <cstdlib>
#include <memory>

#include "util/error.h"

namespace proctor::text {

char32_t DecodeUtf8(std::string_view s, size_t& pos) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  uint8_t lead = p[pos];
  size_t n = Utf8SequenceLength(lead);
  if (n == 1 || pos + n > s.size()) {
    ++pos;
    return lead < 0x80 ? lead : (0x110000 | lead);
  }
  char32_t cp = lead & (0x7F >> n);
  for (size_t i = 1; i < n; ++i) {
    uint8_t c = p[pos + i];
    if ((c & 0xC0) != 0x80) {
      ++pos;
      return 0x110000 | lead;
    }
    cp = (cp << 6) | (c & 0x3F);
  }
  pos += n;
  return cp;
}

void AppendUtf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

namespace {

// Length of the valid UTF-8 sequence at s[i], or 0 and the length of the maximal invalid
// subpart in *bad (Unicode "substitution of maximal subparts", as Rust and WHATWG do).
size_t ValidSequenceAt(const uint8_t* s, size_t n, size_t i, size_t* bad) {
  uint8_t b0 = s[i];
  if (b0 < 0x80) return 1;
  size_t need;
  uint8_t lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    *bad = 1;
    return 0;
  }
  for (size_t k = 1; k < need; ++k) {
    if (i + k >= n) {
      *bad = k;
      return 0;
    }
    uint8_t c = s[i + k];
    uint8_t l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
    if (c < l || c > h) {
      *bad = k;
      return 0;
    }
  }
  return need;
}

}  // namespace

bool IsValidUtf8(std::string_view s) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  size_t i = 0, bad = 0;
  while (i < s.size()) {
    size_t n = ValidSequenceAt(p, s.size(), i, &bad);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string Utf8Lossy(std::string_view bytes) {
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  std::string out;
  out.reserve(bytes.size());
  size_t i = 0, bad = 0;
  while (i < bytes.size()) {
    size_t n = ValidSequenceAt(p, bytes.size(), i, &bad);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      i += bad;
    } else {
      out.append(bytes.data() + i, n);
      i += n;
    }
  }
  return out;
}

bool IsLetter(char32_t cp) {
  auto c = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO;
}

bool IsNumeric(char32_t cp) {
  auto c = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return c == UTF8PROC_CATEGORY_ND || c == UTF8PROC_CATEGORY_NL || c == UTF8PROC_CATEGORY_NO;
}

bool IsAlphanumeric(char32_t cp) { return IsLetter(cp) || IsNumeric(cp); }

bool IsPunctuation(char32_t cp) {
  if (cp < 0x80) {
    return (cp >= 0x21 && cp <= 0x2F) || (cp >= 0x3A && cp <= 0x40) ||
           (cp >= 0x5B && cp <= 0x60) || (cp >= 0x7B && cp <= 0x7E);
  }
  auto c = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return c >= UTF8PROC_CATEGORY_PC && c <= UTF8PROC_CATEGORY_PO;
}

bool IsWhitespace(char32_t cp) {
  switch (cp) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x20: case 0x85: case 0xA0:
    case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

std::string Normalize(std::string_view s, NormalForm form) {
  if (s.empty()) return std::string();
  int options = UTF8PROC_STABLE;
  switch (form) {
    case NormalForm::kNFC: options |= UTF8PROC_COMPOSE; break;
    case NormalForm::kNFD: options |= UTF8PROC_DECOMPOSE; break;
    case NormalForm::kNFKC: options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT; break;
    case NormalForm::kNFKD: options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT; break;
  }
  utf8proc_uint8_t* result = nullptr;
  utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                   static_cast<utf8proc_ssize_t>(s.size()), &result,
                   static_cast<utf8proc_option_t>(options));
  if (n < 0) Fail("tokenizer", "unicode normalization failed: {}", utf8proc_errmsg(n));
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> guard(result, &std::free);
  return std::string(reinterpret_cast<const char*>(result), static_cast<size_t>(n));
}

std::string Lowercase(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  while (pos < s.size()) {
    size_t start = pos;
    char32_t cp = DecodeUtf8(s, pos);
    if (cp >= 0x110000) {
      out.append(s.substr(start, pos - start));
      continue;
    }
    if (cp == 0x130) {  // İ lowercases to i + combining dot above
      out += "i\xCC\x87";
      continue;
    }
    AppendUtf8(out, static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp))));
  }
  return out;
}

namespace {

struct ByteTables {
  std::array<char32_t, 256> byte_to_char{};
  std::array<std::string, 256> byte_to_utf8{};
  ByteTables() {
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      byte_to_char[b] = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + n++);
      AppendUtf8(byte_to_utf8[b], byte_to_char[b]);
    }
  }
};
const ByteTables& Tables() {
  static const ByteTables tables;
  return tables;
}

}  // namespace

char32_t ByteToChar(uint8_t b) { return Tables().byte_to_char[b]; }

int CharToByte(char32_t cp) {
  if (cp < 256) {
    bool printable = (cp >= 0x21 && cp <= 0x7E) || (cp >= 0xA1 && cp <= 0xAC) || (cp >= 0xAE);
    return printable ? static_cast<int>(cp) : -1;
  }
  if (cp < 256 + 68) {
    // The non-printable bytes, in increasing order, map to 256, 257, ...
    static const auto inverse = [] {
      std::array<int, 68> inv{};
      int n = 0;
      for (int b = 0; b < 256; ++b) {
        bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
        if (!printable) inv[n++] = b;
      }
      return inv;
    }();
    return inverse[cp - 256];
  }
  return -1;
}

void AppendByteLevel(std::string& out, std::string_view s) {
  const auto& t = Tables();
  for (unsigned char c : s) out += t.byte_to_utf8[c];
}

}  // namespace proctor::text
