// Every supported model family in one table (family_traits.cc): the names it goes by in
// config.json and GGUF files, and the flags that set it apart from plain Llama. The HF config
// reader, the GGUF reader, the config.json exporter and the reports all look a family up here,
// so adding a family is one ModelArch value and one row (plus its forward pass, when the block
// itself differs).
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace proctor {

// One value per table row, in row order (family_traits.cc checks it).
enum class ModelArch {
  kLlama,
  kMistral,
  kQwen2,
  kQwen3,
  kGemma2,
  kGemma3,
  kQwen35,
  kQwen3Next,
  kQwen3Moe,
  kMixtral,
  kPhi3
};

// The shape of a decoder layer, which picks the forward pass (model/*_forward.cc).
enum class BlockStyle {
  kLlama,   // x += attn(norm(x)); x += mlp(norm(x)), the MLP dense or (qwen3_moe) a mixture of
            // experts
  kGemma,   // x += norm(attn(norm(x))); x += norm(mlp(norm(x))); embeddings x sqrt(hidden),
            // GeGLU, RMSNorm by (1 + weight) in HF checkpoints, optional logit soft-capping
  kHybrid,  // Qwen3.5, Qwen3-Next: x += mixer(norm(x)); x += mlp(norm(x)), the mixer a gated
            // DeltaNet (linear attention) or gated full attention per layer, the MLP dense or
            // (Qwen3-Next) a mixture of experts; RMSNorm by (1 + weight)
};

// Whether q/k/v carry biases.
enum class AttentionBiasRule {
  kFromConfig,  // config.json "attention_bias" (default false); GGUF: the bias tensors are present
  kAlways,      // the architecture always has them
  kNever,       // the architecture never has them
};

// How a family lays out Q/K rows in GGUF files, which decides the RoPE pairing there
// (Hugging Face checkpoints always rotate halves).
enum class GgufRopePairing {
  kHalves,         // x[i] with x[i + d/2], as in the HF checkpoint
  kAdjacentPairs,  // x[2i] with x[2i+1]: llama.cpp's converter permuted the Q/K rows
};

// Which layers use config.json's "sliding_window" when it has no "layer_types" (which, when
// present, decides for every family).
enum class SlidingWindowRule {
  kNone,                  // "sliding_window" is ignored
  kEveryLayer,            // "sliding_window" > 0 applies to every layer
  kUseSlidingWindowFlag,  // only when "use_sliding_window" is true, on layers from
                          // "max_window_layers" on (Qwen2's convention)
  kEvenLayers,            // layers 0, 2, 4... (Gemma 2 before "layer_types")
  kPattern,               // all but every "sliding_window_pattern"-th layer (Gemma 3 before
                          // "layer_types"; pattern 6 when absent)
};

// Where a family's checkpoint keeps the layer tensors not every family names alike (relative to
// "model.layers.N."), and the projections it stores fused; the forward's loader reads these.
struct LayerTensorNames {
  // The mixture of experts: "<moe>.<router>" and "<moe>.experts.E.<expert_gate|up|down>".
  std::string_view moe = "mlp";
  std::string_view router = "gate";
  std::string_view expert_gate = "gate_proj";
  std::string_view expert_up = "up_proj";
  std::string_view expert_down = "down_proj";
  // Phi-3: self_attn.qkv_proj holds q, k, v rows in that order, mlp.gate_up_proj the gate rows
  // then the up rows (transformers' chunk(2)).
  bool fused_qkv = false;
  bool fused_gate_up = false;
};

struct FamilyTraits {
  ModelArch arch;
  BlockStyle block;
  std::string_view hf_model_type;      // config.json "model_type"; also the family's name
  std::string_view hf_architecture;    // config.json "architectures" entry written on export
  std::string_view gguf_architecture;  // GGUF "general.architecture"; empty: none of its own
  AttentionBiasRule attention_bias;
  bool qk_norm;  // RMSNorm over each q/k head before RoPE
  GgufRopePairing gguf_rope_pairing;
  SlidingWindowRule sliding_window;
  bool tie_word_embeddings_default;  // when config.json omits "tie_word_embeddings"
  bool hf_config_has_bias_keys;      // the exported config.json spells out attention_bias and
                                     // mlp_bias (LlamaConfig's keys)
  bool partial_rotary = false;       // "partial_rotary_factor" below 1 is read (else refused)
  LayerTensorNames tensors = {};
};

// The table, one row per ModelArch value in enum order.
std::span<const FamilyTraits> Families();
const FamilyTraits& FamilyOf(ModelArch arch);
// nullptr when no family has that name.
const FamilyTraits* FindFamilyByHfModelType(std::string_view model_type);
const FamilyTraits* FindFamilyByGgufArchitecture(std::string_view architecture);
// The names accepted, for errors: "llama, mistral, qwen2, qwen3, ..." / "llama, qwen2, ...".
std::string SupportedHfModelTypes();
std::string SupportedGgufArchitectures();

// The family's name ("llama", "mistral", "qwen2", "qwen3", "gemma2", "gemma3_text", ...).
inline std::string_view ArchName(ModelArch arch) { return FamilyOf(arch).hf_model_type; }

}  // namespace proctor
