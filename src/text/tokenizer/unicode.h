// UTF-8 and Unicode helpers shared by the tokenizers: decoding, encoding, categories
// (utf8proc), normalization forms, GPT-2's byte<->char table and lossy UTF-8 repair.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace proctor::text {

// Decodes one code point at s[pos] and advances pos. Invalid or truncated sequences decode as
// the single byte value with high bit set (0x80..0xFF) | 0x110000 marker, consuming one byte.
char32_t DecodeUtf8(std::string_view s, size_t& pos);
// Length in bytes of the UTF-8 sequence starting with this lead byte (1 for invalid leads).
inline size_t Utf8SequenceLength(uint8_t lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  if ((lead & 0xF8) == 0xF0) return 4;
  return 1;
}
void AppendUtf8(std::string& out, char32_t cp);

// True when s is well-formed UTF-8.
bool IsValidUtf8(std::string_view s);
// Rust's String::from_utf8_lossy: each maximal invalid subpart becomes U+FFFD.
std::string Utf8Lossy(std::string_view bytes);

// Unicode properties (utf8proc tables).
bool IsLetter(char32_t cp);       // L*
bool IsNumeric(char32_t cp);      // Nd, Nl, No (Rust char::is_numeric)
bool IsPunctuation(char32_t cp);  // P* or ASCII punctuation (Rust is_punc)
bool IsWhitespace(char32_t cp);   // White_Space property (Rust char::is_whitespace)
bool IsAlphanumeric(char32_t cp);

enum class NormalForm { kNFC, kNFD, kNFKC, kNFKD };
// Normalizes valid UTF-8; Error when utf8proc rejects the input.
std::string Normalize(std::string_view s, NormalForm form);
// Per-character full lowercase (Rust char::to_lowercase, no final-sigma rule).
std::string Lowercase(std::string_view s);

// GPT-2 byte-level alphabet: byte b <-> a printable code point.
char32_t ByteToChar(uint8_t b);
// Returns -1 when cp is not one of the 256 byte-level characters.
int CharToByte(char32_t cp);
// Maps every byte of s to its byte-level character (UTF-8 encoded).
void AppendByteLevel(std::string& out, std::string_view s);

}  // namespace proctor::text
