// MLX quantized weights (docs/FORMATS section 6, docs/quantization.md): the affine mode
// (bits 2, 3, 4, 5, 6, 8; group size 32, 64, 128) and the microscaling float modes mxfp4, mxfp8
// and nvfp4; code packing, MLX's CPU quantizers, row decoding and dot products (scalar
// references plus Highway kernels).
//
// Representation of one quantized Linear W[out, in] (MlxQuantizedMatrix), as mlx-lm stores it:
//   packed  U32  [out, in * bits / 32]  each row is a little-endian bit stream: code i occupies
//                                       stream bits [i * bits, i * bits + bits), LSB first (3-,
//                                       5- and 6-bit codes straddle bytes and words)
//   scales       [out, in / group_size] affine: F32, F16 or BF16 (the model dtype);
//                                       mxfp4 / mxfp8: U8 E8M0 exponents; nvfp4: U8 FP8 E4M3
//   biases       [out, in / group_size] affine only, same dtype as scales (empty otherwise)
// Dequantization of element i of a row, g = i / group_size, q = its code:
//   affine:  w = scales[g] * q + biases[g]           (q unsigned in [0, 2^bits - 1]; f32 math,
//                                                     multiply then add, no fused multiply-add)
//   mxfp4:   w = 2^(e - 127) * E2M1(q)               (group 32, 4-bit codes; e = 0 -> 2^-127,
//   mxfp8:   w = 2^(e - 127) * E4M3(q)                group 32, 8-bit codes; e = 255 -> inf, as
//                                                     MLX decodes it through bf16)
//   nvfp4:   w = E4M3(scales[g]) * E2M1(q)           (group 16; no global scale)
// All mx/nv products are exact in f32, so those decodes are exact.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "tensor/tensor.h"

namespace proctor::quant {

enum class MlxMode : uint8_t { kAffine, kMxfp4, kMxfp8, kNvfp4 };

std::string_view MlxModeName(MlxMode mode);
// "affine", "mxfp4", "mxfp8", "nvfp4" (as in config.json's quantization.mode).
std::optional<MlxMode> ParseMlxMode(std::string_view name);

// Throws proctor::Error naming `what` unless (mode, bits, group_size) is one MLX defines:
// affine bits {2,3,4,5,6,8} x group {32,64,128}; mxfp4 4/32; mxfp8 8/32; nvfp4 4/16.
void CheckMlxParams(MlxMode mode, int bits, int group_size, std::string_view what);

struct MlxQuantizedMatrix {
  MlxMode mode = MlxMode::kAffine;
  int bits = 4;
  int group_size = 64;
  MatView packed;  // U32 [out, in * bits / 32]
  MatView scales;  // [out, in / group_size]
  MatView biases;  // affine: like scales; other modes: rows == 0

  int64_t rows() const { return packed.rows; }
  int64_t cols() const { return packed.cols * 32 / bits; }
};

// Throws proctor::Error ("<what>: ...", with the values seen and expected) unless the views are
// consistent: parameters valid, packed U32, scales/biases of an allowed dtype and shape.
void ValidateMlxMatrix(const MlxQuantizedMatrix& m, std::string_view what);

// Packs codes[n] (each < 2^bits) into the little-endian bit stream packed[n * bits / 8]
// (n * bits must be a multiple of 8).
void PackCodes(const uint8_t* codes, int64_t n, int bits, uint8_t* packed);
// Codes [first, first + n) of a packed stream, into codes[n].
void UnpackCodes(const uint8_t* packed, int64_t first, int64_t n, int bits, uint8_t* codes);

// Element encodings, as MLX decodes / encodes them.
float DecodeE2M1(uint8_t code);  // low 4 bits: sign, 2 exponent bits, 1 mantissa bit
float DecodeE4M3(uint8_t code);  // FP8 E4M3FN (bias 7, no infinities, 0x7F / 0xFF NaN)
float DecodeE8M0(uint8_t code);  // 2^(code - 127); 0 -> 2^-127, 255 -> +inf (MLX)
uint8_t EncodeE2M1(float x);     // nearest, ties to even mantissa; |x| > 5 -> 6; NaN -> 0x7
uint8_t EncodeE4M3(float x);     // nearest even; |x| >= 448 (and NaN) -> +-448
uint8_t EncodeE8M0(float x);     // round(log2 x) clamped to [-127, 127], + 127; x <= 0 -> 0

// An owning quantized matrix (what the quantizer returns).
struct MlxQuantizedTensor {
  MlxMode mode = MlxMode::kAffine;
  int bits = 0;
  int group_size = 0;
  Tensor packed, scales, biases;

