// GGUF block-quantized weight formats (ggml's Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K,
// Q5_K, Q6_K, IQ4_NL): block structs with size checks, a traits table, scalar reference
// dequantizers and dot products, and their Highway versions.
//
// A quantized row of K values is K/block_elems consecutive blocks. Q8_0: value = d * q (q int8).
// Q4_0: value = (q - 8) * d with q a 4-bit code; byte j holds value j in its low nibble and
// value j+16 in its high nibble. d is IEEE fp16. The other formats are spelled out beside their
// structs below and in docs/quantization.md; every formula is evaluated in f32 in the order
// ggml's own dequantize_row_* uses (no fused multiply-add), so results are bit-identical to ggml.
// Kernels dispatch on the traits (ggml_block_traits.cc). The legacy blocks' kernels are in
// ggml_legacy_blocks.cc (scalar) and ggml_legacy_blocks_simd.cc (Highway), the K-quants' in
// ggml_k_quants.cc and ggml_k_quants_simd.cc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "tensor/dtype.h"

namespace proctor::quant {

// Legacy blocks: 32 values with one fp16 scale (and a minimum for Q4_1 / Q5_1).

inline constexpr int kQ8_0BlockElems = 32;
inline constexpr int kQ4_0BlockElems = 32;

struct BlockQ8_0 {
  uint16_t d;  // fp16 scale
  int8_t q[kQ8_0BlockElems];
};
static_assert(sizeof(BlockQ8_0) == 34, "GGUF Q8_0 blocks are 34 bytes");

struct BlockQ4_0 {
  uint16_t d;                       // fp16 scale
  uint8_t qs[kQ4_0BlockElems / 2];  // low nibbles: values 0..15, high nibbles: values 16..31
};
static_assert(sizeof(BlockQ4_0) == 18, "GGUF Q4_0 blocks are 18 bytes");

inline constexpr int kQK = 32;     // elements per block of the 32-wide formats
inline constexpr int kQK_K = 256;  // elements per K-quant super-block

// Q4_1: value = q * d + m, q a 4-bit code laid out as in Q4_0.
struct BlockQ4_1 {
  uint16_t d;  // fp16 scale
  uint16_t m;  // fp16 minimum
  uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockQ4_1) == 20, "GGUF Q4_1 blocks are 20 bytes");

// Q5_0: value = (q - 16) * d, q = nibble | (bit j of qh) << 4 for value j (nibbles as in Q4_0).
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];  // little-endian u32: bit j is the fifth bit of value j
  uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockQ5_0) == 22, "GGUF Q5_0 blocks are 22 bytes");

// Q5_1: value = q * d + m, q as in Q5_0.
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockQ5_1) == 24, "GGUF Q5_1 blocks are 24 bytes");

// IQ4_NL: value = d * kIQ4_NLValues[q], q a 4-bit index laid out as in Q4_0 (byte j: value j
// in its low nibble, value j + 16 in its high one); the 16 levels are ggml's kvalues_iq4nl, a
// non-uniform grid denser near zero.
struct BlockIQ4_NL {
  uint16_t d;  // fp16 scale
  uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockIQ4_NL) == 18, "GGUF IQ4_NL blocks are 18 bytes");
inline constexpr int8_t kIQ4_NLValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                             1,    13,   25,  38,  53,  69,  89,  113};

// K-quants: 256-value super-blocks of 16- or 32-value sub-blocks whose scales (and mins) are
// themselves quantized and packed.

// Q2_K: 16 sub-blocks of 16. scales[s] low nibble = scale, high nibble = min of sub-block s.
// In each 128-value half h, value 32*j' + 16*p + l (j' = 0..3 shift index, p = 0..1, l = 0..15)
// has code (qs[32h + 16p + l] >> 2j') & 3 and sub-block s = 8h + 2j' + p.
// value = (d * (scales[s] & 15)) * q - (dmin * (scales[s] >> 4)).
struct BlockQ2_K {
  uint8_t scales[kQK_K / 16];
  uint8_t qs[kQK_K / 4];
  uint16_t d;
  uint16_t dmin;
};
static_assert(sizeof(BlockQ2_K) == 84, "GGUF Q2_K blocks are 84 bytes");

// Q3_K: like Q2_K's 2-bit layout plus a high bit: q = low2 - (hmask[16p + l] bit (4h + j') ? 0 : 4)
// (l, p, j', h as in Q2_K); 16 signed 6-bit scales packed in 12 bytes (minus 32);
// value = (d * (scale[s] - 32)) * q.
struct BlockQ3_K {
  uint8_t hmask[kQK_K / 8];
  uint8_t qs[kQK_K / 4];
  uint8_t scales[12];
  uint16_t d;
};
static_assert(sizeof(BlockQ3_K) == 110, "GGUF Q3_K blocks are 110 bytes");

