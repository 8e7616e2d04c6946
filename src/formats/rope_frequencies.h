// Rotary-embedding inverse frequencies and attention scaling, computed exactly as Hugging Face
// transformers does (modeling_rope_utils.py `_compute_*_parameters`), in f32.
//
// HF builds inv_freq as an f32 tensor from Python-double scalars; the f32 roundings (including
// torch's `scalar / tensor` = reciprocal(tensor) * scalar) are reproduced step by step so the
// angles pos * inv_freq match HF's to the last bit in the common cases. The `dynamic` type is
// evaluated at its init-time length (max_position_embeddings), as HF does until a sequence grows
// past it.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace proctor {

enum class RopeType { kDefault, kLinear, kDynamic, kYarn, kLlama3 };

// Parses HF's rope_type spelling ("default", "linear", "dynamic", "yarn", "llama3"); nullopt if
// unknown.
std::optional<RopeType> ParseRopeType(std::string_view name);
std::string_view RopeTypeName(RopeType type);

// The rope part of a config (HF v5 `rope_parameters`, or the older rope_theta + rope_scaling).
struct RopeParameters {
  RopeType type = RopeType::kDefault;
  double theta = 10000.0;
  double partial_rotary_factor = 1.0;
  // The rotated dimensions when the file states them as a count (GGUF rope.dimension_count);
  // else int(head_dim * partial_rotary_factor), as transformers computes them.
  std::optional<int> rotary_dim;
  // linear, dynamic, yarn, llama3. For yarn an absent factor means
  // max_position_embeddings / original_max_position_embeddings.
  std::optional<double> factor;
  // llama3 and yarn; yarn defaults it to max_position_embeddings.
  std::optional<int64_t> original_max_position_embeddings;
  double low_freq_factor = 1.0;   // llama3
  double high_freq_factor = 4.0;  // llama3
  // yarn
  std::optional<double> attention_factor;
  std::optional<double> beta_fast;  // default 32
  std::optional<double> beta_slow;  // default 1
  std::optional<double> mscale;
  std::optional<double> mscale_all_dim;
  bool truncate = true;
};

struct RopeFrequencies {
  std::vector<float> inv_freq;     // [rotary_dim / 2]
  float attention_scaling = 1.0f;  // multiplies cos and sin (yarn); 1 otherwise
  int rotary_dim = 0;              // RopeParameters::rotary_dim, else int(head_dim * factor)
};

// Throws proctor::Error("[model] ...") for missing or invalid parameters.
RopeFrequencies ComputeRopeFrequencies(const RopeParameters& rope, int head_dim,
                                       int64_t max_position_embeddings);

}  // namespace proctor
