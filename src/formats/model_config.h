// The architecture description of a causal language model, whatever file it came from.
//
// ParseHfConfig reads a Hugging Face config.json; gguf_model.h builds the same struct from GGUF
// metadata. Both recognise the families of family_traits.h and take each family's flags from
// that table. Anything the forward pass would need but proctor does not implement (another
// architecture, an unknown RoPE type, mlp biases...) is refused with an Error naming it, so a
// model never loads with a silently ignored option.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "formats/family_traits.h"
#include "formats/mlx_quant_config.h"
#include "formats/rope_frequencies.h"

namespace proctor {

// The MLP's activation: down(act(gate(x)) * up(x)).
enum class MlpActivation {
  kSilu,      // Llama's SwiGLU
  kGeluTanh,  // Gemma's GeGLU: gelu with the tanh approximation (HF gelu_pytorch_tanh)
};

// The gated-DeltaNet (linear attention) layers of hybrid models: q/k heads of key_head_dim, v
// heads of value_head_dim (each q/k head serves num_value_heads / num_key_heads value heads), a
// causal depthwise conv of conv_kernel taps over the q, k, v channels.
struct LinearAttentionConfig {
  int num_key_heads = 0;
  int num_value_heads = 0;
  int key_head_dim = 0;
  int value_head_dim = 0;
  int conv_kernel = 0;
  // How the checkpoint stores the DeltaNet: Hugging Face's (conv1d taps [channels, 1, taps],
  // A_log); llama.cpp's (GGUF qwen35 and qwen3next, from its converter: taps [channels, taps], A
  // stored as ssm_a = -exp(A_log)); or mlx-lm's conversion (taps [channels, taps, 1], MLX's
  // Conv1d layout, and A_log; its other norms hold 1 + weight, ModelConfig::norm_adds_one false).
  enum class Storage { kHf, kLlamaCpp, kMlxLm };
  Storage storage = Storage::kHf;
  std::vector<int64_t> ConvWeightShape() const {
    if (storage == Storage::kLlamaCpp) return {conv_dim(), conv_kernel};
    if (storage == Storage::kMlxLm) return {conv_dim(), conv_kernel, 1};
    return {conv_dim(), 1, conv_kernel};
  }
  // The tensor (under linear_attn.) that holds A: "ssm_a" = -exp(A_log) (llama.cpp), else "A_log".
  const char* ATensorName() const { return storage == Storage::kLlamaCpp ? "ssm_a" : "A_log"; }
  // Value heads in tiled order (GGUF qwen35: value head h reads key head h % num_key_heads),
  // else grouped by key head as HF stores them (key head h / (num_value_heads / num_key_heads)).
  bool value_heads_tiled = false;
  // The key head a value head reads.
  int64_t KeyHeadOf(int64_t value_head) const {
    return value_heads_tiled ? value_head % num_key_heads
                             : value_head / (num_value_heads / num_key_heads);
  }
  int64_t key_dim() const { return int64_t{num_key_heads} * key_head_dim; }
  int64_t value_dim() const { return int64_t{num_value_heads} * value_head_dim; }
  int64_t conv_dim() const { return 2 * key_dim() + value_dim(); }  // q, k, v channels
};

// Mixture-of-experts MLPs (Qwen3-Next, Qwen3-MoE): per token, the softmax of the router's logits
// over num_experts, the experts_per_token largest (renormalised to sum 1 when norm_topk_prob),
// each selected expert a SwiGLU MLP of expert_intermediate_size, their outputs weighted and
// summed; plus (Qwen3-Next; 0 = none) a shared expert of shared_expert_intermediate_size times
// sigmoid(shared_expert_gate(x)).
struct MoeConfig {
  int num_experts = 0;
  int experts_per_token = 0;
  int expert_intermediate_size = 0;
  int shared_expert_intermediate_size = 0;
  bool norm_topk_prob = true;
};

struct ModelConfig {
  ModelArch arch = ModelArch::kLlama;
  std::string model_type;  // as written in the source ("llama", "qwen3", ...)
  int hidden_size = 0;
  int num_layers = 0;
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;    // explicit in the config, else hidden_size / num_heads
  int rotary_dim = 0;  // dimensions of each head that RoPE rotates (head_dim x partial factor)
  int intermediate_size = 0;
  int vocab_size = 0;
  int max_position_embeddings = 0;  // 0 = not given
  float rms_norm_eps = 1e-6f;
  bool tie_word_embeddings = false;  // lm_head is model.embed_tokens.weight
  // q/k/v projections carry biases (llama attention_bias also gives o_proj one: the forward pass
  // applies any *.bias tensor the weights contain).
  bool attention_bias = false;
  bool qk_norm = false;  // qwen3: RMSNorm over each head of q and k before RoPE
  // theta and scaling (rope_frequencies.h turns them into inverse frequencies).
  RopeParameters rope;
  // The rope of sliding-window layers when it differs from `rope` (Gemma 3's local rope).
  std::optional<RopeParameters> sliding_rope;
  MlpActivation mlp_activation = MlpActivation::kSilu;
  // RMSNorm multiplies by (1 + weight): Gemma's HF checkpoints (its GGUF files store 1 + weight
  // and use plain RMSNorm).
  bool norm_adds_one = false;
  // How RMSNorm sums its squares: as ggml does for GGUF files (llama.cpp's order), else in f32
  // lanes (ops::RmsNormSum).
  bool norm_sums_like_ggml = false;
  // Attention scores are q.k / sqrt(query_pre_attn_scalar) (Gemma's config key); 0 = head_dim.
  double query_pre_attn_scalar = 0.0;
  // Soft-capping, cap * tanh(x / cap), of attention scores (after scaling, before the mask) and
  // of the final logits; 0 = none (Gemma).
  float attn_logit_softcapping = 0.0f;
  float final_logit_softcapping = 0.0f;
  // Hybrid models: the layers that are gated-DeltaNet linear attention (empty: none) and its
  // sizes; full attention then also has an output gate (q_proj yields a gate per head, the
  // attention output is multiplied by its sigmoid).
  std::vector<bool> layer_uses_linear_attention;
  LinearAttentionConfig linear_attention;
  bool attention_output_gate = false;
  // How the DeltaNet's input projections are stored: one matrix each (in_proj_qkv, in_proj_z,
  // in_proj_b, in_proj_a: Qwen3.5); fused per key-head group (in_proj_qkvz and in_proj_ba:
  // Qwen3-Next); or in_proj_qkv and in_proj_z apart but in_proj_ba fused (llama.cpp's qwen3next,
  // whose converter splits only in_proj_qkvz). The loader regroups fused rows.
  enum class LinearProjections { kSeparate, kFused, kFusedBetaAlpha };
  LinearProjections linear_projections = LinearProjections::kSeparate;
  // The layers whose MLP is a mixture of experts (empty: none) and its sizes.
  std::vector<bool> layer_uses_moe;
  MoeConfig moe;
  // true: rotate adjacent pairs (x[2i], x[2i+1]) (GGUF llama: llama.cpp's converter permuted the
  // Q/K rows); false: rotate halves (x[i], x[i + d/2]) (HF checkpoints, GGUF qwen2/qwen3).
  bool rope_adjacent_pairs = false;
  // Sliding-window attention: the window (0 = none) and which layers use it (empty = all layers
  // when sliding_window > 0). Use SlidingWindowForLayer.
  int sliding_window = 0;
  std::vector<bool> layer_uses_sliding_window;
  int bos_token_id = -1;           // -1 = none
  std::vector<int> eos_token_ids;  // may be empty
  std::string stored_dtype;        // "float32", "bfloat16", "float16", or a GGUF type summary
  // config.json's MLX quantization block (mlx-lm checkpoints); nullopt when absent (and for GGUF).
  std::optional<MlxQuantization> mlx_quantization;
  // The multimodal wrapper this text model was read from ("qwen3_5", "gemma3"; empty: none):
  // its tensors carry the wrapper's prefixes (formats/multimodal_wrapper.h).
  std::string text_model_of;

