// RuntimeModel: the engine's forward pass for the Llama family (llama, mistral, qwen2, qwen3).
//
// One straight-line implementation; the family members differ by config flags only (q/k/v
// biases, q/k RMSNorm, tied head, rope convention and scaling, sliding window). Weights are used
// in their stored dtype through ops::MatMul (nothing is converted up front), MLX-quantized
// linear layers and embeddings included.
//
//   ForwardHidden(ids, cache)  runs T new tokens at positions cache.position().. through every
//                              layer, appends their keys/values to the cache, and returns the
//                              final-normed hidden states [T, hidden] (no LM head).
//   LogitsFromHidden(h)        applies the LM head to any rows: [rows, vocab].
// Prefill therefore never builds vocabulary-sized logits it does not need. Any chunking of a
// sequence gives the same result up to f32 summation order in attention (tested to 1e-5).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "formats/model_config.h"
#include "formats/rope_frequencies.h"
#include "formats/weights.h"
#include "model/kv_cache.h"
#include "ops/matmul.h"
#include "ops/rope.h"
#include "tensor/tensor.h"
#include "util/thread_pool.h"

namespace proctor {

struct RuntimeOptions {
  ops::ComputeMode compute = ops::ComputeMode::kF32;
  KvScheme kv;                 // KV cache storage (f32 default)
  ThreadPool* pool = nullptr;  // null: ThreadPool::Global()
};

// "f32" / "bf16" -> ComputeMode; Error naming the value otherwise.
ops::ComputeMode ParseComputeMode(std::string_view name);
std::string_view ComputeModeName(ops::ComputeMode mode);

class RuntimeModel {
 public:
  // Keeps references to config and weights (they must outlive the model). Error when the
  // architecture is not one this forward pass implements or a weight is missing.
  RuntimeModel(const ModelConfig& config, const WeightStore& weights, RuntimeOptions options = {});

  const ModelConfig& config() const { return config_; }
  const RuntimeOptions& options() const { return options_; }
  int vocab_size() const { return config_.vocab_size; }
  int hidden_size() const { return config_.hidden_size; }

  // An empty cache for one sequence; reserve_positions pre-sizes the KV storage.
  ModelCache MakeCache(int64_t reserve_positions = 0) const;

  // Runs ids through the model (see the file comment). Returns [ids.size(), hidden] f32.
  // Token ids outside [0, vocab) throw Error.
  Tensor ForwardHidden(std::span<const int32_t> ids, ModelCache& cache) const;

  // logits [h.rows, vocab] = h · lm_head^T (f32 out, compute mode as configured).
  Tensor LogitsFromHidden(const MatView& hidden) const;
  void LogitsFromHidden(const MatView& hidden, MutMatF32 logits) const;

 private:
  struct LayerWeights {
    MatView input_norm, post_attention_norm;
    ops::LinearWeight q, k, v, o;
    MatView q_bias, k_bias, v_bias, o_bias;  // rows == 0 when absent
    MatView q_norm, k_norm;                  // rows == 0 unless qk_norm
    ops::LinearWeight gate, up, down;
  };

  void AttentionBlock(int layer, MutMatF32 x, std::span<const int32_t> positions,
                      ModelCache& cache) const;
  void MlpBlock(int layer, MutMatF32 x) const;

  const ModelConfig& config_;
  RuntimeOptions options_;
  ThreadPool& pool_;
  RopeFrequencies rope_;
  ops::RopeStyle rope_style_;
  float attention_scale_;
  MatView final_norm_;
  ops::LinearWeight embed_tokens_, lm_head_;  // dense or MLX-quantized (model/mlx_weights.h)
  std::vector<LayerWeights> layers_;
};

}  // namespace proctor
