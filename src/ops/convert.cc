// Row decoding to f32 and bf16 rounding: Highway kernels plus their scalar references.
#include "ops/convert.h"

#include <cstring>

#include "quant/ggml_blocks.h"
#include "util/error.h"
#include "util/half.h"

// Highway: HWY_TARGET_INCLUDE, then foreach_target.h, then highway.h and the -inl.h headers.
// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/convert.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace proctor::ops {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void DecodeBF16Impl(const uint16_t* in, int64_t n, float* out) {
  const hn::ScalableTag<float> df;
  const hn::Rebind<uint32_t, decltype(df)> du32;
  const hn::Rebind<uint16_t, decltype(df)> du16;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    const auto wide = hn::ShiftLeft<16>(hn::PromoteTo(du32, hn::LoadU(du16, in + i)));
    hn::StoreU(hn::BitCast(df, wide), df, out + i);
  }
  for (; i < n; ++i) out[i] = BF16ToF32(in[i]);
}

void DecodeF16Impl(const uint16_t* in, int64_t n, float* out) {
  const hn::ScalableTag<float> df;
  const hn::Rebind<hwy::float16_t, decltype(df)> df16;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    const auto h = hn::LoadU(df16, reinterpret_cast<const hwy::float16_t*>(in + i));
    hn::StoreU(hn::PromoteTo(df, h), df, out + i);
  }
  for (; i < n; ++i) out[i] = F16ToF32(in[i]);
}

// Round to nearest even on the bit pattern; NaN keeps its sign and is made quiet.
template <class DF>
HWY_INLINE auto RoundedBF16Bits(DF df, hn::Vec<DF> v) {
  const hn::Rebind<uint32_t, DF> du32;
  const auto bits = hn::BitCast(du32, v);
  const auto lsb = hn::And(hn::ShiftRight<16>(bits), hn::Set(du32, 1u));
  const auto rounded = hn::ShiftRight<16>(hn::Add(bits, hn::Add(lsb, hn::Set(du32, 0x7FFFu))));
  const auto nan_bits = hn::Or(hn::ShiftRight<16>(bits), hn::Set(du32, 0x0040u));
  const hn::Rebind<int32_t, DF> di32;
  const auto abs_bits = hn::BitCast(di32, hn::And(bits, hn::Set(du32, 0x7FFFFFFFu)));
  const auto is_nan = hn::Gt(abs_bits, hn::Set(di32, 0x7F800000));
  return hn::IfThenElse(hn::RebindMask(du32, is_nan), nan_bits, rounded);
}

void RoundToBF16BitsImpl(const float* x, int64_t n, uint16_t* out) {
  const hn::ScalableTag<float> df;
  const hn::Rebind<int32_t, decltype(df)> di32;
  const hn::Rebind<uint16_t, decltype(df)> du16;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    const auto r = RoundedBF16Bits(df, hn::LoadU(df, x + i));
    hn::StoreU(hn::DemoteTo(du16, hn::BitCast(di32, r)), du16, out + i);
  }
  for (; i < n; ++i) out[i] = F32ToBF16(x[i]);
}