// Q4_K: 8 sub-blocks of 32 with 6-bit scales and mins packed in 12 bytes. In each 64-value chunk
// c, values 64c + l have code qs[32c + l] & 15 (sub-block 2c), values 64c + 32 + l have
// qs[32c + l] >> 4 (sub-block 2c + 1). value = (d * sc) * q - (dmin * m).
struct BlockQ4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockQ4_K) == 144, "GGUF Q4_K blocks are 144 bytes");

// Q5_K: Q4_K plus a fifth bit: value 64c + l adds 16 when qh[l] bit 2c is set, value 64c + 32 + l
// when qh[l] bit 2c + 1 is set.
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockQ5_K) == 176, "GGUF Q5_K blocks are 176 bytes");

// Q6_K: 16 sub-blocks of 16 with int8 scales. In each 128-value half h (ql += 64h, qh += 32h,
// scales += 8h), for l = 0..31: value 128h + l + 32i (i = 0..3) has code
// (ql[l + 32 (i & 1)] >> 4 (i >> 1)) & 15 | ((qh[l] >> 2i) & 3) << 4, minus 32, and
// value = (d * scales[l / 16 + 2i]) * q.
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  uint16_t d;
};
static_assert(sizeof(BlockQ6_K) == 210, "GGUF Q6_K blocks are 210 bytes");

// Dequantizes `n_blocks` consecutive blocks starting at `blocks` into
// out[n_blocks * block_elems].
using DequantizeBlocksFn = void (*)(const uint8_t* blocks, int64_t n_blocks, float* out);
// Dot product of n_blocks blocks with x[n_blocks * block_elems].
using DotBlocksFn = float (*)(const uint8_t* blocks, int64_t n_blocks, const float* x);
// Quantizes x[n_blocks * block_elems] into n_blocks blocks.
using QuantizeBlocksFn = void (*)(const float* x, int64_t n_blocks, uint8_t* blocks);

struct BlockTraits {
  DType type;
  int block_elems;
  int block_bytes;
  DequantizeBlocksFn dequantize_ref;   // scalar reference
  DequantizeBlocksFn dequantize_fast;  // SIMD (runtime-dispatched) version, bit-identical
  DotBlocksFn dot_ref;                 // scalar reference: f32 sum in element order
  DotBlocksFn dot_fast;                // SIMD: lane-order sums (agrees to f32 rounding)
  QuantizeBlocksFn quantize_ref;       // ggml's reference quantizer
};

// Traits of a block-quantized type, or nullptr when `type` is not one this build supports.
const BlockTraits* FindBlockTraits(DType type);

// The kernels of each type. Ref = scalar reference, bit-identical to ggml's dequantize_row_*;
// the SIMD versions (Highway, dispatched at run time) dequantize bit-identically to the
// references. Dot products with x[n_blocks * block_elems] (f32), for matrix-vector products:
// Q8_0 and Q4_0 sum d * sum(q_i * x_i) over blocks, the other types sum_i value_i * x_i; the
// references accumulate in f32 in block / element order, the SIMD versions in lane order
// (results agree to f32 rounding).
#define PROCTOR_DECLARE_BLOCK_KERNELS(T)                                        \
  void Dequantize##T##Ref(const uint8_t* blocks, int64_t n_blocks, float* out); \
  void Dequantize##T(const uint8_t* blocks, int64_t n_blocks, float* out);      \
  float Dot##T##Ref(const uint8_t* blocks, int64_t n_blocks, const float* x);   \
  float Dot##T(const uint8_t* blocks, int64_t n_blocks, const float* x);
// The legacy 32-value blocks (ggml_legacy_blocks.cc, ggml_legacy_blocks_simd.cc).
PROCTOR_DECLARE_BLOCK_KERNELS(Q8_0)
PROCTOR_DECLARE_BLOCK_KERNELS(Q4_0)
PROCTOR_DECLARE_BLOCK_KERNELS(Q4_1)
PROCTOR_DECLARE_BLOCK_KERNELS(Q5_0)
PROCTOR_DECLARE_BLOCK_KERNELS(Q5_1)
// IQ4_NL (ggml_iq4_nl.cc; its SIMD dequantizer beside the legacy blocks').
PROCTOR_DECLARE_BLOCK_KERNELS(IQ4_NL)
// The K-quants (ggml_k_quants.cc, ggml_k_quants_simd.cc).
PROCTOR_DECLARE_BLOCK_KERNELS(Q2_K)
PROCTOR_DECLARE_BLOCK_KERNELS(Q3_K)
PROCTOR_DECLARE_BLOCK_KERNELS(Q4_K)
PROCTOR_DECLARE_BLOCK_KERNELS(Q5_K)
PROCTOR_DECLARE_BLOCK_KERNELS(Q6_K)
#undef PROCTOR_DECLARE_BLOCK_KERNELS

