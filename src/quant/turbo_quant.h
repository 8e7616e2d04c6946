// TurboQuant KV cache codes (--kv turbo:kKvV; docs/kv-cache.md has the format and its arithmetic).
//
// Keys, per group of 32 elements of a row, unrotated: asymmetric affine codes of `bits` (2, 4, 5
// or 8) with an fp16 scale and an fp16 offset:
//   scale = fp16((max - min) / (2^bits - 1)), offset = fp16(min)      (f32 math, then rounded)
//   q = clamp(rint((x - offset) / scale), 0, 2^bits - 1)               (0 when scale is 0)
//   x' = scale * q + offset                                           (multiply, then add)
// Values, per head of head_dim elements (a power of two, at least 32):
//   y = FWHT(x * sign) * f32(1 / sqrt(head_dim))     (an orthonormal rotation; `sign` is the
//                                                     fixed vector TurboSign)
//   per group of 32 of y: scale = fp16(f32(sqrt(sum y^2 / 32)))       (the sum in double, in
//                                                                      element order)
//   code = the nearest Lloyd-Max centroid of a unit Gaussian to y / scale (2, 3, 4 or 8 bits;
//          ties to the lower centroid)
//   x' = sign * FWHT(scale * centroid[code]) * f32(1 / sqrt(head_dim))
// Codes are packed as MLX packs them (a little-endian bit stream per row, quant/mlx_quant.h).
// The rotation is linear and orthogonal, so attention may sum weighted rotated values and rotate
// the sum back once (ops/attention.cc does).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "tensor/tensor.h"

namespace proctor::quant {

inline constexpr int kTurboGroup = 32;             // elements per scale (keys and values)
inline constexpr uint64_t kTurboSignSeed = 20260;  // the seed of TurboSign (documented)

// Error naming `what` unless bits are allowed for the part: keys 2, 4, 5, 8; values 2, 3, 4, 8.
void CheckTurboKeyBits(int bits, std::string_view what);
void CheckTurboValueBits(int bits, std::string_view what);

// The 2^bits Lloyd-Max reconstruction levels of N(0, 1), ascending, derived by Lloyd's iteration
// in double (centroid = conditional mean of its cell, boundary = midpoint of its neighbours) to
// convergence; computed once per width.
const std::vector<double>& LloydMaxGaussian(int bits);

// The rotation's sign for element i of a head: bit 63 of splitmix64(kTurboSignSeed + i), set -> -1.
float TurboSign(int64_t i);
// In place, unnormalised: for h = 1, 2, 4, ... < n, for each pair (j, j + h) within blocks of 2h,
// (a, b) -> (a + b, a - b), in f32. n a power of two.
void FastWalshHadamard(float* x, int64_t n);

enum class TurboPart : uint8_t { kKeys, kValues };

// Rows of TurboQuant codes, as a KV cache stores them:
//   packed  U8  [rows, cols * bits / 8]
//   scales  F16 [rows, cols / 32]
//   offsets F16 [rows, cols / 32]   keys only (rows == 0 for values)
struct TurboRows {
  TurboPart part = TurboPart::kKeys;
  int bits = 0;
  int head_dim = 0;  // values: the rotation's width
  MatView packed, scales, offsets;

  int64_t rows() const { return packed.rows; }
  int64_t cols() const { return packed.cols * 8 / bits; }
};

// Encodes n elements of keys (n a multiple of 32) into packed[n * bits / 8], scales[n / 32],
// offsets[n / 32]. Error naming `what` and the value for a non-finite input or a scale or offset
// beyond fp16's range.
void EncodeTurboKeys(const float* x, int64_t n, int bits, uint8_t* packed, uint16_t* scales,
                     uint16_t* offsets, std::string_view what);
// Encodes n elements of values, head_dim at a time (n a multiple of head_dim), into
// packed[n * bits / 8] and scales[n / 32]. Errors as EncodeTurboKeys.
void EncodeTurboValues(const float* x, int64_t n, int head_dim, int bits, uint8_t* packed,
                       uint16_t* scales, std::string_view what);

// Elements [k0, k0 + len) of row `row` (multiples of 32). Keys: x'. Values: the rotated-domain
// scale * centroid; RotateBackTurboValues of a head's worth gives x'.
void DecodeTurboRowSegment(const TurboRows& m, int64_t row, int64_t k0, int64_t len, float* out);
// The same segment of rows s0 .. s0 + n - 1, row j at out + j * stride, with SIMD (Highway,
// turbo_quant_simd.cc), bit-identical to DecodeTurboRowSegment; each row's segment is prefetched a
// few rows ahead (a KV cache's tiles).
void DecodeTurboRowsSegment(const TurboRows& m, int64_t s0, int64_t n, int64_t k0, int64_t len,
                            float* out, int64_t stride);
// y of one head (head_dim elements) -> sign * FWHT(y) / sqrt(head_dim), in place.
void RotateBackTurboValues(float* y, int head_dim);
// Head `head` of row `row` fully decoded (values rotated back): x', into out[head_dim].
void DecodeTurboHead(const TurboRows& m, int64_t row, int head, int head_dim, float* out);

namespace internal {
// The value levels of `bits` bits as f32 (the Lloyd-Max levels rounded once), what values decode
// through: 2^bits of them.
const float* TurboValueLevels(int bits);
}  // namespace internal

}  // namespace proctor::quant
