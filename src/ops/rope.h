// Rotary position embeddings, in both layouts real checkpoints use.
#pragma once

#include <cstdint>
#include <span>

#include "tensor/tensor.h"

namespace proctor::ops {

enum class RopeStyle {
  kHalfRotation,   // Hugging Face: pairs (i, i + D/2)
  kAdjacentPairs,  // GGUF llama: pairs (2i, 2i + 1)
};

// Rotates each head (head_dim D) of x[T, n_heads*D] in place; row t is at position positions[t];
// inv_freq has R/2 entries (already including any rope scaling) for the first R <= D dimensions
// of each head (partial rotary: the other D - R pass through; halves pair i with i + R/2);
// attention_scale multiplies cos
// and sin (yarn's mscale; 1 otherwise). Matches Hugging Face's f32 arithmetic: angle =
// f32(pos) * inv_freq in f32, cos/sin of that f32 angle rounded to f32, then
// out_a = a*cos - b*sin, out_b = b*cos + a*sin with each product rounded to f32.
void ApplyRope(MutMatF32 x, int n_heads, int head_dim, std::span<const int32_t> positions,
               std::span<const float> inv_freq, float attention_scale, RopeStyle style);

}  // namespace proctor::ops
