// What `proctor quantize --type` quantizes: a model as llama.cpp's full-precision GGUF of it, the
// metadata in order and every tensor under its GGUF name with its values.
//
// From a .gguf: the file itself.
// From a Hugging Face safetensors directory (Llama and Mistral checkpoints, architecture
// "llama"): the file llama.cpp's convert_hf_to_gguf.py writes with --outtype f32, which holds
// every value of an f32, f16 or bf16 checkpoint exactly; quantizing it then gives what
// llama-quantize gives from that file.
//   - metadata, in convert_hf_to_gguf.py's order: general.architecture, general.type "model",
//     general.name (the directory's name), llama.block_count, context_length (the config's
//     max_position_embeddings, 2048 when absent as in transformers' LlamaConfig),
//     embedding_length, feed_forward_length, attention.head_count, head_count_kv, rope.scaling.*
//     for linear RoPE scaling, rope.freq_base, attention.layer_norm_rms_epsilon,
//     attention.key_length / value_length (the head dim), general.file_type 0, vocab_size,
//     rope.dimension_count, general.quantization_version 2, then the tokenizer
//     (text/tokenizer/hf_to_gguf_vocab.h);
//   - tensors, in the checkpoint's name order, renamed (formats/gguf_model.h), the Q and K
//     projections' rows put in llama.cpp's order for adjacent-pair RoPE (within each head, row
//     j of the first half and row j of the second half become rows 2j and 2j+1), and Llama 3
//     RoPE scaling as a rope_freqs.weight tensor of per-frequency divisors (float32 arithmetic
//     as convert_hf_to_gguf.py's torch code does it). A tied head is no output tensor.
// Other architectures, RoPE types (yarn, dynamic) and checkpoints without tokenizer.json are
// Errors that say so.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "formats/gguf_writer.h"
#include "model/gguf_recipe.h"
#include "tensor/dtype.h"

namespace proctor {

struct GgufSourceTensor {
  std::string name{};             // GGUF name
  std::vector<uint64_t> dims{};   // contiguous dimension first
  DType type = DType::kF32;       // the type llama.cpp's full-precision file stores
  DType data_type = DType::kF32;  // how `data` holds the values (bf16 safetensors: kBF16)
  const uint8_t* data = nullptr;
  size_t bytes = 0;
  // > 0: a Llama Q/K projection of this many heads; GGUF row r is the checkpoint's row
  // HfRowOfGgufRow(r, rows / heads) (formats/gguf_model.h).
  int permute_heads = 0;
  std::shared_ptr<const std::vector<uint8_t>> owned{};  // generated tensors keep their bytes here
};

struct GgufSource {
  std::filesystem::path path;
  std::string kind;  // "gguf" or "safetensors"
  GgufMetadata metadata;
  GgufModelFacts facts;
  std::vector<GgufSourceTensor> tensors;
  std::shared_ptr<const void> keep_alive;  // the mapped files
};

// Appends a checkpoint directory's tokenizer.* keys (text::AddHfTokenizerAsGgufVocab: the
// engine does not tokenize, so the caller supplies it).
using AddGgufVocabulary =
    std::function<void(const std::filesystem::path& dir, const nlohmann::json& config,
                       int64_t vocab_size, GgufMetadata& metadata)>;

// A .gguf file or a safetensors directory (see above); Error with the reason otherwise
// (`add_vocabulary` is needed for a directory only).
GgufSource OpenGgufSource(const std::string& model_spec, const AddGgufVocabulary& add_vocabulary);

}  // namespace proctor
