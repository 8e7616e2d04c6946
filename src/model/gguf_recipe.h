// Which type each tensor of a GGUF gets when `proctor quantize --type T` writes one: llama.cpp's
// file types ("ftype", general.file_type) and llama-quantize's per-tensor rules for them
// (src/llama-quant.cpp of the llama.cpp proctor's oracles are built from), so that proctor's
// file has the types, and the blocks, llama-quantize writes from the same source.
//
// Tensors llama.cpp never quantizes keep their stored type: anything with fewer than 2
// dimensions, names not ending in "weight", "*_norm.weight", MoE routers (ffn_gate_inp),
// position / token-type embeddings, small convolution and RWKV mixing weights.
// For a quantized file type with base type B, before the shape fallback (and not with --pure):
//   output.weight (and token_embd.weight when the head is tied, i.e. no output.weight): Q8_0
//     for falcon or when its rows are not whole B blocks, else Q6_K unless B is Q8_0;
//   attn_v / attn_qkv / attn_kv_b, counted in llama.cpp's order (layer, then name) as i of n:
//     q2_k Q4_K with 4 or more query heads per KV head, else Q3_K; q3_k_m Q5_K for i < 2, else
//     Q4_K; q3_k_l Q5_K; q4_k_m and q5_k_m Q6_K where use_more_bits(i, n); q4_k_s Q5_K for
//     i < 4; then a 70B llama (80 layers, grouped KV) lifts Q3_K / Q4_K to Q5_K, and 8 experts
//     make it Q8_0;
//   attn_k with 8 experts: Q8_0;
//   ffn_down of layer i of L: q2_k Q3_K; q3_k_m Q5_K for i < L/16, else Q4_K (falcon: Q3_K
//     unless use_more_bits); q3_k_l Q5_K (falcon Q4_K); q4_k_m Q6_K where use_more_bits(i, L)
//     (falcon: Q6_K for i < L/16, else Q5_K where use_more_bits, else Q4_K); q5_k_m Q6_K where
//     use_more_bits; q4_k_s Q5_K for i < L/8 (not falcon);
//   attn_output: with 8 experts Q5_K for q2_k, q3_k_s, q3_k_m, q4_k_s, q4_k_m; otherwise q2_k
//     Q3_K, q3_k_m Q4_K, q3_k_l Q5_K (falcon: q3_k_l Q4_K only);
// with use_more_bits(i, n) = i < n/8 or i >= 7n/8 or (i - n/8) % 3 == 2 (integer division).
// Shape fallback: rows (dims[0]) that are not whole blocks of the chosen type demote Q2_K and
// Q3_K to Q4_0, Q4_K to Q5_0, Q5_K to Q5_1, Q6_K to Q8_0, and a type whose blocks still do not
// fit to F16.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/dtype.h"

namespace proctor {

struct GgufFileType {
  std::string_view name;  // "q4_k_m"
  uint32_t llama_ftype;   // llama.cpp's llama_ftype, stored as general.file_type
  DType base;             // the type of most weights
};

// The file types proctor writes: f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k_s,
// q3_k_m, q3_k_l, q4_k_s, q4_k_m, q5_k_s, q5_k_m, q6_k (all of llama-quantize's that need no
// importance matrix and no IQ / TQ / MXFP4 block type). Names match case-insensitively.
const std::vector<GgufFileType>& GgufFileTypes();
std::optional<GgufFileType> FindGgufFileType(std::string_view name);
std::string GgufFileTypeNames();  // "f32, f16, ..., q6_k"

// What the rules read from the model's metadata.
struct GgufModelFacts {
  std::string architecture;  // general.architecture
  int n_layer = 0;           // <arch>.block_count
  int n_expert = 0;          // <arch>.expert_count (0 when absent)
  int n_head = 0;            // <arch>.attention.head_count (0 when absent)
  int n_head_kv = 0;         // <arch>.attention.head_count_kv (n_head when absent)
};

struct GgufTensorPlan {
  std::string name;
  std::vector<uint64_t> dims;  // contiguous first
  DType stored = DType::kF32;  // the source's type
  DType type = DType::kF32;    // what proctor writes (filled by PlanGgufTensorTypes)
  std::string why{};           // "" or how the rules changed the base type ("output", ...)
};

// Sorts tensors the way llama.cpp visits them: those outside "blk.N." first, then by layer
// number, each group by name. The per-layer counters above follow this order.
void SortLikeLlamaCpp(std::vector<GgufTensorPlan>& tensors);

// Fills `type` and `why` of every tensor (already in SortLikeLlamaCpp order). `pure`: every
// quantizable tensor takes the base type (llama-quantize --pure), shape fallback still applies.
void PlanGgufTensorTypes(const GgufFileType& file_type, const GgufModelFacts& facts, bool pure,
                         std::vector<GgufTensorPlan>& tensors);

// The number of the layer in "blk.N.<...>", or -1.
int GgufLayerOf(std::string_view tensor_name);

}  // namespace proctor