  // The attention window of layer `layer` (0 = full attention).
  int SlidingWindowForLayer(int layer) const {
    if (sliding_window <= 0) return 0;
    if (layer_uses_sliding_window.empty()) return sliding_window;
    return layer_uses_sliding_window.at(static_cast<size_t>(layer)) ? sliding_window : 0;
  }
  bool IsMoeLayer(int layer) const {
    return !layer_uses_moe.empty() && layer_uses_moe.at(static_cast<size_t>(layer));
  }
  bool IsLinearAttentionLayer(int layer) const {
    return !layer_uses_linear_attention.empty() &&
           layer_uses_linear_attention.at(static_cast<size_t>(layer));
  }
  // The rope of layer `layer`.
  const RopeParameters& RopeForLayer(int layer) const {
    return sliding_rope && SlidingWindowForLayer(layer) > 0 ? *sliding_rope : rope;
  }
  // The multiplier of q.k in attention: 1 / sqrt(query_pre_attn_scalar or head_dim), in f32.
  float AttentionScale() const;
  // One-line summary for logs: "qwen3 L=2 d=64 heads=4/2 hd=32 ff=128 vocab=512 ...".
  std::string Summary() const;
};

// A config of family `arch` with the flags its table row fixes (arch, model_type, always-present
// biases, q/k norm, the tied-embeddings default) and, for Gemma, Hugging Face's defaults (GeGLU,
// (1 + weight) norms, query_pre_attn_scalar 256, Gemma 2's soft-caps 50 / 30); the sizes are
// left to the caller.
ModelConfig FamilyConfig(ModelArch arch);

// Parses a Hugging Face config.json. `origin` (e.g. the file path) starts every error message.
// Accepts both RoPE spellings (top-level rope_theta/rope_scaling and nested rope_parameters) and
// both dtype spellings (torch_dtype, dtype). A multimodal wrapper (qwen3_5, gemma3) is read as its
// text_config, the wrapper's tie_word_embeddings, token ids and MLX quantization block taking
// precedence (the block's module paths renamed as TextModelName does).
ModelConfig ParseHfConfig(const nlohmann::json& config_json, std::string_view origin);

// Checks the numbers are usable (positive, heads divide evenly, ...); Error naming origin.
void ValidateConfig(const ModelConfig& config, std::string_view origin);

}  // namespace proctor
