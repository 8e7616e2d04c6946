// 8-bit activations (ComputeMode::kQ8, the engine's `--compute q8`): before a product with
// integer-coded weights (the GGUF block types), x is quantized into the blocks ggml's CPU backend
// pairs with that weight type (its vec_dot_type), exactly as ggml does:
//  - Q8_0 for the 32-value types (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1): per 32 values d = absmax / 127
//    stored as f16, codes x * (127 / absmax) rounded ties to even (quant::QuantizeQ8_0X86, the
//    quantize_row_q8_0 of ggml's x86 CPU backend; for Q4_1 / Q5_1 ggml's Q8_1 blocks, which have
//    the same d and codes);
//  - Q8_K for the K-quants (Q2_K .. Q6_K): per 256 values one f32 d through the value of largest
//    magnitude, codes rounded ties to even (quant::QuantizeQ8_KRef, ggml's quantize_row_q8_K_ref).
// The product then sees x^ = d * code, the values llama.cpp's CPU backend multiplies with these
// weight types. Products with float or MLX weights keep f32 activations.
#pragma once

#include <cstdint>
#include <vector>

#include "ops/linear_weight.h"

namespace proctor::ops {

// Whether a product with `w` quantizes its activations in ComputeMode::kQ8.
bool TakesQ8Activations(const LinearWeight& w);

// The activation blocks of a product with GGUF block weights of `weight_type`.
enum class Q8Blocks { kQ8_0, kQ8_K };
Q8Blocks Q8BlocksFor(DType weight_type);

// One row of x quantized to `blocks`, unpacked for the integer dot-product kernels: one scale per
// 32 values either way (Q8_K's d repeated over its 8 slices of 32).
struct ActivationsQ8 {
  std::vector<int8_t> codes;          // [K]
  std::vector<float> scale;           // [K / 32]: the d of the block holding each 32 values, as f32
  std::vector<float> sum16;           // [K / 16]: sum of x^ over each 16 values
  std::vector<float> sum32;           // [K / 32]: sum of x^ over each 32 values
  std::vector<int16_t> code_sum16;    // [K / 16]: sum of the codes over each 16 values
  std::vector<int16_t> code_sum32;    // [K / 32]: sum of the codes over each 32 values
  Q8Blocks blocks = Q8Blocks::kQ8_0;  // what Quantize made
  // (Q8_0: the sums are exact in f32; Q8_K: d times the exact code sum, rounded once.)

  // K must be a multiple of the block (32 or 256; CHECKed). Reuses the vectors' storage. On a CPU
  // with AVX2 the codes are made 32 at a time (activations_q8_avx2.cc), else by QuantizeRef; both
  // give the same bytes and sums.
  void Quantize(const float* x, int64_t K, Q8Blocks blocks);
  // The scalar reference: ggml's quantizers (QuantizeQ8_0X86, QuantizeQ8_KRef), unpacked.
  void QuantizeRef(const float* x, int64_t K, Q8Blocks blocks);

  // Sizes the vectors for K values (K a multiple of the block, CHECKed).
  void Resize(int64_t K, Q8Blocks blocks);
  // Slice s's (values [32 s, 32 s + 32)) scale d and sums, from the sums of its codes' halves.
  void SetSlice(int64_t s, float d, int half0, int half1);
};

namespace internal {
// ActivationsQ8::Quantize's AVX2 path (the CPU must have AVX2, FMA and F16C).
void QuantizeActivationsQ8Avx2(const float* x, int64_t K, Q8Blocks blocks, ActivationsQ8& out);
}  // namespace internal

// out[K] = x^: x quantized to `blocks` and decoded (the values the q8 products see); out may be x.
void RoundTripQ8Activations(const float* x, int64_t K, Q8Blocks blocks, float* out);

}  // namespace proctor::ops
