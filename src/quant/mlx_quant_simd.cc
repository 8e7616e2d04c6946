// Highway kernels for MLX quantized rows (see mlx_quant.h): codes are pulled out of the packed
// bit stream with one 32-bit gather per lane (byte offset bit/8, shift bit%8: a code of up to 8
// bits always fits the 4-byte window), then scaled with the reference's f32 operations, so the
// decode is bit-identical to DecodeMlxRowSegmentRef. Windows that would read past the end of the
// row fall back to scalar unpacking.
#include <cstring>

#include "quant/mlx_quant.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "quant/mlx_quant_simd.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace proctor::quant {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using DI32 = hn::Rebind<int32_t, DF>;
using DU32 = hn::Rebind<uint32_t, DF>;

// Codes of elements [e0, e0 + Lanes) of a packed row of row_bytes bytes, as int32 lanes.
HWY_INLINE hn::Vec<DI32> LoadCodes(const uint8_t* row, int64_t row_bytes, int64_t e0, int bits) {
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
    const auto codes = hn::And(hn::Shr(hn::BitCast(du, words), shifts),
                               hn::Set(du, (1u << bits) - 1u));
    return hn::BitCast(di, codes);
  }
  HWY_ALIGN int32_t codes[hn::MaxLanes(di)];
  uint8_t bytes[hn::MaxLanes(di)];
  UnpackCodes(row, e0, lanes, bits, bytes);
  for (int64_t i = 0; i < lanes; ++i) codes[i] = bytes[i];
  return hn::Load(di, codes);
}

// Dequantized values of elements [e0, e0 + Lanes) of group g (all in one group).
HWY_INLINE hn::Vec<DF> GroupValues(const MlxQuantizedMatrix& m, const uint8_t* row,
                                   int64_t row_bytes, int64_t e0, hn::Vec<DF> scale,
                                   hn::Vec<DF> bias) {
  const DF df;
  const auto codes = LoadCodes(row, row_bytes, e0, m.bits);
  switch (m.mode) {
    case MlxMode::kAffine:
      return hn::Add(hn::Mul(scale, hn::ConvertTo(df, codes)), bias);
    case MlxMode::kMxfp4:
    case MlxMode::kNvfp4:
      return hn::Mul(scale, hn::GatherIndex(df, internal::E2M1Table(), codes));
    case MlxMode::kMxfp8:
      return hn::Mul(scale, hn::GatherIndex(df, internal::E4M3Table(), codes));
  }
  return hn::Zero(df);
}

void DecodeMlxRowSegmentImpl(const MlxQuantizedMatrix& m, int64_t row, int64_t k0, int64_t len,
                             float* out) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const uint8_t* packed = m.packed.Row(row);
  const int64_t row_bytes = m.packed.cols * 4;
  for (int64_t g = k0 / m.group_size; g < (k0 + len) / m.group_size; ++g) {
    const auto scale = hn::Set(df, internal::MlxGroupScale(m, row, g));
    const auto bias = hn::Set(df, internal::MlxGroupBias(m, row, g));
    for (int64_t e = g * m.group_size; e < (g + 1) * m.group_size; e += N) {
      hn::StoreU(GroupValues(m, packed, row_bytes, e, scale, bias), df, out + (e - k0));
    }
  }
}

float DotMlxRowImpl(const MlxQuantizedMatrix& m, int64_t row, const float* x) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const uint8_t* packed = m.packed.Row(row);
  const int64_t row_bytes = m.packed.cols * 4;
  auto acc = hn::Zero(df);
  for (int64_t g = 0; g < m.cols() / m.group_size; ++g) {
    const auto scale = hn::Set(df, internal::MlxGroupScale(m, row, g));
    const auto bias = hn::Set(df, internal::MlxGroupBias(m, row, g));
    for (int64_t e = g * m.group_size; e < (g + 1) * m.group_size; e += N) {
      acc = hn::MulAdd(GroupValues(m, packed, row_bytes, e, scale, bias), hn::LoadU(df, x + e),
                       acc);
    }
  }
  return hn::GetLane(hn::SumOfLanes(df, acc));
}

}  // namespace HWY_NAMESPACE
}  // namespace proctor::quant
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace proctor::quant {

HWY_EXPORT(DecodeMlxRowSegmentImpl);
HWY_EXPORT(DotMlxRowImpl);

void DecodeMlxRowSegment(const MlxQuantizedMatrix& m, int64_t row, int64_t k0, int64_t len,
                         float* out) {
  internal::CheckMlxSegment(m, row, k0, len);
  HWY_DYNAMIC_DISPATCH(DecodeMlxRowSegmentImpl)(m, row, k0, len, out);
}

float DotMlxRow(const MlxQuantizedMatrix& m, int64_t row, const float* x) {
  internal::CheckMlxSegment(m, row, 0, m.cols());
  return HWY_DYNAMIC_DISPATCH(DotMlxRowImpl)(m, row, x);
}

}  // namespace proctor::quant
#endif  // HWY_ONCE
