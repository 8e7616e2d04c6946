// What a loaded model is made of, for `proctor inspect MODEL`: architecture and sizes, a histogram
// of weight types (an MLX-quantized matrix - packed codes, scales and biases - counts as one
// tensor of type "affine 4-bit g64", "mxfp4", ...), bits per weight including the scales and
// biases, and the size on disk against the size the engine keeps in memory.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/load.h"

namespace proctor {

struct WeightTypeStats {
  std::string type;        // "bf16", "q4_k", "affine 4-bit g64", "nvfp4", ...
  int64_t tensors = 0;     // logical tensors (an MLX matrix counts once)
  int64_t parameters = 0;  // logical values
  uint64_t bytes = 0;      // stored bytes (codes + scales + biases for MLX)
  double BitsPerWeight() const { return parameters ? 8.0 * bytes / parameters : 0.0; }
};

struct ModelSummary {
  std::string spec, source, format;  // format: "safetensors" or "gguf"
  ModelConfig config;
  int64_t tensors = 0;       // logical parameter tensors
  int64_t file_tensors = 0;  // tensors as stored in the files
  int64_t parameters = 0;    // CountModelParameters
  // Stored tensors that are not parameters (IsModelParameter), with their bytes.
  std::vector<std::string> non_parameters;
  uint64_t non_parameter_bytes = 0;
  uint64_t weight_bytes = 0;  // every tensor's stored bytes
  uint64_t disk_bytes = 0;    // the weight files (.safetensors / .gguf) on disk
  int64_t files = 0;
  // Bytes of weights the engine holds: the tensors are used in place from the mapped files
  // (quantized stays quantized), plus any copies the loader owns.
  uint64_t resident_bytes = 0;
  uint64_t f32_bytes = 0;              // the same parameters as f32, for comparison
  std::vector<WeightTypeStats> types;  // most bytes first
  // A GGUF's general.file_type as llama.cpp names it ("q4_k_m"; "type 24" for one proctor does
  // not write); empty when the file has none.
  std::string gguf_file_type;

  double BitsPerWeight() const { return parameters ? 8.0 * weight_bytes / parameters : 0.0; }
};

// Whether a stored tensor is one of the model's parameters. Not parameters: a tied LM head the
// file stores anyway (a byte-identical copy of the embedding, as some GGUF files carry it),
// GGUF's rope_freqs (llama3 rope factors, a buffer) and transformers' rotary inv_freq buffers.
// `proctor quantize` writes only parameters; inspect and compare count only them.
bool IsModelParameter(const ModelConfig& config, std::string_view tensor_name);

// The model's parameters: every parameter tensor's values, an MLX-quantized matrix counted by
// its logical [out, in] shape (not its packed codes), scales and biases not counted.
int64_t CountModelParameters(const ModelConfig& config, const WeightStore& weights);

ModelSummary SummarizeModel(const LoadedModel& model);

// Multi-line text for a terminal, and the same facts as JSON (bytes as integers).
std::string FormatModelSummary(const ModelSummary& summary);
nlohmann::json ModelSummaryToJson(const ModelSummary& summary);

}  // namespace proctor
