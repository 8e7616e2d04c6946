// `proctor quantize SRC --out OUT.gguf --type T`: a GGUF with float tensors (F32, F16, BF16), or
// a Llama safetensors checkpoint as llama.cpp's convert_hf_to_gguf.py --outtype f32 writes it
// (model/gguf_source.h), re-written as llama.cpp's file type T, with llama-quantize's
// per-tensor types (model/gguf_recipe.h) and ggml's reference quantizers (quant/ggml_blocks.h),
// so the blocks are the ones llama-quantize writes without an importance matrix.
//
// Every metadata key of the source is carried over in its order (the tokenizer, the chat
// template, the architecture's sizes), then general.quantization_version = 2 and
// general.file_type = T's number are set (moved to the end, as llama-quantize does) and split.*
// keys dropped. Tensors are written in llama.cpp's order (model/gguf_recipe.h), each quantized
// row by row on the thread pool (rows are independent: the bytes do not depend on the thread
// count). The file is written atomically: a failed run leaves nothing behind.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/gguf_source.h"
#include "tensor/dtype.h"

namespace proctor {

struct GgufQuantizeOptions {
  std::string type;   // a GgufFileTypeNames() name, e.g. "q4_k_m"
  bool pure = false;  // every quantizable tensor at the base type (llama-quantize --pure)
  // Called before each tensor is written (progress; tests throw from it to simulate failure).
  std::function<void(const std::string& tensor, size_t index, size_t count)> on_tensor{};
  // The tokenizer of a safetensors source (text::AddHfTokenizerAsGgufVocab).
  AddGgufVocabulary vocabulary{};
};

struct GgufTensorResult {
  std::string name;  // GGUF spelling ("blk.0.attn_q.weight")
  DType stored = DType::kF32;
  DType type = DType::kF32;
  std::string why;  // how llama.cpp's rules changed the base type, or ""
  int64_t parameters = 0;
  uint64_t source_bytes = 0;
  uint64_t output_bytes = 0;
};

struct GgufQuantizeReport {
  std::filesystem::path source;
  std::string source_kind;  // "gguf" or "safetensors"
  std::filesystem::path out_file;
  std::string file_type;  // "q4_k_m"
  uint32_t llama_ftype = 0;
  bool pure = false;
  std::vector<GgufTensorResult> tensors;  // in file order
  int64_t total_parameters = 0;
  uint64_t tensor_bytes = 0;  // all tensor data written
  uint64_t file_bytes = 0;
  double bits_per_weight = 0.0;  // 8 * tensor bytes / parameters (every tensor)
  double seconds = 0.0;

  nlohmann::json ToJson() const;
  std::string Summary() const;  // types used (count, parameters, size), the rules' changes, bpw
};

// Checks everything before writing: an unknown type (the message lists them), an out_file that
// exists or does not end in .gguf, a source GgufSource refuses, a source tensor that is already
// quantized.
GgufQuantizeReport QuantizeModelToGguf(const std::string& source_spec,
                                       const std::filesystem::path& out_file,
                                       const GgufQuantizeOptions& options);

}  // namespace proctor