void RoundToBF16FloatsImpl(const float* x, int64_t n, float* out) {
  const hn::ScalableTag<float> df;
  const hn::Rebind<uint32_t, decltype(df)> du32;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    const auto r = RoundedBF16Bits(df, hn::LoadU(df, x + i));
    hn::StoreU(hn::BitCast(df, hn::ShiftLeft<16>(r)), df, out + i);
  }
  (void)du32;
  for (; i < n; ++i) out[i] = RoundToBF16(x[i]);
}

}  // namespace HWY_NAMESPACE
}  // namespace proctor::ops
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace proctor::ops {

HWY_EXPORT(DecodeBF16Impl);
HWY_EXPORT(DecodeF16Impl);
HWY_EXPORT(RoundToBF16BitsImpl);
HWY_EXPORT(RoundToBF16FloatsImpl);

bool IsSupportedWeightType(DType type) {
  return type == DType::kF32 || type == DType::kF16 || type == DType::kBF16 ||
         quant::FindBlockTraits(type) != nullptr;
}

namespace {

void CheckSegment(const MatView& w, int64_t row, int64_t k0, int64_t len) {
  CHECK_MSG(IsSupportedWeightType(w.type), "unsupported weight type {}", Name(w.type));
  CHECK_MSG(0 <= row && row < w.rows, "row {} of {}", row, w.rows);
  CHECK_MSG(0 <= k0 && len >= 0 && k0 + len <= w.cols, "segment [{}, {}) of {} columns", k0,
            k0 + len, w.cols);
  const int64_t block = static_cast<int64_t>(Info(w.type).block_elems);
  CHECK_MSG(k0 % block == 0 && len % block == 0, "segment [{}, {}) is not whole {} blocks", k0,
            k0 + len, Name(w.type));
}

}  // namespace

void DecodeRowSegment(const MatView& w, int64_t row, int64_t k0, int64_t len, float* out) {
  CheckSegment(w, row, k0, len);
  const uint8_t* base = w.Row(row);
  switch (w.type) {
    case DType::kF32:
      std::memcpy(out, base + k0 * 4, static_cast<size_t>(len) * 4);
      return;
    case DType::kF16:
      HWY_DYNAMIC_DISPATCH(DecodeF16Impl)(reinterpret_cast<const uint16_t*>(base) + k0, len, out);
      return;
    case DType::kBF16:
      HWY_DYNAMIC_DISPATCH(DecodeBF16Impl)(reinterpret_cast<const uint16_t*>(base) + k0, len, out);
      return;
    default: {
      const quant::BlockTraits* traits = quant::FindBlockTraits(w.type);
      traits->dequantize_fast(base + k0 / traits->block_elems * traits->block_bytes,
                              len / traits->block_elems, out);
      return;
    }
  }
}

void DecodeRowsSegment(const MatView& w, int64_t row0, int64_t n_rows, int64_t k0, int64_t len,
                       float* out, int64_t out_stride) {
  if (n_rows <= 0) return;
  CheckSegment(w, row0, k0, len);
  CheckSegment(w, row0 + n_rows - 1, k0, len);
  // A cache tile reads a short segment of many long rows: the hardware prefetcher does not
  // follow that stride, so the segment a few rows ahead is prefetched by hand.
  constexpr int64_t kAhead = 8;
  const size_t segment_offset = BytesFor(w.type, static_cast<uint64_t>(k0));
  const size_t segment_bytes = BytesFor(w.type, static_cast<uint64_t>(len));
  const auto rows = [&](auto&& decode_row) {
    for (int64_t r = 0; r < n_rows; ++r) {
      if (r + kAhead < n_rows) {
        const uint8_t* ahead = w.Row(row0 + r + kAhead) + segment_offset;
        for (size_t line = 0; line < segment_bytes; line += 64) __builtin_prefetch(ahead + line);
        __builtin_prefetch(ahead + segment_bytes - 1);
      }
      decode_row(w.Row(row0 + r), out + r * out_stride);
    }
  };
  switch (w.type) {
    case DType::kF32:
      rows([&](const uint8_t* base, float* dst) {
        std::memcpy(dst, base + k0 * 4, static_cast<size_t>(len) * 4);
      });
      return;
    case DType::kF16:
      rows([&](const uint8_t* base, float* dst) {
        HWY_DYNAMIC_DISPATCH(DecodeF16Impl)(reinterpret_cast<const uint16_t*>(base) + k0, len, dst);
      });
      return;
    case DType::kBF16:
      rows([&](const uint8_t* base, float* dst) {
        HWY_DYNAMIC_DISPATCH(DecodeBF16Impl)
        (reinterpret_cast<const uint16_t*>(base) + k0, len, dst);
      });
      return;
    default: {
      const quant::BlockTraits* traits = quant::FindBlockTraits(w.type);
      const int64_t first_block = k0 / traits->block_elems, blocks = len / traits->block_elems;
      rows([&](const uint8_t* base, float* dst) {
        traits->dequantize_fast(base + first_block * traits->block_bytes, blocks, dst);
      });
      return;
    }
  }
}

void DecodeRowSegmentRef(const MatView& w, int64_t row, int64_t k0, int64_t len, float* out) {
  CheckSegment(w, row, k0, len);
  const uint8_t* base = w.Row(row);
  switch (w.type) {
    case DType::kF32:
      std::memcpy(out, base + k0 * 4, static_cast<size_t>(len) * 4);
      return;
    case DType::kF16:
    case DType::kBF16: {
      for (int64_t i = 0; i < len; ++i) {
        uint16_t h;
        std::memcpy(&h, base + (k0 + i) * 2, 2);
        out[i] = w.type == DType::kF16 ? F16ToF32(h) : BF16ToF32(h);
      }
      return;
    }
    default: {
      const quant::BlockTraits* traits = quant::FindBlockTraits(w.type);
      traits->dequantize_ref(base + k0 / traits->block_elems * traits->block_bytes,
                             len / traits->block_elems, out);
      return;
    }
  }
}

void DequantizeRow(const MatView& w, int64_t row, std::span<float> out) {
  CHECK_MSG(static_cast<int64_t>(out.size()) >= w.cols, "output holds {} of {} values", out.size(),
            w.cols);
  DecodeRowSegment(w, row, 0, w.cols, out.data());
}

void RoundToBF16Bits(const float* x, int64_t n, uint16_t* out) {
  HWY_DYNAMIC_DISPATCH(RoundToBF16BitsImpl)(x, n, out);
}

void RoundToBF16Floats(const float* x, int64_t n, float* out) {
  HWY_DYNAMIC_DISPATCH(RoundToBF16FloatsImpl)(x, n, out);
}

}  // namespace proctor::ops
#endif  // HWY_ONCE
