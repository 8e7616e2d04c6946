// Highway decode of TurboQuant rows (turbo_quant.h), bit-identical to DecodeTurboRowSegment: per
// group of 32, keys scale * code + offset and values scale * level[code], in f32 with the fp16
// scale and offset widened exactly. Codes are read eight at a time (packed_codes-inl.h): 8-bit
// codes as bytes, 2-, 3- and 4-bit codes shifted out of one small load; 5-bit keys go through the
// scalar decoder.
#include "quant/turbo_quant.h"

#include "quant/segment_prefetch.h"

// Highway: HWY_TARGET_INCLUDE, then foreach_target.h, then highway.h and the -inl.h headers.
// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "quant/turbo_quant_simd.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "quant/packed_codes-inl.h"
// clang-format on

#include <cstring>
#include <optional>

#include "util/error.h"
#include "util/half.h"

HWY_BEFORE_NAMESPACE();
namespace proctor::quant {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <bool kBytes>
void DecodeRow(const TurboRows& m, int64_t row, int64_t k0, int64_t len, const float* levels,
               const LevelLookup* lookup, float* out) {
  const D8 d;
  const auto N = static_cast<int64_t>(hn::Lanes(d));
  const uint8_t* packed = m.packed.Row(row);
  const auto row_bytes = static_cast<int64_t>(m.packed.cols);
  const uint8_t* scales = m.scales.Row(row);
  const uint8_t* offsets = levels == nullptr ? m.offsets.Row(row) : nullptr;
  const int bits = m.bits;
  const ShiftedCodes shifted(packed, row_bytes, bits);
  for (int64_t g = k0 / kTurboGroup; g < (k0 + len) / kTurboGroup; ++g) {
    uint16_t half;
    std::memcpy(&half, scales + 2 * g, 2);
    const auto scale = hn::Set(d, F16ToF32(half));
    auto offset = hn::Zero(d);
    if (offsets != nullptr) {
      std::memcpy(&half, offsets + 2 * g, 2);
      offset = hn::Set(d, F16ToF32(half));
    }
    for (int64_t e = g * kTurboGroup; e < (g + 1) * kTurboGroup; e += N) {
      const auto codes = kBytes ? LoadCodesWord(packed, e) : shifted(e);
      float* o = out + (e - k0);
      if (levels == nullptr) {
        hn::StoreU(hn::Add(hn::Mul(scale, hn::ConvertTo(d, codes)), offset), d, o);
      } else {
        const auto value = kBytes ? hn::GatherIndex(d, levels, codes) : (*lookup)(codes);
        hn::StoreU(hn::Mul(scale, value), d, o);
      }
    }
  }
}

void DecodeTurboRowsSegmentImpl(const TurboRows& m, int64_t s0, int64_t n, int64_t k0, int64_t len,
                                const float* levels, float* out, int64_t stride) {
  // Values of up to 4 bits: levels looked up in registers.
  std::optional<LevelLookup> lookup;
  if (levels != nullptr && m.bits <= 4) lookup.emplace(levels, m.bits);
  const SegmentPrefetcher prefetch(m.packed, m.scales, m.offsets, m.cols(), k0, len);
  for (int64_t j = 0; j < n; ++j) {
    prefetch.Ahead(s0, j, n);
    if (m.bits == 8) {
      DecodeRow<true>(m, s0 + j, k0, len, levels, nullptr, out + j * stride);
    } else if (m.bits <= 4) {
      DecodeRow<false>(m, s0 + j, k0, len, levels, lookup.has_value() ? &*lookup : nullptr,
                       out + j * stride);
    } else {
      DecodeTurboRowSegment(m, s0 + j, k0, len, out + j * stride);
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace proctor::quant
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace proctor::quant {

HWY_EXPORT(DecodeTurboRowsSegmentImpl);

void DecodeTurboRowsSegment(const TurboRows& m, int64_t s0, int64_t n, int64_t k0, int64_t len,
                            float* out, int64_t stride) {
  if (n <= 0) return;
  CHECK_MSG(s0 >= 0 && s0 + n <= m.rows(), "rows [{}, {}) of {}", s0, s0 + n, m.rows());
  CHECK_MSG(k0 % kTurboGroup == 0 && len % kTurboGroup == 0 && k0 >= 0 && k0 + len <= m.cols(),
            "segment {}+{} of {}", k0, len, m.cols());
  const float* levels = m.part == TurboPart::kValues ? internal::TurboValueLevels(m.bits) : nullptr;
  HWY_DYNAMIC_DISPATCH(DecodeTurboRowsSegmentImpl)(m, s0, n, k0, len, levels, out, stride);
}

}  // namespace proctor::quant
#endif  // HWY_ONCE
