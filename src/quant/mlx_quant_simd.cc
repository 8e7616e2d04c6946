// Highway kernels for MLX quantized rows (see mlx_quant.h). 8-bit codes are byte loads; 2-, 3- and
// 4-bit codes, eight at a time, one load of the `bits` bytes that hold them shifted per lane; the
// other widths are unpacked with one 32-bit gather per lane (byte offset bit/8, shift bit%8: a
// code of up to 8 bits always fits the 4-byte window; windows that would read past the end of the
// row fall back to scalar unpacking).
// Values are then formed with the reference's f32 operations, so the decode is bit-identical to
// DecodeMlxRowSegmentRef; E2M1 / E4M3 codes go through 16- / 256-entry tables.
#include <cstring>

#include "quant/mlx_quant.h"
#include "quant/segment_prefetch.h"

// Highway: HWY_TARGET_INCLUDE, then foreach_target.h, then highway.h and the -inl.h headers.
// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "quant/mlx_quant_simd.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "quant/packed_codes-inl.h"
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace proctor::quant {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using DI32 = hn::Rebind<int32_t, DF>;
using DU32 = hn::Rebind<uint32_t, DF>;
// D8 (packed_codes-inl.h), at most 8 lanes, for the byte and shift paths (measured faster than
// wider vectors with gathers).

// Codes of elements [e0, e0 + Lanes) of a packed row of row_bytes bytes, as int32 lanes, for any
// width: one 32-bit gather per lane.
HWY_INLINE hn::Vec<DI32> LoadCodesGather(const uint8_t* row, int64_t row_bytes, int64_t e0,
                                         int bits) {
  const DI32 di;
  const DU32 du;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(di));
  const int64_t last_window_end = (e0 + lanes - 1) * bits / 8 + 4;
  if (last_window_end <= row_bytes) {
    const auto bit = hn::Add(hn::Set(di, static_cast<int32_t>(e0 * bits)),
                             hn::Mul(hn::Iota(di, 0), hn::Set(di, bits)));
    const auto words =
        hn::GatherOffset(di, reinterpret_cast<const int32_t*>(row), hn::ShiftRight<3>(bit));
    const auto shifts = hn::BitCast(du, hn::And(bit, hn::Set(di, 7)));
    const auto codes =
        hn::And(hn::Shr(hn::BitCast(du, words), shifts), hn::Set(du, (1u << bits) - 1u));
    return hn::BitCast(di, codes);
  }
  HWY_ALIGN int32_t codes[hn::MaxLanes(di)];
  uint8_t bytes[hn::MaxLanes(di)];
  UnpackCodes(row, e0, lanes, bits, bytes);
  for (int64_t i = 0; i < lanes; ++i) codes[i] = bytes[i];
  return hn::Load(di, codes);
}

// How a row's codes are read: bytes (8 bits), shifted out of one small load (2, 3, 4 bits: eight
// codes fill exactly `bits` bytes, e0 a multiple of 8), or gathered (5, 6 bits).
enum class CodePath { kBytes, kShift, kGather };

CodePath PathFor(int bits) {
  if (bits == 8) return CodePath::kBytes;
  return bits <= 4 ? CodePath::kShift : CodePath::kGather;
}

// Dequantized values of elements [e0, e0 + Lanes) (all in one group). kBytes and kShift run on
// D8 (8 lanes), kGather on DF.
// Codes of elements [e0, e0 + Lanes(d)) of a row of `bits`-bit codes, read the path's way.
template <CodePath kPath, class D>
HWY_INLINE hn::Vec<hn::Rebind<int32_t, D>> LoadCodes(D /*d*/, const uint8_t* row, int64_t row_bytes,
                                                     int64_t e0, int bits) {
  if constexpr (kPath == CodePath::kBytes) {
    return LoadCodesWord(row, e0);
  } else if constexpr (kPath == CodePath::kShift) {
    return LoadCodesShift(row, row_bytes, e0, bits);
  } else {
    return LoadCodesGather(row, row_bytes, e0, bits);
  }
}