// Reference quantizers with ggml's rules, byte-identical to ggml's quantize_row_*_ref (what
// llama-quantize runs without an importance matrix; tested against libggml): the GGUF writer's
// (model/gguf_quantize.h) and the tests' matrices.
// Q8_0 / Q4_0: d = absmax / 127 or max-magnitude / -8, codes rounded to nearest.
void QuantizeQ8_0Ref(const float* x, int64_t n_blocks, uint8_t* blocks);
// Q8_0 as ggml's CPU backend quantizes activations on x86 (its AVX/AVX2 quantize_row_q8_0, also
// in AVX-512 builds): d = absmax / 127 as f16, but codes x * (127 / absmax) rounded ties to even,
// where the reference multiplies by 1 / d and rounds half away from zero (a code can differ by
// one at such boundaries); a block too small for a finite 127 / absmax has d 0 and codes -128.
void QuantizeQ8_0X86(const float* x, int64_t n_blocks, uint8_t* blocks);
void QuantizeQ4_0Ref(const float* x, int64_t n_blocks, uint8_t* blocks);
// Q4_1 / Q5_1: d = (max - min) / (2^bits - 1), m = min, q = min(2^bits - 1, trunc((x - m) / d +
// 0.5)); Q5_0: d = (signed value of largest magnitude) / -16, q = min(31, trunc(x / d + 16.5)).
void QuantizeQ4_1Ref(const float* x, int64_t n_blocks, uint8_t* blocks);
void QuantizeQ5_0Ref(const float* x, int64_t n_blocks, uint8_t* blocks);
void QuantizeQ5_1Ref(const float* x, int64_t n_blocks, uint8_t* blocks);
// Q2_K / Q3_K / Q4_K / Q5_K / Q6_K (ggml_k_quantize.cc): per sub-block scales (and minimums)
// found by ggml's small error-minimizing searches, then quantized against the super-block's
// largest.
void QuantizeQ2_KRef(const float* x, int64_t n_blocks, uint8_t* blocks);
void QuantizeQ3_KRef(const float* x, int64_t n_blocks, uint8_t* blocks);
void QuantizeQ4_KRef(const float* x, int64_t n_blocks, uint8_t* blocks);
void QuantizeQ5_KRef(const float* x, int64_t n_blocks, uint8_t* blocks);
void QuantizeQ6_KRef(const float* x, int64_t n_blocks, uint8_t* blocks);
// IQ4_NL has two quantizers in ggml, both fitting d by weighted least squares (weights x^2) to
// the indices nearest to x / d0, d0 = (signed value of largest magnitude) / -127:
//  - QuantizeIQ4_NLRef, what ggml_quantize_chunk (llama-quantize without an importance matrix)
//    runs (quantize_iq4_nl): it also tries d0 = value / (l - 127) for l in -7..7, keeps the d of
//    the best weighted fit, and codes every value again with that d;
//  - QuantizeIQ4_NLRowRef, what ggml's CPU backend quantizes rows with (its from_float,
//    quantize_row_iq4_nl_ref: llama.cpp's `--cache-type-k iq4_nl` cache): the first fit only,
//    the codes those nearest to x / d0, the stored d the fitted one.
// A block whose largest magnitude is below 1e-15 gets d = 0. Its codes are 8 (the level
// nearest 0) from QuantizeIQ4_NLRef; the row quantizer leaves them as ggml leaves them, the
// previous block's codes of the same call (0 for a first block: ggml's there are
// uninitialised), values 0 either way.
void QuantizeIQ4_NLRef(const float* x, int64_t n_blocks, uint8_t* blocks);
void QuantizeIQ4_NLRowRef(const float* x, int64_t n_blocks, uint8_t* blocks);

// Q8_K: the 8-bit activation blocks ggml's CPU backend multiplies the K-quants with (their
// vec_dot_type; never a weight type): 256 values, value = d * q with d an f32, and the sum of
// each 16 codes. Byte-identical to ggml's quantize_row_q8_K_ref (its x86 quantize_row_q8_K):
// d = -(signed value of largest magnitude) / 127 (so that value gets code -127), codes
// round(x * -127 / that value) ties to even, capped at 127; an all-zero block is all zeros.
struct BlockQ8_K {
  float d;
  int8_t q[kQK_K];
  int16_t bsums[kQK_K / 16];
};
static_assert(sizeof(BlockQ8_K) == 292, "ggml's Q8_K blocks are 292 bytes");
void QuantizeQ8_KRef(const float* x, int64_t n_blocks, uint8_t* blocks);

// K-quant scale unpacking, shared by the scalar and SIMD dequantizers.
// The 6-bit scale and min of sub-block j (0..7) of a Q4_K / Q5_K block's 12 packed bytes.
void UnpackScaleMinK4(const uint8_t* packed, int j, uint8_t* scale, uint8_t* min);
// The 16 scales of a Q3_K block (6-bit codes minus 32).
void UnpackQ3_KScales(const uint8_t* packed, int8_t* scales);

}  // namespace proctor::quant
