// Internal: Attention's products for a few query rows (a decode step's heads of one KV head),
// reading key and value rows where they are (an f32 cache in place, a decoded tile, or a coded
// cache's codes made into rows in registers) with no packing: the blocked MatMul kernel's packing
// costs more than these products when only a few rows share each key.
#pragma once

#include <cstdint>

#include "quant/mlx_quant.h"
#include "quant/turbo_quant.h"

namespace proctor::ops::internal {

// Query rows up to which Attention takes these kernels.
inline constexpr int64_t kFewQueryRows = 16;

// Whether rows `head_dim` floats wide are a whole number of this CPU's vectors (the kernels'
// condition).
bool FewRowsKernelsFit(int64_t head_dim);

// scores[r * scores_stride + j] = q_r · k_j for r < rows, j < n: query r at q + r * D, key j at
// k + j * k_stride (floats). Each product is summed in lanes over d, then across the lanes.
// `readable` >= n: rows of k that exist (prefetched a few rows ahead of use).
void ScoreFewRows(const float* q, int64_t rows, int64_t D, const float* k, int64_t k_stride,
                  int64_t n, int64_t readable, float* scores, int64_t scores_stride);

// Groups of a head the coded-row kernels below take (their table of widened group scales).
inline constexpr int64_t kMaxCodedGroups = 16;

// Whether ScoreFewRowsAffine takes these keys: an affine cache's (f32 scales and biases) of 2, 3,
// 4 or 8 bits whose groups tile a head, at most kMaxCodedGroups of them.
bool AffineKeysScoredInPlace(const quant::MlxQuantizedMatrix& keys, int64_t head_dim);
// ScoreFewRows over rows s0 .. s0 + n - 1 of affine-coded keys, the head at columns [k0, k0 + D):
// each key vector made in registers as DecodeMlxRowsSegment makes it (scale * code + bias), so the
// scores equal ScoreFewRows over the decoded rows bit for bit.
void ScoreFewRowsAffine(const float* q, int64_t rows, int64_t D,
                        const quant::MlxQuantizedMatrix& keys, int64_t s0, int64_t n, int64_t k0,
                        float* scores, int64_t scores_stride);

// Whether ScoreFewRowsTurbo takes these keys: TurboQuant keys of 2, 4 or 8 bits (5-bit codes
// decode through the scalar decoder) whose groups of 32 tile a head, at most kMaxCodedGroups.
bool TurboKeysScoredInPlace(const quant::TurboRows& keys, int64_t head_dim);
// ScoreFewRows over rows s0 .. s0 + n - 1 of TurboQuant keys, the head at columns [k0, k0 + D):
// each key vector made in registers as DecodeTurboRowsSegment makes it (scale * code + offset,
// the fp16 scale and offset widened exactly), so the scores equal ScoreFewRows over the decoded
// rows bit for bit.
void ScoreFewRowsTurbo(const float* q, int64_t rows, int64_t D, const quant::TurboRows& keys,
                       int64_t s0, int64_t n, int64_t k0, float* scores, int64_t scores_stride);

// out[r * out_stride + d] = (accumulate ? out[...] : 0) + sum over j < n, in order, of
// p[r * p_stride + j] * v[j * v_stride + d] for r < rows, d < D: one FMA chain per output, so a
// sum over many calls (tiles, accumulating) equals one call over all of them.
// `readable` as for ScoreFewRows.
void WeightFewRows(const float* p, int64_t p_stride, int64_t rows, const float* v, int64_t v_stride,
                   int64_t n, int64_t readable, int64_t D, float* out, int64_t out_stride,
                   bool accumulate);

// Coded values weighted from their codes: WeightFewRows over rows s0 .. s0 + n - 1 of the cache,
// the head at columns [k0, k0 + D), each value vector made in registers as the tile decoder makes
// it (affine: scale * code + bias, DecodeMlxRowsSegment; TurboQuant: scale * level[code], still
// rotated, DecodeTurboRowsSegment) and summed in the same FMA chains, so the sums equal
// WeightFewRows over the decoded rows bit for bit.
// Affine values as AffineKeysScoredInPlace takes keys.
bool AffineValuesWeightedInPlace(const quant::MlxQuantizedMatrix& values, int64_t head_dim);
void WeightFewRowsAffine(const float* p, int64_t p_stride, int64_t rows,
                         const quant::MlxQuantizedMatrix& values, int64_t s0, int64_t n, int64_t k0,
                         int64_t D, float* out, int64_t out_stride, bool accumulate);
// TurboQuant values of 2, 3 or 4 bits (levels looked up in registers), at most kMaxCodedGroups
// groups of 32 a head.
bool TurboValuesWeightedInPlace(const quant::TurboRows& values, int64_t head_dim);
void WeightFewRowsTurbo(const float* p, int64_t p_stride, int64_t rows,
                        const quant::TurboRows& values, int64_t s0, int64_t n, int64_t k0,
                        int64_t D, float* out, int64_t out_stride, bool accumulate);

}  // namespace proctor::ops::internal