template <CodePath kPath, class D>
HWY_INLINE hn::Vec<D> GroupValues(D d, const MlxQuantizedMatrix& m, const uint8_t* row,
                                  int64_t row_bytes, int64_t e0, hn::Vec<D> scale,
                                  hn::Vec<D> bias) {
  const auto codes = LoadCodes<kPath>(d, row, row_bytes, e0, m.bits);
  switch (m.mode) {
    case MlxMode::kAffine:
      return hn::Add(hn::Mul(scale, hn::ConvertTo(d, codes)), bias);
    case MlxMode::kMxfp4:
    case MlxMode::kNvfp4:
      return hn::Mul(scale, hn::GatherIndex(d, internal::E2M1Table(), codes));
    case MlxMode::kMxfp8:
      return hn::Mul(scale, hn::GatherIndex(d, internal::E4M3Table(), codes));
  }
  return hn::Zero(d);
}

// Group g's scale and bias of row `row`: f32 affine scales (a KV cache's) read in place, the
// others through the shared decoders.
HWY_INLINE float F32At(const MatView& view, int64_t row, int64_t g) {
  float v;
  std::memcpy(&v, view.Row(row) + 4 * g, 4);
  return v;
}

HWY_INLINE float GroupScale(const MlxQuantizedMatrix& m, int64_t row, int64_t g) {
  if (m.mode == MlxMode::kAffine && m.scales.type == DType::kF32) return F32At(m.scales, row, g);
  return internal::MlxGroupScale(m, row, g);
}

HWY_INLINE float GroupBias(const MlxQuantizedMatrix& m, int64_t row, int64_t g) {
  if (m.mode == MlxMode::kAffine && m.biases.type == DType::kF32) return F32At(m.biases, row, g);
  return internal::MlxGroupBias(m, row, g);
}

// Affine codes (a KV cache's): scale * code + bias, with the mode, width and group hoisted out
// of the loop (the same f32 operations as GroupValues).
template <CodePath kPath, class D>
void DecodeAffineSegment(D d, const MlxQuantizedMatrix& m, int64_t row, int64_t k0, int64_t len,
                         float* out) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const uint8_t* packed = m.packed.Row(row);
  const int64_t row_bytes = m.packed.cols * 4;
  const int bits = m.bits;
  const int64_t group = m.group_size;
  const ShiftedCodes shifted(packed, row_bytes, bits);  // the shift path's row constants
  const auto codes_at = [&](int64_t e) {
    if constexpr (kPath == CodePath::kShift) {
      return shifted(e);
    } else {
      return LoadCodes<kPath>(d, packed, row_bytes, e, bits);
    }
  };
  for (int64_t g = k0 / group; g < (k0 + len) / group; ++g) {
    const auto scale = hn::Set(d, GroupScale(m, row, g));
    const auto bias = hn::Set(d, GroupBias(m, row, g));
    for (int64_t e = g * group; e < (g + 1) * group; e += N) {
      hn::StoreU(hn::Add(hn::Mul(scale, hn::ConvertTo(d, codes_at(e))), bias), d, out + (e - k0));
    }
  }
}

template <CodePath kPath, class D>
void DecodeSegment(D d, const MlxQuantizedMatrix& m, int64_t row, int64_t k0, int64_t len,
                   float* out) {
  if (m.mode == MlxMode::kAffine) return DecodeAffineSegment<kPath>(d, m, row, k0, len, out);
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const uint8_t* packed = m.packed.Row(row);
  const int64_t row_bytes = m.packed.cols * 4;
  for (int64_t g = k0 / m.group_size; g < (k0 + len) / m.group_size; ++g) {
    const auto scale = hn::Set(d, GroupScale(m, row, g));
    const auto bias = hn::Set(d, GroupBias(m, row, g));
    for (int64_t e = g * m.group_size; e < (g + 1) * m.group_size; e += N) {
      hn::StoreU(GroupValues<kPath>(d, m, packed, row_bytes, e, scale, bias), d, out + (e - k0));
    }
  }
}

template <CodePath kPath, class D>
float DotRow(D d, const MlxQuantizedMatrix& m, int64_t row, const float* x) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const uint8_t* packed = m.packed.Row(row);
  const int64_t row_bytes = m.packed.cols * 4;
  auto acc = hn::Zero(d);
  for (int64_t g = 0; g < m.cols() / m.group_size; ++g) {
    const auto scale = hn::Set(d, internal::MlxGroupScale(m, row, g));
    const auto bias = hn::Set(d, internal::MlxGroupBias(m, row, g));
    for (int64_t e = g * m.group_size; e < (g + 1) * m.group_size; e += N) {
      const auto values = GroupValues<kPath>(d, m, packed, row_bytes, e, scale, bias);
      acc = hn::MulAdd(values, hn::LoadU(d, x + e), acc);
    }
  }
  return hn::GetLane(hn::SumOfLanes(d, acc));
}

