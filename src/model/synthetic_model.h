// Random-weight models with the exact shapes of real ones, so speed can be measured (and the
// forward pass exercised) without downloading anything.
//
// Values are seeded and reproducible: matrices uniform with variance 1/fan_in, norms 1 + small
// noise, embeddings std 0.02 ... 1. Float types (f32, f16, bf16) store the values rounded; GGUF
// block types (q8_0, q4_0, q4_1, q5_0, q5_1, q2_k ... q6_k) get random codes and sub-block
// scales with fp16 scales chosen so values have the same magnitude (norms stay f32, as in GGUF
// files). A matrix whose rows are not whole blocks (e.g. K-quants on a 64-wide toy) is f16.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "formats/model_config.h"
#include "formats/weights.h"
#include "tensor/dtype.h"

namespace proctor {

struct SyntheticModel {
  ModelConfig config;
  WeightStore weights;
};

// Names BuildSyntheticModel accepts: "qwen3-0.6b", "llama-3.2-1b", "tinyllama-1.1b",
// "qwen2.5-0.5b", and "tiny" (a 4-layer toy model for tests).
std::vector<std::string> SyntheticModelNames();

// The config of a named shape; Error listing the names for an unknown one.
ModelConfig SyntheticConfig(std::string_view name);

// Builds the weights for `config` in `dtype` (f32, f16, bf16 or a GGUF block type); Error
// otherwise.
SyntheticModel BuildSyntheticModel(const ModelConfig& config, DType dtype, uint64_t seed = 1);

// The tensors a model of `config` holds, under its family's HF names, with the magnitudes random
// weights take; each builder stores them its own way (synthetic_model.cc, synthetic_mlx.cc).
struct SyntheticTensorSink {
  // A linear layer's matrix "<path>.weight" [out, in], values within +-amplitude: stored in the
  // model's weight type.
  std::function<void(const std::string& name, int64_t out, int64_t in, float amplitude)> matrix;
  // A tensor kept in full precision (norm gains, biases, DeltaNet parameters, conv taps, routers):
  // [rows, cols] values center +- amplitude, with the stored `shape`.
  std::function<void(const std::string& name, int64_t rows, int64_t cols, float center,
                     float amplitude, const std::vector<int64_t>& shape)>
      kept;
};
void ForEachSyntheticTensor(const ModelConfig& config, const SyntheticTensorSink& sink);

}  // namespace proctor
