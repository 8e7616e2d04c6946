// RuntimeModel: the engine's forward pass for every supported family.
//
// The model reads its weights in their stored dtype through ops::MatMul (nothing is converted up
// front), MLX-quantized linear layers and embeddings included. The shared blocks (attention with
// its variants, the gated MLP, norms) live in transformer_blocks.cc; each family's decoder layer
// is a few lines in a file of its own that read like the math: llama_forward.cc (llama, mistral,
// qwen2, qwen3), gemma_forward.cc (gemma2, gemma3), hybrid_forward.cc (qwen3_5_text, whose
// linear-attention mixer is gated_deltanet.cc). FamilyTraits::block picks one.
//
//   ForwardHidden(ids, cache)  runs T new tokens at positions cache.position().. through every
//                              layer, appends their keys/values to the cache, and returns the
//                              final-normed hidden states [T, hidden] (no LM head).
//   LogitsFromHidden(h)        applies the LM head (and a final soft-cap) to any rows.
// Prefill therefore never builds vocabulary-sized logits it does not need. Any chunking of a
// sequence gives the same result up to f32 summation order in attention (tested to 1e-5).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
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
  // > 0: one forward runs at most this many positions; ForwardHidden splits a longer call into
  // pieces of this size (the `chunk` lever of `kl --self`: two arms chunked differently over the
  // same tokens). 0: as the caller gives them.
  int64_t forward_chunk = 0;
};

// "f32" / "bf16" / "q8" -> ComputeMode; Error naming the value otherwise.
ops::ComputeMode ParseComputeMode(std::string_view name);
std::string_view ComputeModeName(ops::ComputeMode mode);

