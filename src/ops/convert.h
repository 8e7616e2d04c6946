// Row decoding: any supported weight type (f32, f16, bf16, GGUF Q8_0 / Q4_0) to f32, and f32 to
// bf16 rounding. These are the only places the kernels turn stored values into f32.
#pragma once

#include <cstdint>
#include <span>

#include "tensor/tensor.h"

namespace proctor::ops {

// True when MatMul / GatherRows / DequantizeRow accept `type` as a weight type.
bool IsSupportedWeightType(DType type);

// Decodes elements [k0, k0 + len) of row `row` of w into out[len]. For block types k0 and len
// must be multiples of the block size (CHECKed). SIMD; exact (every supported type converts to
// f32 without rounding).
void DecodeRowSegment(const MatView& w, int64_t row, int64_t k0, int64_t len, float* out);
// The same segment of rows [row0, row0 + n_rows), row r into out + (r - row0) * out_stride:
// the checks and the type's decoder resolved once, not per row (attention decodes a cache tile).
void DecodeRowsSegment(const MatView& w, int64_t row0, int64_t n_rows, int64_t k0, int64_t len,
                       float* out, int64_t out_stride);
// Scalar reference of DecodeRowSegment.
void DecodeRowSegmentRef(const MatView& w, int64_t row, int64_t k0, int64_t len, float* out);

// Dequantize one row of any supported weight type to f32 (reference path, tests, debugging).
void DequantizeRow(const MatView& w, int64_t row, std::span<float> out);

// out[i] = bf16 bits of x[i], rounded to nearest even (NaN stays NaN). SIMD.
void RoundToBF16Bits(const float* x, int64_t n, uint16_t* out);
// out[i] = x[i] rounded to the nearest bf16 value, as f32. SIMD.
void RoundToBF16Floats(const float* x, int64_t n, float* out);

}  // namespace proctor::ops
