// Rotary position embeddings (see rope.h for the arithmetic matched).
#include "ops/rope.h"

#include <cmath>
#include <vector>

#include "util/error.h"

namespace proctor::ops {

void ApplyRope(MutMatF32 x, int n_heads, int head_dim, std::span<const int32_t> positions,
               std::span<const float> inv_freq, float attention_scale, RopeStyle style) {
  CHECK_MSG(head_dim % 2 == 0 && !inv_freq.empty() &&
                static_cast<int64_t>(inv_freq.size()) <= head_dim / 2,
            "head_dim {} with {} inverse frequencies", head_dim, inv_freq.size());
  CHECK_MSG(x.cols >= static_cast<int64_t>(n_heads) * head_dim &&
                static_cast<int64_t>(positions.size()) == x.rows,
            "x [{}, {}] for {} heads of {}, {} positions", x.rows, x.cols, n_heads, head_dim,
            positions.size());
  const int half = static_cast<int>(inv_freq.size());       // rotary dims / 2
  std::vector<float> cos_table(static_cast<size_t>(half));  // [R/2]
  std::vector<float> sin_table(static_cast<size_t>(half));  // [R/2]
  for (int64_t t = 0; t < x.rows; ++t) {
    const float pos = static_cast<float>(positions[static_cast<size_t>(t)]);
    for (int i = 0; i < half; ++i) {
      const float angle = pos * inv_freq[static_cast<size_t>(i)];  // f32 product, as HF
      cos_table[i] = static_cast<float>(std::cos(static_cast<double>(angle))) * attention_scale;
      sin_table[i] = static_cast<float>(std::sin(static_cast<double>(angle))) * attention_scale;
    }
    float* row = x.Row(t);
    for (int h = 0; h < n_heads; ++h) {
      float* head = row + static_cast<int64_t>(h) * head_dim;
      for (int i = 0; i < half; ++i) {
        const int ia = style == RopeStyle::kHalfRotation ? i : 2 * i;
        const int ib = style == RopeStyle::kHalfRotation ? i + half : 2 * i + 1;
        const float a = head[ia];
        const float b = head[ib];
        const float c = cos_table[i];
        const float s = sin_table[i];
        const float a_cos = a * c, b_sin = b * s, b_cos = b * c, a_sin = a * s;
        head[ia] = a_cos - b_sin;
        head[ib] = b_cos + a_sin;
      }
    }
  }
}

}  // namespace proctor::ops
