// The project's one UTF-8 codec: encode a code point, decode the next one from a byte string,
// sequence lengths, strict validation, and lossy repair (invalid bytes -> U+FFFD).
//
// Decoding is structural and total, so tokenizers and the template engine can walk text nobody
// validated: a lead byte 0xC0..0xF7 followed by enough continuation bytes (10xxxxxx) decodes to
// their bits, even when that is an overlong form, a surrogate or a value above U+10FFFF. Every
// other byte (a stray continuation byte, 0xF8..0xFF, a lead whose sequence is cut short) is one
// invalid byte: it is consumed alone and reported as the caller's InvalidByte policy says.
// IsValidUtf8 and ReplaceInvalidUtf8 apply the Unicode standard's strict rules instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace proctor {

// The largest Unicode code point. DecodeUtf8 can return more (see above and kFlagged).
inline constexpr char32_t kMaxCodePoint = 0x10FFFF;
// ORed into an invalid byte under InvalidByte::kFlagged: the first value past Unicode.
inline constexpr char32_t kInvalidByteFlag = 0x110000;

// What DecodeUtf8 returns for an invalid byte. The callers need both: Python's str (which the
// Jinja engine imitates) has a character for every byte value, the Rust tokenizers do not.
enum class InvalidByte {
  // The byte's own value 0x80..0xFF, read as Latin-1: the Jinja engine counts, escapes, strips
  // and compares a stray byte as one character U+0080..U+00FF.
  kAsLatin1,
  // kInvalidByteFlag | byte, above kMaxCodePoint: the tokenizers keep a stray byte apart from
  // every character (no Unicode property, no case mapping, no byte-level alphabet entry). A
  // sequence decoded structurally past U+10FFFF can give the same value; callers treat every
  // value above kMaxCodePoint alike.
  kFlagged,
};

// Bytes in the sequence that `lead` begins: 2 for 0xC0..0xDF, 3 for 0xE0..0xEF, 4 for
// 0xF0..0xF7, and 1 for ASCII and for bytes that cannot begin a sequence.
inline size_t Utf8SequenceLength(uint8_t lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  if ((lead & 0xF8) == 0xF0) return 4;
  return 1;
}

// Decodes the code point at s[*pos] (*pos < s.size()) and advances *pos past its sequence, or
// past the one byte when that byte is invalid.
char32_t DecodeUtf8(std::string_view s, size_t* pos, InvalidByte invalid);

// Appends the UTF-8 encoding of cp (1 to 4 bytes by magnitude). It does not check cp:
// surrogates and values above U+10FFFF keep the 4-byte bit layout, so whatever DecodeUtf8
// decoded structurally re-encodes to the same bytes.
void AppendUtf8(char32_t cp, std::string* out);

// Start of the sequence whose last byte is s[pos - 1] (0 < pos <= s.size()): steps back over
// continuation bytes, never before 0.
size_t Utf8SequenceStartBefore(std::string_view s, size_t pos);

// True when s is well-formed UTF-8 (no overlong forms, surrogates or values past U+10FFFF).
bool IsValidUtf8(std::string_view s);
// Rust's String::from_utf8_lossy: each maximal invalid subpart (Unicode ch. 3, "U+FFFD
// substitution of maximal subparts") becomes one U+FFFD; valid sequences are copied.
std::string ReplaceInvalidUtf8(std::string_view s);

}  // namespace proctor
