// The family-traits table. To add a family: a ModelArch value and a row here; readers, the
// exporter and the reports pick it up from the table.
#include "formats/family_traits.h"

#include <fmt/format.h>

#include <array>

namespace proctor {
namespace {

using enum AttentionBiasRule;
using enum GgufRopePairing;
using enum SlidingWindowRule;

constexpr auto kFamilies = std::to_array<FamilyTraits>({
    // Llama 1/2/3.x: the plain block; GGUF llama files hold llama.cpp's permuted Q/K rows.
    {.arch = ModelArch::kLlama,
     .block = BlockStyle::kLlama,
     .hf_model_type = "llama",
     .hf_architecture = "LlamaForCausalLM",
     .gguf_architecture = "llama",
     .attention_bias = kFromConfig,
     .qk_norm = false,
     .gguf_rope_pairing = kAdjacentPairs,
     .sliding_window = kNone,
     .tie_word_embeddings_default = false,
     .hf_config_has_bias_keys = true},
    // Mistral: Llama with a sliding window; llama.cpp converts it as "llama" (that row reads it).
    {.arch = ModelArch::kMistral,
     .block = BlockStyle::kLlama,
     .hf_model_type = "mistral",
     .hf_architecture = "MistralForCausalLM",
     .gguf_architecture = "",
     .attention_bias = kNever,
     .qk_norm = false,
     .gguf_rope_pairing = kHalves,
     .sliding_window = kEveryLayer,
     .tie_word_embeddings_default = false,
     .hf_config_has_bias_keys = false},
    // Qwen2 / Qwen2.5: q/k/v biases always.
    {.arch = ModelArch::kQwen2,
     .block = BlockStyle::kLlama,
     .hf_model_type = "qwen2",
     .hf_architecture = "Qwen2ForCausalLM",
     .gguf_architecture = "qwen2",
     .attention_bias = kAlways,
     .qk_norm = false,
     .gguf_rope_pairing = kHalves,
     .sliding_window = kUseSlidingWindowFlag,
     .tie_word_embeddings_default = false,
     .hf_config_has_bias_keys = false},
    // Qwen3 (dense): q/k RMSNorm per head.
    {.arch = ModelArch::kQwen3,
     .block = BlockStyle::kLlama,
     .hf_model_type = "qwen3",
     .hf_architecture = "Qwen3ForCausalLM",
     .gguf_architecture = "qwen3",
     .attention_bias = kFromConfig,
     .qk_norm = true,
     .gguf_rope_pairing = kHalves,
     .sliding_window = kUseSlidingWindowFlag,
     .tie_word_embeddings_default = false,
     .hf_config_has_bias_keys = false},
    // Gemma 2: sandwich norms, soft-capped attention and final logits, alternating sliding
    // window layers. Its GGUF stores 1 + weight for every norm (llama.cpp's converter).
    {.arch = ModelArch::kGemma2,
     .block = BlockStyle::kGemma,
     .hf_model_type = "gemma2",
     .hf_architecture = "Gemma2ForCausalLM",
     .gguf_architecture = "gemma2",
     .attention_bias = kFromConfig,
     .qk_norm = false,
     .gguf_rope_pairing = kHalves,
     .sliding_window = kEvenLayers,
     .tie_word_embeddings_default = true,
     .hf_config_has_bias_keys = false},
    // Gemma 3 (text): Gemma 2's block with q/k norms, a rope per layer type (local / global),
    // 5 sliding layers to 1 global.
    {.arch = ModelArch::kGemma3,
     .block = BlockStyle::kGemma,
     .hf_model_type = "gemma3_text",
     .hf_architecture = "Gemma3ForCausalLM",
     .gguf_architecture = "gemma3",
     .attention_bias = kFromConfig,
     .qk_norm = true,
     .gguf_rope_pairing = kHalves,
     .sliding_window = kPattern,
     .tie_word_embeddings_default = true,
     .hf_config_has_bias_keys = false},
    // Qwen3.5 (text): gated DeltaNet layers interleaved with gated full attention (partial
    // rotary, q/k norms).
    {.arch = ModelArch::kQwen35,
     .block = BlockStyle::kHybrid,
     .hf_model_type = "qwen3_5_text",
     .hf_architecture = "Qwen3_5ForCausalLM",
     .gguf_architecture = "qwen35",
     .attention_bias = kFromConfig,
     .qk_norm = true,
     .gguf_rope_pairing = kHalves,
     .sliding_window = kNone,
     .tie_word_embeddings_default = false,
     .hf_config_has_bias_keys = false,
     .partial_rotary = true},
    // Qwen3-Next: Qwen3.5's hybrid with the DeltaNet's input projections fused per key-head group
    // (in_proj_qkvz, in_proj_ba) and mixture-of-experts MLPs (routed experts + a gated shared
    // expert).
    {.arch = ModelArch::kQwen3Next,
     .block = BlockStyle::kHybrid,
     .hf_model_type = "qwen3_next",
     .hf_architecture = "Qwen3NextForCausalLM",
     .gguf_architecture = "qwen3next",
     .attention_bias = kFromConfig,
     .qk_norm = true,
     .gguf_rope_pairing = kHalves,
     .sliding_window = kNone,
     .tie_word_embeddings_default = false,
     .hf_config_has_bias_keys = false,
     .partial_rotary = true},
    // Qwen3-MoE: Qwen3's block with mixture-of-experts MLPs (no shared expert).
    {.arch = ModelArch::kQwen3Moe,
     .block = BlockStyle::kLlama,
     .hf_model_type = "qwen3_moe",
     .hf_architecture = "Qwen3MoeForCausalLM",
     .gguf_architecture = "qwen3moe",
     .attention_bias = kFromConfig,
     .qk_norm = true,
     .gguf_rope_pairing = kHalves,
     .sliding_window = kUseSlidingWindowFlag,
     .tie_word_embeddings_default = false,
     .hf_config_has_bias_keys = false},
    // Mixtral: Mistral's block with a mixture of experts in every layer (softmax router, top-k
    // renormalised), kept under block_sparse_moe with experts' w1 / w3 / w2. llama.cpp converts
    // it as "llama" with experts (GgufFamily picks this row for those), Q/K rows permuted.
    {.arch = ModelArch::kMixtral,
     .block = BlockStyle::kLlama,
     .hf_model_type = "mixtral",
     .hf_architecture = "MixtralForCausalLM",
     .gguf_architecture = "",
     .attention_bias = kNever,
     .qk_norm = false,
     .gguf_rope_pairing = kAdjacentPairs,
     .sliding_window = kEveryLayer,
     .tie_word_embeddings_default = false,
     .hf_config_has_bias_keys = false,
     .tensors =
         {.moe = "block_sparse_moe", .expert_gate = "w1", .expert_up = "w3", .expert_down = "w2"}},
    // Phi-3 (and Phi-4-mini, which shares its model_type): Llama's block with q/k/v and the MLP's
    // gate/up fused into one matrix each, a sliding window on every layer, partial rotary.
    {.arch = ModelArch::kPhi3,
     .block = BlockStyle::kLlama,
     .hf_model_type = "phi3",
     .hf_architecture = "Phi3ForCausalLM",
     .gguf_architecture = "phi3",
     .attention_bias = kNever,
     .qk_norm = false,
     .gguf_rope_pairing = kHalves,
     .sliding_window = kEveryLayer,
     .tie_word_embeddings_default = false,
     .hf_config_has_bias_keys = false,
     .partial_rotary = true,
     .tensors = {.fused_qkv = true, .fused_gate_up = true}},
});

// FamilyOf indexes the table by the enum value.
constexpr bool RowsFollowTheEnum() {
  for (size_t i = 0; i < kFamilies.size(); ++i) {
    if (static_cast<size_t>(kFamilies[i].arch) != i) return false;
  }
  return true;
}
static_assert(RowsFollowTheEnum(), "kFamilies rows must be in ModelArch order, one per value");

// The non-empty names `name_of` gives, joined for an error message.
template <typename NameOf>
std::string JoinNames(NameOf name_of) {
  std::string names;
  for (const FamilyTraits& family : kFamilies) {
    const std::string_view name = name_of(family);
    if (name.empty()) continue;
    names += fmt::format("{}{}", names.empty() ? "" : ", ", name);
  }
  return names;
}

}  // namespace

std::span<const FamilyTraits> Families() { return kFamilies; }

const FamilyTraits& FamilyOf(ModelArch arch) { return kFamilies.at(static_cast<size_t>(arch)); }

const FamilyTraits* FindFamilyByHfModelType(std::string_view model_type) {
  for (const FamilyTraits& family : kFamilies) {
    if (family.hf_model_type == model_type) return &family;
  }
  return nullptr;
}

const FamilyTraits* FindFamilyByGgufArchitecture(std::string_view architecture) {
  if (architecture.empty()) return nullptr;
  for (const FamilyTraits& family : kFamilies) {
    if (family.gguf_architecture == architecture) return &family;
  }
  return nullptr;
}

std::string SupportedHfModelTypes() {
  return JoinNames([](const FamilyTraits& f) { return f.hf_model_type; });
}

std::string SupportedGgufArchitectures() {
  return JoinNames([](const FamilyTraits& f) { return f.gguf_architecture; });
}

}  // namespace proctor
