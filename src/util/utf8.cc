// The UTF-8 codec (see utf8.h).
#include "util/utf8.h"

namespace proctor {

char32_t DecodeUtf8(std::string_view s, size_t* pos, InvalidByte invalid) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(s.data());
  const size_t start = *pos;
  const uint8_t lead = bytes[start];
  const size_t length = Utf8SequenceLength(lead);
  const auto invalid_byte = [&] {
    *pos = start + 1;
    return invalid == InvalidByte::kFlagged ? (kInvalidByteFlag | lead) : char32_t{lead};
  };
  if (lead < 0x80) {
    *pos = start + 1;
    return lead;
  }
  if (length == 1 || start + length > s.size()) return invalid_byte();
  char32_t cp = lead & (0x7F >> length);
  for (size_t k = 1; k < length; ++k) {
    const uint8_t next = bytes[start + k];
    if ((next & 0xC0) != 0x80) return invalid_byte();
    cp = (cp << 6) | (next & 0x3F);
  }
  *pos = start + length;
  return cp;
}

void AppendUtf8(char32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

size_t Utf8SequenceStartBefore(std::string_view s, size_t pos) {
  size_t start = pos - 1;
  while (start > 0 && (static_cast<uint8_t>(s[start]) & 0xC0) == 0x80) --start;
  return start;
}

namespace {

// Length of the well-formed sequence at s[i], or 0 with the length of the maximal invalid
// subpart in *bad (the Unicode standard's rule, which Rust and WHATWG follow).
size_t ValidSequenceAt(const uint8_t* s, size_t n, size_t i, size_t* bad) {
  const uint8_t lead = s[i];
  if (lead < 0x80) return 1;
  size_t need;
  // The second byte's range excludes overlong forms (E0, F0), surrogates (ED) and values past
  // U+10FFFF (F4); later bytes are any continuation byte.
  uint8_t lo = 0x80, hi = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    need = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    need = 3;
    if (lead == 0xE0) lo = 0xA0;
    if (lead == 0xED) hi = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    need = 4;
    if (lead == 0xF0) lo = 0x90;
    if (lead == 0xF4) hi = 0x8F;
  } else {
    *bad = 1;
    return 0;
  }
  for (size_t k = 1; k < need; ++k) {
    if (i + k >= n) {
      *bad = k;
      return 0;
    }
    const uint8_t c = s[i + k];
    const uint8_t min = k == 1 ? lo : 0x80, max = k == 1 ? hi : 0xBF;
    if (c < min || c > max) {
      *bad = k;
      return 0;
    }
  }
  return need;
}

}  // namespace

bool IsValidUtf8(std::string_view s) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(s.data());
  size_t i = 0, bad = 0;
  while (i < s.size()) {
    const size_t n = ValidSequenceAt(bytes, s.size(), i, &bad);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string ReplaceInvalidUtf8(std::string_view s) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(s.data());
  std::string out;
  out.reserve(s.size());
  size_t i = 0, bad = 0;
  while (i < s.size()) {
    const size_t n = ValidSequenceAt(bytes, s.size(), i, &bad);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      i += bad;
    } else {
      out.append(s.data() + i, n);
      i += n;
    }
  }
  return out;
}

}  // namespace proctor
