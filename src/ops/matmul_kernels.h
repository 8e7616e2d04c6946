// Internal: the MatMul kernel families behind ops/matmul.h, each working on output columns
// [n_begin, n_end) of one thread's static partition.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "ops/activations_q8.h"
#include "ops/matmul.h"
#include "quant/mlx_quant.h"
#include "tensor/tensor.h"
#include "util/thread_pool.h"

namespace proctor::ops::internal {

// Highway f32 kernels (any weight type; x already rounded for bf16 mode).
// Blocked matrix-matrix product: weights packed per panel, register-tiled FMA micro-kernel.
void MatMulBlockedF32(const MatView& x, const MatView& w, MutMatF32 out, int64_t n_begin,
                      int64_t n_end);
// Matrix-vector product for T == 1 (dot products along K, weights streamed once).
void MatVecF32(const float* x, const MatView& w, float* out, int64_t n_begin, int64_t n_end);
// The same blocked kernel over an MLX quantized matrix (panels decoded a group at a time).
void MatMulBlockedF32Mlx(const MatView& x, const quant::MlxQuantizedMatrix& w, MutMatF32 out,
                         int64_t n_begin, int64_t n_end);
// Column alignment of the blocked kernel's partitions (its panel width).
int64_t BlockedPanelWidth();
// c[M, N] = a[M, K] · b[K, N], all f32 row-major (strides in floats). b rows must be readable up
// to N rounded up to BlockedPanelWidth() (pad with anything finite); c is written only [M, N).
void GemmF32(const float* a, int64_t a_stride, int64_t M, int64_t K, const float* b,
             int64_t b_stride, int64_t N, float* c, int64_t c_stride);

// MatMul for an MLX quantized matrix (matmul_mlx.cc): activations prepared for the mode, then
// `kernel` (one of the kMlx* kernels ChooseMatMulKernel picked), N split statically across the
// pool.
void MatMulMlx(const MatView& x, const quant::MlxQuantizedMatrix& w, MutMatF32 out,
               ComputeMode mode, ThreadPool& pool, MatMulKernel kernel);
// Decodes columns [k0, k0 + kc) (whole groups) of row `row` for the blocked kernel, in the order
// MatMulMlx permutes x into (matmul_mlx.cc).
void DecodeMlxPanelRow(const quant::MlxQuantizedMatrix& w, int64_t row, int64_t k0, int64_t kc,
                       float* out);
// Matrix-vector product with an MLX matrix for output rows [n_begin, n_end) (matmul_mlx.cc).
void MatVecMlxF32(const float* x, const quant::MlxQuantizedMatrix& w, float* out, int64_t n_begin,
                  int64_t n_end);

// row[0, n): entries outside [begin, end) become 0; inside, softmax(row * scale) in f32 with max
// subtraction (Highway Exp, <= 1 ulp), normalised; probabilities below FLT_MIN become 0 (no
// subnormal operands for P · V).
void MaskedSoftmaxRow(float* row, int64_t n, int64_t begin, int64_t end, float scale);
// gate[i] = gate[i] / (1 + exp(-gate[i])) * up[i] (Highway Exp).
void SiluMulRow(float* gate, const float* up, int64_t n);
// x[i] = tanh(x[i] * scale / cap) * cap (Highway Tanh): soft-capped attention scores.
void SoftCapRow(float* x, int64_t n, float scale, float cap);
// gate[i] = GeluTanh(gate[i]) * up[i] (Highway Tanh).
void GeluTanhMulRow(float* gate, const float* up, int64_t n);

// torch's gelu(approximate="tanh") constants, as its float kernel rounds them.
inline constexpr float kGeluTanhBeta = static_cast<float>(M_SQRT2 * M_2_SQRTPI * 0.5);
inline constexpr float kGeluTanhKappa = 0.044715f;
// 0.5 g (1 + tanh(beta (g + kappa g^3))), in torch's order of operations (scalar).
inline float GeluTanh(float g) {
  const float inner = kGeluTanhBeta * (g + kGeluTanhKappa * (g * g * g));
  return 0.5f * g * (1.0f + std::tanh(inner));
}

// Fused matrix-vector kernels for the GGUF block types: rows [n_begin, n_end) of w times x[K]
// (f32). FusedGgufMatVecCovers(type) says whether they exist for `type` (the same types on both
// CPU kinds). MatVecGguf (matvec_gguf.cc) runs on CpuFeatures::avx512_gguf, MatVecGgufAvx2
// (matvec_gguf_avx2.cc) on CpuFeatures::avx2_fma; each CHECKs the type and the CPU.
bool FusedGgufMatVecCovers(DType type);
void MatVecGguf(const float* x, const MatView& w, float* out, int64_t n_begin, int64_t n_end);
void MatVecGgufAvx2(const float* x, const MatView& w, float* out, int64_t n_begin, int64_t n_end);
// The same rows times 8-bit activations (ComputeMode::kQ8, activations_q8.h) with AVX2 integer
// dot products (matvec_gguf_q8_avx2.cc); runs on CpuFeatures::avx2_fma for the types
// FusedGgufMatVecCovers names.
void MatVecGgufQ8Avx2(const ActivationsQ8& x, const MatView& w, float* out, int64_t n_begin,
                      int64_t n_end);
// The matrix-matrix product of T tokens' 8-bit activations with rows [n_begin, n_end) of w, for
// the types Q8GemmAvx2Covers names (matmul_gguf_q8_avx2.cc; runs on
// CpuFeatures::avx2_fma): each output the same bits MatVecGgufQ8Avx2 gives its token alone.
// The kernel reads each tile of kQ8GemmTokenTile tokens' codes interleaved in one stream,
// [tile][K / 4 steps][token of the tile][4 codes] (InterleaveQ8Tiles with tile_tokens
// kQ8GemmTokenTile writes tiles [tile_begin, tile_end) from those tiles' tokens, already
// quantized; tokens past T: zeros).
inline constexpr int64_t kQ8GemmTokenTile = 4;
inline constexpr int64_t kQ8GemmPanelRows = 16;  // partitions of N are best its multiples
struct Q8TokenTiles {
  const ActivationsQ8* tokens;  // [T], the blocks Q8BlocksFor(w.type) names
  int64_t T;
  const int8_t* tile_codes;  // [ceil(T / kQ8GemmTokenTile) * kQ8GemmTokenTile * K]
};
bool Q8GemmAvx2Covers(DType type);
void InterleaveQ8Tiles(const ActivationsQ8* x, int64_t T, int64_t K, int64_t tile_tokens,
                       int64_t tile_begin, int64_t tile_end, int8_t* tile_codes);
void MatMulGgufQ8Avx2(const Q8TokenTiles& x, const MatView& w, MutMatF32 out, int64_t n_begin,
                      int64_t n_end);

// AMX-INT8 for the same products (matmul_amx_q8.cc; q8 mode, prefill): x [T, K] quantized per
// token as Q8BlocksFor(w.type) names, each output the same bits MatVecGgufQ8Avx2 gives its token
// alone. AmxQ8Covers names the types (those of Q8GemmAvx2Covers); runs on
// CpuFeatures::amx_int8.
bool AmxQ8Covers(DType type);
void MatMulAmxQ8(const MatView& x, const MatView& w, MutMatF32 out, ThreadPool& pool);

// AMX on exact integer codes for GGUF block-quantized weights (matmul_amx_quant.cc; prefill):
// Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q3_K, Q4_K, Q5_K, Q6_K, both compute modes.
// HasAmxQuantLayout: `type` is one of those; the kernel runs on CpuFeatures::amx_bf16 and
// avx512_bf16.
bool HasAmxQuantLayout(DType type);
void MatMulAmxQuant(const MatView& x, const LinearWeight& w, MutMatF32 out, ComputeMode mode,
                    ThreadPool& pool);

// AVX-512 BF16 kernels (vdpbf16ps) for bf16 weights. Only call on CpuFeatures::avx512_bf16.
// x_bf16: [T, x_stride] bf16 bits of the activations, x_stride = K rounded up to a multiple of
// kBF16RowAlign, zero-padded past K.
void MatMulBlockedBF16Dot(const uint16_t* x_bf16, int64_t T, int64_t x_stride, const MatView& w,
                          MutMatF32 out, int64_t n_begin, int64_t n_end);
void MatVecBF16Dot(const uint16_t* x_bf16, const MatView& w, float* out, int64_t n_begin,
                   int64_t n_end);
inline constexpr int64_t kBF16RowAlign = 32;
inline constexpr int64_t kBF16PanelWidth = 32;

// AMX-BF16 kernels (bf16 weights, T >= 2). Only call on CpuFeatures::amx_bf16 (whose detection
// also obtains Linux's permission for tile data).
// Packs token tiles [tile_begin, tile_end) of x [T, K] as bf16 pairs into packed
// [part][t_padded/16 tiles][k_padded/2 pairs][16 tokens] (u32; k_padded: K rounded up to 32,
// t_padded: T rounded up to 16; padding is written as zeros). parts = 1: x rounded to bf16;
// parts = 3: x split exactly as hi + mid + lo (f32 mode).
void PackTokensVnni(const MatView& x, int64_t k_padded, int64_t t_padded, int parts,
                    int64_t tile_begin, int64_t tile_end, uint32_t* packed);
void MatMulAmxBF16(const uint32_t* x_packed, int parts, int64_t T, int64_t k_padded,
                   const MatView& w, MutMatF32 out, int64_t n_begin, int64_t n_end);
inline constexpr int64_t kAmxPanelWidth = 32;
// Loads the tile configuration the AMX kernels use (tiles 0-7: 16 rows x 64 bytes).
void ConfigureAmxTiles();

// AMX kernel for MLX matrices (matmul_amx_mlx.cc): exact bf16 element values of the codes times
// x_packed (as for MatMulAmxBF16), one group at a time, scaled and biased in f32.
// x_group_sums: [groups][T rounded up to 16] sums of the packed activations over each group.
// Groups must be whole 32-k tile steps; runs on CpuFeatures::amx_bf16 and avx512_vbmi.
void MatMulAmxMlx(const uint32_t* x_packed, int parts, int64_t T, int64_t k_padded,
                  const quant::MlxQuantizedMatrix& w, const float* x_group_sums, MutMatF32 out,
                  int64_t n_begin, int64_t n_end);

}  // namespace proctor::ops::internal
