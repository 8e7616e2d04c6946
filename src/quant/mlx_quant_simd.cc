// Highway kernels for MLX quantized rows (see mlx_quant.h). 8-bit codes are byte loads; the other
// widths are unpacked with one 32-bit gather per lane (byte offset bit/8, shift bit%8: a code of
// up to 8 bits always fits the 4-byte window; windows that would read past the end of the row
// fall back to scalar unpacking).
// Values are then formed with the reference's f32 operations, so the decode is bit-identical to
// DecodeMlxRowSegmentRef; E2M1 / E4M3 codes go through 16- / 256-entry tables.
#include <cstring>

#include "quant/mlx_quant.h"

// Highway: HWY_TARGET_INCLUDE, then foreach_target.h, then highway.h and the -inl.h headers.
// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "quant/mlx_quant_simd.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace proctor::quant {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using DI32 = hn::Rebind<int32_t, DF>;
using DU32 = hn::Rebind<uint32_t, DF>;
// At most 8 lanes for the 8-bit byte path (measured faster than wider vectors with gathers).
using D8 = hn::CappedTag<float, 8>;

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

// 8-bit codes are bytes: widened directly.
HWY_INLINE hn::Vec<hn::Rebind<int32_t, D8>> LoadCodesWord(const uint8_t* row, int64_t e0) {
  return hn::PromoteTo(hn::Rebind<int32_t, D8>(), hn::LoadU(hn::Rebind<uint8_t, D8>(), row + e0));
}

// Dequantized values of elements [e0, e0 + Lanes) (all in one group).
// kWord: the D8 byte path (width 8), else the gather path (D = DF).
template <bool kWord, class D>
HWY_INLINE hn::Vec<D> GroupValues(D d, const MlxQuantizedMatrix& m, const uint8_t* row,
                                  int64_t row_bytes, int64_t e0, hn::Vec<D> scale,
                                  hn::Vec<D> bias) {
  hn::Vec<hn::Rebind<int32_t, D>> codes;
  if constexpr (kWord) {
    codes = LoadCodesWord(row, e0);
  } else {
    codes = LoadCodesGather(row, row_bytes, e0, m.bits);
  }
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

template <bool kWord, class D>
void DecodeSegment(D d, const MlxQuantizedMatrix& m, int64_t row, int64_t k0, int64_t len,
                   float* out) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const uint8_t* packed = m.packed.Row(row);
  const int64_t row_bytes = m.packed.cols * 4;
  for (int64_t g = k0 / m.group_size; g < (k0 + len) / m.group_size; ++g) {
    const auto scale = hn::Set(d, internal::MlxGroupScale(m, row, g));
    const auto bias = hn::Set(d, internal::MlxGroupBias(m, row, g));
    for (int64_t e = g * m.group_size; e < (g + 1) * m.group_size; e += N) {
      hn::StoreU(GroupValues<kWord>(d, m, packed, row_bytes, e, scale, bias), d, out + (e - k0));
    }
  }
}

template <bool kWord, class D>
float DotRow(D d, const MlxQuantizedMatrix& m, int64_t row, const float* x) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const uint8_t* packed = m.packed.Row(row);
  const int64_t row_bytes = m.packed.cols * 4;
  auto acc = hn::Zero(d);
  for (int64_t g = 0; g < m.cols() / m.group_size; ++g) {
    const auto scale = hn::Set(d, internal::MlxGroupScale(m, row, g));
    const auto bias = hn::Set(d, internal::MlxGroupBias(m, row, g));
    for (int64_t e = g * m.group_size; e < (g + 1) * m.group_size; e += N) {
      const auto values = GroupValues<kWord>(d, m, packed, row_bytes, e, scale, bias);
      acc = hn::MulAdd(values, hn::LoadU(d, x + e), acc);
    }
  }
  return hn::GetLane(hn::SumOfLanes(d, acc));
}

void DecodeMlxRowSegmentImpl(const MlxQuantizedMatrix& m, int64_t row, int64_t k0, int64_t len,
                             float* out) {
  if (m.bits == 8) {
    DecodeSegment<true>(D8(), m, row, k0, len, out);
  } else {
    DecodeSegment<false>(DF(), m, row, k0, len, out);
  }
}

float DotMlxRowImpl(const MlxQuantizedMatrix& m, int64_t row, const float* x) {
  return m.bits == 8 ? DotRow<true>(D8(), m, row, x) : DotRow<false>(DF(), m, row, x);
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
