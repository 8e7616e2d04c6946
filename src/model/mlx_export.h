// `proctor quantize`: turns a full-precision model (safetensors directory in f32/f16/bf16, or a
// GGUF with float tensors) into an MLX-format directory that mlx-lm can load.
//
// Output directory (docs/quantization.md, docs/FORMATS.md section 6):
//   model.safetensors (or model-0000i-of-0000n.safetensors shards) + model.safetensors.index.json
//     every quantized module M: M.weight U32 [out, in*bits/32], M.scales [out, in/group]
//     (source dtype for affine; U8 for mxfp4/mxfp8/nvfp4), M.biases (affine only); every other
//     tensor copied in its own dtype. GGUF llama Q/K rows are put back in Hugging Face order.
//   config.json: the source config (or one built from GGUF metadata) plus
//     "quantization" = {"group_size", "bits", ["mode" when not affine], per-module overrides
//     (an object for recipe layers, false for --skip)} and the same block as
//     "quantization_config" (as mlx-lm writes it).
//   tokenizer and template files copied from a safetensors source when present; for a GGUF
//   source the files the caller converted from its vocabulary (options.extra_files).
// The directory is built under a temporary name beside DIR and renamed into place at the end:
// a failed run leaves nothing behind.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "quant/mlx_quant.h"

namespace proctor {

struct LoadedModel;  // model/load.h

struct MlxQuantizeOptions {
  quant::MlxMode mode = quant::MlxMode::kAffine;
  int bits = 0;          // 0: the mode's default (affine 4, mxfp4 4, mxfp8 8, nvfp4 4) or the
                         // recipe's low bits
  int group_size = 0;    // 0: the mode's default (affine 64, mxfp4 32, mxfp8 32, nvfp4 16)
  std::string recipe{};  // "" or mixed_2_6 / mixed_3_4 / mixed_3_6 / mixed_4_6
  std::vector<std::string> skip_patterns{};      // module paths matching one stay full precision
  uint64_t max_shard_bytes = uint64_t{5} << 30;  // mlx-lm's 5 GiB shards
  // Files written into the directory as given (name, contents): a GGUF source's tokenizer as
  // tokenizer.json + tokenizer_config.json (text::HfTokenizerFilesOf; this layer has no
  // tokenizers), and why there are none when there are none.
  std::vector<std::pair<std::string, std::string>> extra_files{};
  std::string no_tokenizer_reason{};
  // Called before each module is written (progress; tests throw from it to simulate failure).
  std::function<void(const std::string& tensor, size_t index, size_t count)> on_tensor{};
};

// What happened to one source tensor.
struct MlxTensorResult {
  std::string name;  // source tensor name (HF spelling)
  bool quantized = false;
  int bits = 0;  // quantized only
  int group_size = 0;
  std::string kept_reason;   // why a quantizable weight was kept ("" for norms / biases)
  bool quantizable = false;  // a Linear / Embedding weight
  int64_t parameters = 0;    // elements of the source tensor
  uint64_t source_bytes = 0;
  uint64_t output_bytes = 0;  // weight + scales + biases, or the copied tensor
};

struct MlxQuantizeReport {
  std::filesystem::path source;
  std::filesystem::path out_dir;
  quant::MlxMode mode = quant::MlxMode::kAffine;
  int bits = 0;
  int group_size = 0;
  std::string recipe;
  std::vector<MlxTensorResult> tensors;   // sorted by name
  std::vector<std::string> copied_files;  // tokenizer.json, ...
  std::vector<std::string> notes;         // e.g. "GGUF source: no tokenizer files written"
  int64_t total_parameters = 0;
  uint64_t tensor_bytes = 0;  // all tensor data written
  uint64_t output_bytes = 0;  // every file in the output directory
  int quantized_count = 0;
  int kept_count = 0;  // tensors copied (quantizable or not)
  // mlx-lm's compute_bits_per_weight: 8 * tensor bytes / parameters (scales, biases, norms
  // included); and the same over the quantized modules only.
  double bits_per_weight = 0.0;
  double quantized_bits_per_weight = 0.0;

  nlohmann::json ToJson() const;
  std::string Summary() const;  // multi-line human summary (kept tensors and why, bpw, size)
};

// Resolved parameters: defaults filled in and validated. Error (naming the values) for an
// unknown recipe, a recipe with a non-affine mode, bits/group_size MLX does not define, or
// --bits that contradicts the recipe.
MlxQuantizeOptions ResolveMlxQuantizeOptions(const MlxQuantizeOptions& options);

// Quantizes `source_spec` (anything LoadModel accepts) into `out_dir`. Error when out_dir exists
// and is not an empty directory, when the source is already quantized (a quantization block in
// config.json, .scales tensors, U32 or GGUF block-quantized tensors), or for invalid options.
MlxQuantizeReport QuantizeModelToMlx(const std::string& source_spec,
                                     const std::filesystem::path& out_dir,
                                     const MlxQuantizeOptions& options);

// The HF config.json proctor writes for a model that has none (GGUF sources): model_type,
// architectures, sizes, rms_norm_eps, rope_theta / rope_scaling (the older spelling mlx-lm reads),
// tie_word_embeddings, token ids, torch_dtype.
nlohmann::json HfConfigJsonFor(const LoadedModel& model);

}  // namespace proctor
