// RMS normalisation of activation rows.
#pragma once

#include "tensor/tensor.h"

namespace proctor::ops {

// How RmsNorm sums the squares. kF32Lanes: 16 f32 partial sums in a fixed order (vectorised).
// kGgml: ggml's order (ggml_compute_forward_rms_norm_f32, what llama.cpp computes): each square
// rounded to f32, summed in double one after another, the mean rounded to f32. Both then take
// 1 / sqrt(mean + eps) in f32 and (x * that) * weight. In f32 mode the two agree to a few ulps;
// quantized paths (q8 activations, quantized KV caches) see a last-bit difference where a value
// sits on a rounding tie, so each format follows its reference engine (ModelConfig).
enum class RmsNormSum { kF32Lanes, kGgml };

// out[t] = x[t] * rsqrt(mean(x[t]^2) + eps) * (weight + (add_one ? 1 : 0)). x: [T, K] f32;
// weight: 1 row of K, any float type (f32, f16, bf16); out: [T, K] (may alias x). The squares
// summed as `sum` says (above), the rest in f32 like Hugging Face's f32 path.
void RmsNorm(const MatView& x, const MatView& weight, float eps, bool add_one, MutMatF32 out,
             RmsNormSum sum = RmsNormSum::kF32Lanes);
// Scalar reference (double sum of squares).
void RmsNormRef(const MatView& x, const MatView& weight, float eps, bool add_one, MutMatF32 out);

}  // namespace proctor::ops
