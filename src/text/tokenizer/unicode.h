// Unicode helpers shared by the tokenizers: categories (utf8proc), normalization forms, case
// mapping and GPT-2's byte<->char table. UTF-8 itself is util/utf8.h; the tokenizers decode with
// InvalidByte::kFlagged, so a stray byte has no property, no case and no byte-level character.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace proctor::text {

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
