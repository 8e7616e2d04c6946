// GGUF vocabulary tokenizers (tokenizer.ggml.model "llama" and "gpt2"), as llama.cpp tokenizes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string_view>
#include <vector>

#include "text/tokenizer/tokenizer.h"

namespace proctor::text {

// Loads the vocabulary of a .gguf file (a full model or a vocabulary-only file).
std::unique_ptr<Tokenizer> LoadGgufTokenizer(const std::filesystem::path& path);

// Encodes without BOS/EOS and without recognising control tokens written in the text (only
// user-defined tokens are split out): llama.cpp's tokenize(text, add_special=false,
// parse_special=false), which its test vectors use. Error when tokenizer is not from a GGUF.
std::vector<int32_t> EncodeGgufWithoutParsingSpecial(const Tokenizer& tokenizer,
                                                     std::string_view text);

}  // namespace proctor::text
