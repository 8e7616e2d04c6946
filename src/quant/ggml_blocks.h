// GGUF block-quantized weight formats (ggml's Q8_0 and Q4_0): block structs with size checks, a
// traits table, and scalar reference dequantization.
//
// A quantized row of K values is K/32 consecutive blocks. Q8_0: value = d * q (q int8).
// Q4_0: value = (q - 8) * d with q a 4-bit code; byte j holds value j in its low nibble and
// value j+16 in its high nibble. d is IEEE fp16. Later block types (Q4_1, Q5_x, K-quants) add a
// struct, a reference dequantizer and a traits entry; kernels dispatch on the traits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "tensor/dtype.h"

namespace proctor::quant {

inline constexpr int kQ8_0BlockElems = 32;
inline constexpr int kQ4_0BlockElems = 32;

struct BlockQ8_0 {
  uint16_t d;  // fp16 scale
  int8_t q[kQ8_0BlockElems];
};
static_assert(sizeof(BlockQ8_0) == 34, "GGUF Q8_0 blocks are 34 bytes");

struct BlockQ4_0 {
  uint16_t d;                      // fp16 scale
  uint8_t qs[kQ4_0BlockElems / 2];  // low nibbles: values 0..15, high nibbles: values 16..31
};
static_assert(sizeof(BlockQ4_0) == 18, "GGUF Q4_0 blocks are 18 bytes");

// Dequantizes `n_blocks` consecutive blocks starting at `blocks` into out[n_blocks * 32].
using DequantizeBlocksFn = void (*)(const uint8_t* blocks, int64_t n_blocks, float* out);

struct BlockTraits {
  DType type;
  int block_elems;
  int block_bytes;
  DequantizeBlocksFn dequantize_ref;   // scalar reference
  DequantizeBlocksFn dequantize_fast;  // SIMD (runtime-dispatched) version
};

// Traits of a block-quantized type, or nullptr when `type` is not one this build supports.
const BlockTraits* FindBlockTraits(DType type);

// Scalar references.
void DequantizeQ8_0Ref(const uint8_t* blocks, int64_t n_blocks, float* out);
void DequantizeQ4_0Ref(const uint8_t* blocks, int64_t n_blocks, float* out);

// SIMD versions (Highway, dispatched at run time); same results as the references, bit for bit
// (each value is one f32 product of exactly representable factors).
void DequantizeQ8_0(const uint8_t* blocks, int64_t n_blocks, float* out);
void DequantizeQ4_0(const uint8_t* blocks, int64_t n_blocks, float* out);

// Dot products of n_blocks blocks with x[n_blocks * 32] (f32), for matrix-vector products:
// sum over blocks of d * sum(q_i * x_i). The reference accumulates in block order; the SIMD
// version in lane order (results agree to f32 rounding).
float DotQ8_0Ref(const uint8_t* blocks, int64_t n_blocks, const float* x);
float DotQ4_0Ref(const uint8_t* blocks, int64_t n_blocks, const float* x);
float DotQ8_0(const uint8_t* blocks, int64_t n_blocks, const float* x);
float DotQ4_0(const uint8_t* blocks, int64_t n_blocks, const float* x);

// Quantizes x[n_blocks*32] the way ggml's reference quantizer does (d = absmax / 127 or
// max-magnitude / -8, rounded to nearest); used to build test matrices.
void QuantizeQ8_0Ref(const float* x, int64_t n_blocks, uint8_t* blocks);
void QuantizeQ4_0Ref(const float* x, int64_t n_blocks, uint8_t* blocks);

}  // namespace proctor::quant