  MlxQuantizedMatrix View() const;
};

// Quantizes w[rows, cols] (f32, row-major, each value representable in `dtype`, the weights'
// own dtype: f32, f16 or bf16) exactly as MLX's CPU quantizer (mlx 0.32.4 `mx.quantize`) does
// for weights of that dtype, byte for byte (tests/oracle: mlx_oracle_test.cc).
// Affine, per group: lo/hi = min/max, scale = max((hi - lo) / (2^bits - 1), 1e-7), negated
// unless |lo| > |hi|; edge = the larger-magnitude extreme; q0 = rint(edge / scale); when
// q0 != 0: scale = edge / q0, bias = edge (so the edge dequantizes exactly), else bias = 0;
// q = clamp(rint((w - bias) / scale), 0, 2^bits - 1) with the f32 scale and bias; then scale
// and bias are rounded to nearest-even into `dtype`, the scales' and biases' storage type.
// mx/nv modes, per group, every step rounded to `dtype` as MLX evaluates it: s = max|w| / 6
// (4 bits) or / 448 (8 bits). mxfp4/mxfp8: E8M0 exponent e = the exponent of s rounded up (the
// smallest e with 2^e >= s; 0 for an all-zero group), q = w / 2^e. nvfp4: the E4M3 code of s
// (nearest even), q = w / E4M3(code). 4-bit elements are the E2M1 code nearest to q with ties to
// the smaller magnitude and small negatives to +0 (MLX's argmin over its code table), 8-bit ones
// the nearest-even E4M3 encoding of q. Scales are U8 codes.
// Throws proctor::Error on invalid parameters, a dtype other than f32/f16/bf16, or cols not a
// multiple of group_size.
MlxQuantizedTensor QuantizeMlx(const float* w, int64_t rows, int64_t cols, MlxMode mode, int bits,
                               int group_size, DType dtype = DType::kF32);

// Decodes elements [k0, k0 + len) of row `row` into out[len] (the MLX counterpart of
// ops::DecodeRowSegment). k0 and len must be multiples of group_size (CHECKed).
void DecodeMlxRowSegmentRef(const MlxQuantizedMatrix& m, int64_t row, int64_t k0, int64_t len,
                            float* out);
// SIMD (Highway) version: bit-identical to the reference.
void DecodeMlxRowSegment(const MlxQuantizedMatrix& m, int64_t row, int64_t k0, int64_t len,
                         float* out);
// The same segment of rows s0 .. s0 + n - 1, row j at out + j * stride: one check and one
// dispatch for them all, each row's segment prefetched a few rows ahead (a KV cache's tiles).
void DecodeMlxRowsSegment(const MlxQuantizedMatrix& m, int64_t s0, int64_t n, int64_t k0,
                          int64_t len, float* out, int64_t stride);

// sum over k of W[row, k] * x[k] for a whole row. Reference: f32 in k order; SIMD: lane order
// (agrees to f32 rounding).
float DotMlxRowRef(const MlxQuantizedMatrix& m, int64_t row, const float* x);
float DotMlxRow(const MlxQuantizedMatrix& m, int64_t row, const float* x);

namespace internal {  // shared by the reference and SIMD files
void CheckMlxSegment(const MlxQuantizedMatrix& m, int64_t row, int64_t k0, int64_t len);
float MlxGroupScale(const MlxQuantizedMatrix& m, int64_t row, int64_t g);  // decoded scale
float MlxGroupBias(const MlxQuantizedMatrix& m, int64_t row, int64_t g);   // 0 for mx/nv modes
const float* E2M1Table();  // [16] DecodeE2M1 of every code
const float* E4M3Table();  // [256] DecodeE4M3 of every code
}  // namespace internal

}  // namespace proctor::quant