void DecodeMlxRowSegmentImpl(const MlxQuantizedMatrix& m, int64_t row, int64_t k0, int64_t len,
                             float* out) {
  switch (PathFor(m.bits)) {
    case CodePath::kBytes:
      return DecodeSegment<CodePath::kBytes>(D8(), m, row, k0, len, out);
    case CodePath::kShift:
      return DecodeSegment<CodePath::kShift>(D8(), m, row, k0, len, out);
    case CodePath::kGather:
      return DecodeSegment<CodePath::kGather>(DF(), m, row, k0, len, out);
  }
}

// The segment of rows s0 .. s0 + n - 1, row j at out + j * stride; the segment eight rows ahead
// is prefetched by hand (a segment is a fraction of each row: the hardware prefetcher does not
// follow that stride).
template <CodePath kPath, class D>
void DecodeRows(D d, const MlxQuantizedMatrix& m, int64_t s0, int64_t n, int64_t k0, int64_t len,
                float* out, int64_t stride) {
  const SegmentPrefetcher prefetch(m.packed, m.scales, m.biases, m.cols(), k0, len);
  for (int64_t j = 0; j < n; ++j) {
    prefetch.Ahead(s0, j, n);
    DecodeSegment<kPath>(d, m, s0 + j, k0, len, out + j * stride);
  }
}

void DecodeMlxRowsSegmentImpl(const MlxQuantizedMatrix& m, int64_t s0, int64_t n, int64_t k0,
                              int64_t len, float* out, int64_t stride) {
  switch (PathFor(m.bits)) {
    case CodePath::kBytes:
      return DecodeRows<CodePath::kBytes>(D8(), m, s0, n, k0, len, out, stride);
    case CodePath::kShift:
      return DecodeRows<CodePath::kShift>(D8(), m, s0, n, k0, len, out, stride);
    case CodePath::kGather:
      return DecodeRows<CodePath::kGather>(DF(), m, s0, n, k0, len, out, stride);
  }
}

float DotMlxRowImpl(const MlxQuantizedMatrix& m, int64_t row, const float* x) {
  switch (PathFor(m.bits)) {
    case CodePath::kBytes:
      return DotRow<CodePath::kBytes>(D8(), m, row, x);
    case CodePath::kShift:
      return DotRow<CodePath::kShift>(D8(), m, row, x);
    case CodePath::kGather:
      break;
  }
  return DotRow<CodePath::kGather>(DF(), m, row, x);
}

}  // namespace HWY_NAMESPACE
}  // namespace proctor::quant
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace proctor::quant {

HWY_EXPORT(DecodeMlxRowSegmentImpl);
HWY_EXPORT(DecodeMlxRowsSegmentImpl);
HWY_EXPORT(DotMlxRowImpl);

void DecodeMlxRowSegment(const MlxQuantizedMatrix& m, int64_t row, int64_t k0, int64_t len,
                         float* out) {
  internal::CheckMlxSegment(m, row, k0, len);
  HWY_DYNAMIC_DISPATCH(DecodeMlxRowSegmentImpl)(m, row, k0, len, out);
}

void DecodeMlxRowsSegment(const MlxQuantizedMatrix& m, int64_t s0, int64_t n, int64_t k0,
                          int64_t len, float* out, int64_t stride) {
  if (n <= 0) return;
  internal::CheckMlxSegment(m, s0, k0, len);
  internal::CheckMlxSegment(m, s0 + n - 1, k0, len);
  HWY_DYNAMIC_DISPATCH(DecodeMlxRowsSegmentImpl)(m, s0, n, k0, len, out, stride);
}

float DotMlxRow(const MlxQuantizedMatrix& m, int64_t row, const float* x) {
  internal::CheckMlxSegment(m, row, 0, m.cols());
  return HWY_DYNAMIC_DISPATCH(DotMlxRowImpl)(m, row, x);
}

}  // namespace proctor::quant
#endif  // HWY_ONCE
