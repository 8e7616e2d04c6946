// RMS normalisation of activation rows.
#pragma once

#include "tensor/tensor.h"

namespace proctor::ops {

// out[t] = x[t] * rsqrt(mean(x[t]^2) + eps) * (weight + (add_one ? 1 : 0)). x: [T, K] f32;
// weight: 1 row of K, any float type (f32, f16, bf16); out: [T, K] (may alias x). Sum of squares
// in f32 (SIMD lanes, fixed order), the rest in f32 like Hugging Face's f32 path.
void RmsNorm(const MatView& x, const MatView& weight, float eps, bool add_one, MutMatF32 out);
// Scalar reference (double sum of squares).
void RmsNormRef(const MatView& x, const MatView& weight, float eps, bool add_one, MutMatF32 out);

}  // namespace proctor::ops
