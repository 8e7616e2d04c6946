// 8-bit activations (ComputeMode::kQ8, the engine's `--compute q8`): before a product with
// integer-coded weights (the GGUF block types), x is quantized per 32 values into GGUF Q8_0
// blocks exactly as ggml's quantize_row_q8_0_ref does (d = absmax / 127 stored as f16, codes
// round(x / d) half away from zero; quant::QuantizeQ8_0Ref, byte-identical to libggml). The
// product then sees x^ = d * code, the values llama.cpp's CPU backend multiplies with these
// weight types. Products with float or MLX weights keep f32 activations.
#pragma once

#include <cstdint>
#include <vector>

#include "ops/linear_weight.h"

namespace proctor::ops {

// Whether a product with `w` quantizes its activations in ComputeMode::kQ8.
bool TakesQ8Activations(const LinearWeight& w);

// One row of x quantized to Q8_0, unpacked for the integer dot-product kernels.
struct ActivationsQ8 {
  std::vector<int8_t> codes;  // [K]
  std::vector<float> scale;   // [K / 32]: each block's d (the f16 value, as f32)
  std::vector<float> sum16;   // [K / 16]: sum of x^ over each 16 values (exact in f32)
  std::vector<float> sum32;   // [K / 32]: sum of x^ over each block (exact in f32)

  // K must be a multiple of 32 (CHECKed). Reuses the vectors' storage.
  void Quantize(const float* x, int64_t K);
};

// out[K] = x^: x quantized to Q8_0 and decoded (the values the q8 products see); out may be x.
void RoundTripQ8Activations(const float* x, int64_t K, float* out);

}  // namespace proctor::ops