// The tensor names (under "model.layers.N.", without ".weight") of a decoder layer's norms for a
// block style; empty when the block has no such norm. The one place both the model and the
// weight checks (load.h) take them from.
struct LayerNormNames {
  std::string_view attention;      // before attention
  std::string_view attention_out;  // on attention's output
  std::string_view mlp;            // before the MLP
  std::string_view mlp_out;        // on the MLP's output
};
LayerNormNames NormNamesOf(BlockStyle block);

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
  // Token ids outside [0, vocab) throw Error. `after_layer`, when set, sees the residual stream
  // [T, hidden] after each layer (tests compare it with Hugging Face's hidden states).
  using LayerObserver = std::function<void(int layer, const MatView& residual)>;
  Tensor ForwardHidden(std::span<const int32_t> ids, ModelCache& cache,
                       const LayerObserver& after_layer = {}) const;

  // logits [h.rows, vocab] = h · lm_head^T (f32 out, compute mode as configured).
  Tensor LogitsFromHidden(const MatView& hidden) const;
  void LogitsFromHidden(const MatView& hidden, MutMatF32 logits) const;

  // The matrix-product kernel each weight type of the model runs with for `rows` activation rows
  // on this CPU (ops::MatMulKernelName), e.g. {"q4_0": "gguf-matvec-avx2", "q6_K": ...}.
  std::map<std::string, std::string> MatMulKernels(int64_t rows) const;

  // A mixture-of-experts model's expert weights: all of them, and what a token's routing reads
  // (experts_per_token routed experts plus the shared expert, summed over the MoE layers).
  struct ExpertBytes {
    uint64_t all = 0;
    uint64_t per_token = 0;
  };
  ExpertBytes ExpertWeightBytes() const;
  // Expert weight bytes the forward passes so far have read (each routed expert's matrices once
  // per call that routes a token to it, the shared expert's once per call), for `bench`.
  uint64_t ExpertBytesRead() const { return expert_bytes_read_.load(std::memory_order_relaxed); }

 private:
  // A SwiGLU MLP's projections: down(silu(gate(x)) * up(x)).
  struct MlpWeights {
    ops::LinearWeight gate, up, down;
  };
  struct LayerWeights {
    MatView attention_norm;      // before attention (HF input_layernorm)
    MatView attention_out_norm;  // on attention's output (Gemma post_attention_layernorm)
    MatView mlp_norm;            // before the MLP (Llama post_attention_layernorm, Gemma
                                 // pre_feedforward_layernorm)
    MatView mlp_out_norm;        // on the MLP's output (Gemma post_feedforward_layernorm)
    ops::LinearWeight q, k, v, o;
    MatView q_bias, k_bias, v_bias, o_bias;  // rows == 0 when absent
    MatView q_norm, k_norm;                  // rows == 0 unless qk_norm
    ops::LinearWeight gate, up, down;
    // Gated DeltaNet (the linear-attention layers of hybrid models; empty elsewhere).
    ops::LinearWeight in_proj_qkv, in_proj_z, in_proj_b, in_proj_a, out_proj;
    MatView conv1d;       // [q, k, v channels, kernel taps] (HF [C, 1, K])
    MatView dt_bias;      // [value heads]
    MatView a;            // [value heads]: A_log, or -exp(A_log) in llama.cpp's layout
    MatView output_norm;  // [value_head_dim], the gated RMSNorm's weight (plain)
    // Mixture of experts (the MoE layers of qwen3_next and qwen3_moe; empty elsewhere): the router
    // [experts, hidden], the routed experts, the shared expert and its gate [1, hidden].
    ops::LinearWeight router;
    std::vector<MlpWeights> experts;
    MlpWeights shared_expert;
    ops::LinearWeight shared_expert_gate;
  };

  // The family's decoder layer: x is the residual stream [T, hidden], updated in place.
  void LlamaLayer(int layer, MutMatF32 x, std::span<const int32_t> positions,
                  ModelCache& cache) const;
  void GemmaLayer(int layer, MutMatF32 x, std::span<const int32_t> positions,
                  ModelCache& cache) const;
  void HybridLayer(int layer, MutMatF32 x, std::span<const int32_t> positions,
                   ModelCache& cache) const;

  // Shared blocks (transformer_blocks.cc). Each returns a view of a per-thread buffer that the
  // next call of the same block reuses.
  // RMSNorm of x by `weight` (times 1 + weight when the config says so) into `out`.
  void Norm(const MatView& x, const MatView& weight, MutMatF32 out) const;
  // o_proj(attention(rope(q), rope(k), v)) of the normed input [T, hidden]: q/k/v projections
  // with their biases, q/k norms, the layer's rope and window, soft-capped scores, the cache.
  MutMatF32 Attention(int layer, const MatView& normed, std::span<const int32_t> positions,
                      ModelCache& cache) const;
  // The layer's MLP of the normed input [T, hidden]: down_proj(act(gate_proj(n)) * up_proj(n)),
  // or the mixture of experts (moe.cc) on MoE layers.
  MutMatF32 Mlp(int layer, const MatView& normed) const;
  // down(act(gate(n)) * up(n)) with the given projections (the kDown buffer).
  MutMatF32 GatedMlp(const MlpWeights& w, const MatView& normed) const;
  // The mixture of experts (moe.cc): the routed experts' outputs, weighted, plus the gated shared
  // expert's, for the normed input [T, hidden].
  MutMatF32 MixtureOfExperts(int layer, const MatView& normed) const;
  static uint64_t MlpBytes(const MlpWeights& mlp);
  // Rows regrouped from a fused projection (Qwen3-Next's in_proj_qkvz / in_proj_ba): the rows
  // [begin, end) of `fused`, range after range, copied into storage the model owns (an MLX
  // matrix's codes, scales and biases alike).
  MatView RegroupedRows(const MatView& fused,
                        const std::vector<std::pair<int64_t, int64_t>>& ranges);
  ops::LinearWeight RegroupedRows(const ops::LinearWeight& fused,
                                  const std::vector<std::pair<int64_t, int64_t>>& ranges);
  // out_proj(gated_norm(delta_rule(conv(in_proj_qkv(n))), in_proj_z(n))) of the normed input
  // [T, hidden]: the gated DeltaNet (gated_deltanet.cc), advancing the layer's recurrent state.
  MutMatF32 GatedDeltaNet(int layer, const MatView& normed, ModelCache& cache) const;

  const ModelConfig& config_;
  RuntimeOptions options_;
  ThreadPool& pool_;
  RopeFrequencies rope_;                         // full-attention layers (every layer, usually)
  std::optional<RopeFrequencies> sliding_rope_;  // sliding-window layers when it differs
  ops::RopeStyle rope_style_;
  float embed_scale_ = 1.0f;  // Gemma: sqrt(hidden) in f32
  MatView final_norm_;
  ops::LinearWeight embed_tokens_, lm_head_;  // dense or MLX-quantized (model/mlx_weights.h)
  std::vector<LayerWeights> layers_;
  std::deque<std::vector<uint8_t>> regrouped_;  // RegroupedRows' storage (elements never move)
  mutable std::atomic<uint64_t> expert_bytes_read_{0};
};

}  // namespace proctor
