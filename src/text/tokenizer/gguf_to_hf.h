// A GGUF vocabulary as Hugging Face tokenizer files, so that a model directory made from a .gguf
// (`proctor quantize` to MLX) carries its tokenizer.
//
// tokenizer.ggml.model "llama" (SentencePiece): Hugging Face's LlamaTokenizerFast form: BPE with
//   byte fallback and <unk>, merges derived from the scores (every split of a token into two
//   tokens, ranked by the token's score, as Hugging Face's converters do), a normalizer that
//   prepends U+2581 (tokenizer.ggml.add_space_prefix, default on) and writes spaces as U+2581,
//   the matching decoder; the rest as below.
// tokenizer.ggml.model "gpt2" with a pre-tokenizer preset proctor knows (gguf_presets.h):
//   tokenizer.json: model BPE over tokenizer.ggml.tokens (ids as stored) and tokenizer.ggml.merges
//     ("left right" split at the space), ignore_merges as the preset; pre_tokenizer a Sequence of
//     one Split (Isolated) per preset regex, then ByteLevel without its own regex; decoder
//     ByteLevel; control and user-defined tokens as added tokens (special for control); a
//     TemplateProcessing post-processor adding BOS (and EOS) as tokenizer.ggml.add_bos_token /
//     add_eos_token (else the preset) say.
//   tokenizer_config.json: add_bos_token, add_eos_token, bos_token, eos_token, chat_template
//     (tokenizer.chat_template), tokenizer_class PreTrainedTokenizerFast.
// Other vocabularies (WordPiece "bert", ...) have no such form here.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace proctor {
class GgufFile;  // formats/gguf.h
}

namespace proctor::text {

struct HfTokenizerFiles {
  std::string tokenizer_json;
  std::string tokenizer_config_json;
};

// nullopt, with the reason in `why`, for a vocabulary that has no such form.
std::optional<HfTokenizerFiles> GgufVocabAsHfTokenizer(const GgufFile& gguf, std::string* why);

// The same for a .gguf file, as (name, contents) pairs for a model directory
// ("tokenizer.json", "tokenizer_config.json"); empty, with the reason in `why`, when it has none.
std::vector<std::pair<std::string, std::string>> HfTokenizerFilesOf(
    const std::filesystem::path& gguf, std::string* why);

}  // namespace proctor::text
