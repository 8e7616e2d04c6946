// JSON field helpers shared by the tokenizer.json pipeline stages (hf_components.cc: normalizers
// and pre-tokenizers; hf_decoders.cc: post-processors and decoders). Errors name `where` (the
// file) and the field.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "text/tokenizer/hf_components.h"

namespace proctor::text {

// The object's "type" string; an Error when there is none.
std::string TypeOf(const nlohmann::json& j, const std::string& where);
// j[key] as a bool; `fallback` when absent or null.
bool GetBool(const nlohmann::json& j, const char* key, bool fallback);
// j[key], which must be a string.
std::string GetString(const nlohmann::json& j, const char* key, const std::string& where);
// j[key], which must be an array (the parts of a Sequence).
const nlohmann::json& ArrayField(const nlohmann::json& j, const char* key,
                                 const std::string& where);
[[noreturn]] void Unsupported(const char* stage, const std::string& type, const std::string& where);

// How far a normalizer or decoder may grow text: one Replace, and a whole Sequence, at most 16
// times its input plus 4096 bytes. Eight chained Replaces that each expand a character to ten
// would otherwise reach gigabytes; CheckGrowth refuses it naming `where` and the sizes.
size_t GrowthLimit(size_t input_bytes);
void CheckGrowth(size_t input_bytes, size_t output_bytes, std::string_view step,
                 const std::string& where);

// Every match of `pattern` in s replaced by `content`; the size is checked (CheckGrowth) before
// the text is built.
std::string ReplaceAll(std::string_view s, const Pattern& pattern, std::string_view content,
                       const std::string& where);

// Metaspace (pre-tokenizer and decoder): when the replacement character is prepended.
enum class PrependScheme { kAlways, kFirst, kNever };
PrependScheme ParsePrependScheme(const nlohmann::json& j, const std::string& where);
// Metaspace "replacement": exactly one character.
char32_t ParseReplacement(const nlohmann::json& j, const std::string& where);

}  // namespace proctor::text
