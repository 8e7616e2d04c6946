// A GGUF file as a model: its metadata as a ModelConfig and its tensors under Hugging Face names.
//
// Names: token_embd -> model.embed_tokens, blk.N.attn_q/attn_k/attn_v/attn_output ->
// model.layers.N.self_attn.{q,k,v,o}_proj, ffn_gate/ffn_up/ffn_down -> mlp.*_proj, attn_norm ->
// input_layernorm, ffn_norm -> post_attention_layernorm (Gemma: pre_feedforward_layernorm, with
// post_attention_norm -> post_attention_layernorm, post_ffw_norm -> post_feedforward_layernorm),
// attn_q_norm/attn_k_norm -> self_attn.q_norm/k_norm, output_norm -> model.norm, output ->
// lm_head (".weight"/".bias" kept). A family's own module names (family_traits.h) take the rest:
// ffn_gate_inp -> the experts' router (mlp.gate, Mixtral's block_sparse_moe.gate), Phi-3's fused
// attn_qkv -> self_attn.qkv_proj and ffn_up -> mlp.gate_up_proj; each stacked-experts tensor
// blk.N.ffn_{gate,up,down}_exps ([experts, out, in]) becomes one matrix per expert,
// model.layers.N.<moe>.experts.E.<gate|up|down name> (a view of the expert's bytes). Other
// tensors (rope_freqs.weight, ...) keep their GGUF name. Shapes are reversed to HF order
// ([out, in]); the bytes are the file's (Q/K rows of GGUF llama stay permuted for adjacent-pair
// RoPE: ModelConfig::rope_adjacent_pairs says so).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "formats/gguf.h"
#include "formats/model_config.h"
#include "formats/weights.h"

namespace proctor {

// The HF name of a GGUF tensor name in `family` (the norms and the fused and expert names
// differ), or the name unchanged when it has no HF equivalent. Stacked experts are split by
// AddGgufTensors, not here.
std::string GgufToHfTensorName(std::string_view gguf_name,
                               const FamilyTraits& family = FamilyOf(ModelArch::kLlama));

// The inverse: the GGUF name of an HF tensor name, nullopt when it has none.
std::optional<std::string> HfToGgufTensorName(
    std::string_view hf_name, const FamilyTraits& family = FamilyOf(ModelArch::kLlama));

// The family of a GGUF file: its general.architecture's row, except that a "llama" file with
// experts is Mixtral (llama.cpp's converter writes Mixtral so); nullptr when none.
const FamilyTraits* GgufFamily(const GgufFile& gguf);

// llama.cpp's row order of a Llama Q/K projection (convert_hf_to_gguf.py reshapes each head's
// rows [2, head_dim/2] and swaps the axes, so RoPE rotates adjacent pairs): within each head,
// HF row j < head_dim/2 becomes GGUF row 2j, and HF row head_dim/2 + j becomes row 2j + 1.
// GgufRowOfHfRow and HfRowOfGgufRow are that permutation and its inverse.
int64_t GgufRowOfHfRow(int64_t hf_row, int64_t head_dim);
int64_t HfRowOfGgufRow(int64_t gguf_row, int64_t head_dim);

// Adds every tensor of `gguf` to `store` under its HF name; the store keeps `gguf` alive.
void AddGgufTensors(const std::shared_ptr<const GgufFile>& gguf, WeightStore& store);

// The model config from `general.architecture` (GgufFamily) and its `<arch>.*` keys;
// `weights` (already holding the file's tensors under HF names) supplies what the metadata does
// not say: biases, q/k norms, tied output (no output.weight, or one whose bytes equal
// token_embd's, as llama2.c-converted files store), the vocabulary size when there is no token
// list. GGUF llama rotates adjacent pairs; qwen2/qwen3 rotate halves. A rope_freqs.weight tensor
// (llama.cpp's form of Llama-3 RoPE scaling) becomes rope type llama3 when its divisors match the
// Llama 3.x parameters (low 1, high 4, original 8192, factor = largest divisor); else an Error.
// Mixtral and qwen3moe: every layer a mixture of <arch>.expert_count experts, expert_used_count
// per token, renormalised (llama.cpp's graphs). Phi-3: partial rotary from rope.dimension_count,
// the sliding window on every layer (as transformers; llama.cpp disables it), LongRoPE refused.
ModelConfig ConfigFromGguf(const GgufFile& gguf, const WeightStore& weights);

}  // namespace proctor
