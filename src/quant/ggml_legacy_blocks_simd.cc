// Highway versions of the 32-value block kernels, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 and IQ4_NL (see
// ggml_blocks.h), bit-identical to the scalar references in ggml_legacy_blocks.cc when
// dequantizing. Q8_0 and Q4_0 dot products accumulate q * x per block in lanes and scale once per
// block; the others dequantize one block at a time (ggml_simd_helpers-inl.h).
// Highway: HWY_TARGET_INCLUDE, then foreach_target.h, then highway.h and the -inl.h headers.
// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "quant/ggml_legacy_blocks_simd.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "quant/ggml_blocks.h"
#include "quant/ggml_simd_helpers-inl.h"
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace proctor::quant {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void DequantizeQ8_0Impl(const uint8_t* blocks, int64_t n_blocks, float* out) {
  const hn::ScalableTag<float> df;
  const hn::Rebind<int32_t, decltype(df)> di32;
  const hn::Rebind<int8_t, decltype(df)> di8;
  const size_t N = hn::Lanes(df);
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* block = blocks + b * sizeof(BlockQ8_0);
    const int8_t* q = reinterpret_cast<const int8_t*>(block + 2);
    const auto d = hn::Set(df, F16At(block));
    for (size_t i = 0; i < kQ8_0BlockElems; i += N) {
      const auto v = hn::ConvertTo(df, hn::PromoteTo(di32, hn::LoadU(di8, q + i)));
      hn::StoreU(hn::Mul(d, v), df, out + b * kQ8_0BlockElems + i);
    }
  }
}

void DequantizeQ4_0Impl(const uint8_t* blocks, int64_t n_blocks, float* out) {
  const hn::ScalableTag<float> df;
  const hn::Rebind<int32_t, decltype(df)> di32;
  const hn::Rebind<uint8_t, decltype(df)> du8;
  const size_t N = hn::Lanes(df);
  constexpr size_t kHalf = kQ4_0BlockElems / 2;
  const auto mask = hn::Set(di32, 0x0F);
  const auto eight = hn::Set(di32, 8);
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* block = blocks + b * sizeof(BlockQ4_0);
    const auto d = hn::Set(df, F16At(block));
    float* o = out + b * kQ4_0BlockElems;
    for (size_t i = 0; i < kHalf; i += N) {
      const auto bytes = hn::PromoteTo(di32, hn::LoadU(du8, block + 2 + i));
      const auto lo = hn::Sub(hn::And(bytes, mask), eight);
      const auto hi = hn::Sub(hn::ShiftRight<4>(bytes), eight);
      hn::StoreU(hn::Mul(hn::ConvertTo(df, lo), d), df, o + i);
      hn::StoreU(hn::Mul(hn::ConvertTo(df, hi), d), df, o + kHalf + i);
    }
  }
}

float DotQ8_0Impl(const uint8_t* blocks, int64_t n_blocks, const float* x) {
  const hn::ScalableTag<float> df;
  const hn::Rebind<int32_t, decltype(df)> di32;
  const hn::Rebind<int8_t, decltype(df)> di8;
  const size_t N = hn::Lanes(df);
  auto acc = hn::Zero(df);
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* block = blocks + b * sizeof(BlockQ8_0);
    const int8_t* q = reinterpret_cast<const int8_t*>(block + 2);
    const float* xb = x + b * kQ8_0BlockElems;
    auto block_sum = hn::Zero(df);
    for (size_t i = 0; i < kQ8_0BlockElems; i += N) {
      const auto v = hn::ConvertTo(df, hn::PromoteTo(di32, hn::LoadU(di8, q + i)));
      block_sum = hn::MulAdd(v, hn::LoadU(df, xb + i), block_sum);
    }
    acc = hn::MulAdd(hn::Set(df, F16At(block)), block_sum, acc);
  }
  return hn::GetLane(hn::SumOfLanes(df, acc));
}

float DotQ4_0Impl(const uint8_t* blocks, int64_t n_blocks, const float* x) {
  const hn::ScalableTag<float> df;
  const hn::Rebind<int32_t, decltype(df)> di32;
  const hn::Rebind<uint8_t, decltype(df)> du8;
  const size_t N = hn::Lanes(df);
  constexpr size_t kHalf = kQ4_0BlockElems / 2;
  const auto mask = hn::Set(di32, 0x0F);
  const auto eight = hn::Set(di32, 8);
  auto acc = hn::Zero(df);
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* block = blocks + b * sizeof(BlockQ4_0);
    const float* xb = x + b * kQ4_0BlockElems;
    auto block_sum = hn::Zero(df);
    for (size_t i = 0; i < kHalf; i += N) {
      const auto bytes = hn::PromoteTo(di32, hn::LoadU(du8, block + 2 + i));
      const auto lo = hn::ConvertTo(df, hn::Sub(hn::And(bytes, mask), eight));
      const auto hi = hn::ConvertTo(df, hn::Sub(hn::ShiftRight<4>(bytes), eight));
      block_sum = hn::MulAdd(lo, hn::LoadU(df, xb + i), block_sum);
      block_sum = hn::MulAdd(hi, hn::LoadU(df, xb + kHalf + i), block_sum);
    }
    acc = hn::MulAdd(hn::Set(df, F16At(block)), block_sum, acc);
  }
  return hn::GetLane(hn::SumOfLanes(df, acc));
}

// Fifth bits of values [j0, j0 + N) of a Q5 block, already shifted to bit 4.
HWY_INLINE hn::Vec<DI32> FifthBits(uint32_t qh, int j0) {
  const hn::Rebind<uint32_t, DF> du;
  const auto shifts = hn::BitCast(du, hn::Iota(DI32(), j0));
  const auto bits = hn::And(hn::Shr(hn::Set(du, qh), shifts), hn::Set(du, 1u));
  return hn::BitCast(DI32(), hn::ShiftLeft<4>(bits));
}

void DequantizeQ4_1Impl(const uint8_t* blocks, int64_t n_blocks, float* out) {
  const DF df;
  const size_t N = hn::Lanes(df);
  const auto mask = hn::Set(DI32(), 0x0F);
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* block = blocks + b * sizeof(BlockQ4_1);
    const auto d = hn::Set(df, F16At(block)), m = hn::Set(df, F16At(block + 2));
    float* o = out + b * kQK;
    for (size_t i = 0; i < kQK / 2; i += N) {
      const auto bytes = LoadBytes(block + 4 + i);
      hn::StoreU(hn::Add(hn::Mul(ToFloat(hn::And(bytes, mask)), d), m), df, o + i);
      hn::StoreU(hn::Add(hn::Mul(ToFloat(hn::ShiftRight<4>(bytes)), d), m), df, o + kQK / 2 + i);
    }
  }
}

// Q5_0 (kHasMin false: (q - 16) * d) and Q5_1 (kHasMin true: q * d + m).
template <bool kHasMin>
void DequantizeQ5Impl(const uint8_t* blocks, int64_t n_blocks, float* out) {
  const DF df;
  const size_t N = hn::Lanes(df);
  const auto mask = hn::Set(DI32(), 0x0F);
  const auto sixteen = hn::Set(DI32(), 16);
  constexpr size_t kBytes = kHasMin ? sizeof(BlockQ5_1) : sizeof(BlockQ5_0);
  constexpr size_t kQhAt = kHasMin ? 4 : 2;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* block = blocks + b * kBytes;
    const auto d = hn::Set(df, F16At(block));
    const auto m = hn::Set(df, kHasMin ? F16At(block + 2) : 0.0f);
    uint32_t qh;
    std::memcpy(&qh, block + kQhAt, 4);
    const uint8_t* qs = block + kQhAt + 4;
    float* o = out + b * kQK;
    for (size_t i = 0; i < kQK / 2; i += N) {
      const auto bytes = LoadBytes(qs + i);
      auto lo = hn::Or(hn::And(bytes, mask), FifthBits(qh, static_cast<int>(i)));
      auto hi = hn::Or(hn::ShiftRight<4>(bytes), FifthBits(qh, static_cast<int>(i + kQK / 2)));
      if constexpr (kHasMin) {
        hn::StoreU(hn::Add(hn::Mul(ToFloat(lo), d), m), df, o + i);
        hn::StoreU(hn::Add(hn::Mul(ToFloat(hi), d), m), df, o + kQK / 2 + i);
      } else {
        hn::StoreU(hn::Mul(ToFloat(hn::Sub(lo, sixteen)), d), df, o + i);
        hn::StoreU(hn::Mul(ToFloat(hn::Sub(hi, sixteen)), d), df, o + kQK / 2 + i);
      }
    }
  }
}

void DequantizeQ5_0Impl(const uint8_t* blocks, int64_t n_blocks, float* out) {
  DequantizeQ5Impl<false>(blocks, n_blocks, out);
}
void DequantizeQ5_1Impl(const uint8_t* blocks, int64_t n_blocks, float* out) {
  DequantizeQ5Impl<true>(blocks, n_blocks, out);
}

// IQ4_NL: each nibble indexes the 16 levels (gathered as f32), times d.
void DequantizeIQ4_NLImpl(const uint8_t* blocks, int64_t n_blocks, float* out) {
  const DF df;
  const size_t N = hn::Lanes(df);
  const auto mask = hn::Set(DI32(), 0x0F);
  static constexpr float kLevels[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                        1,    13,   25,  38,  53,  69,  89,  113};
  static_assert(kLevels[0] == kIQ4_NLValues[0] && kLevels[15] == kIQ4_NLValues[15]);
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* block = blocks + b * sizeof(BlockIQ4_NL);
    const auto d = hn::Set(df, F16At(block));
    float* o = out + b * kQK;
    for (size_t i = 0; i < kQK / 2; i += N) {
      const auto bytes = LoadBytes(block + 2 + i);
      hn::StoreU(hn::Mul(d, hn::GatherIndex(df, kLevels, hn::And(bytes, mask))), df, o + i);
      hn::StoreU(hn::Mul(d, hn::GatherIndex(df, kLevels, hn::ShiftRight<4>(bytes))), df,
                 o + kQK / 2 + i);
    }
  }
}

PROCTOR_DEFINE_DOT_VIA_DEQUANTIZE_IMPL(Q4_1, kQK)
PROCTOR_DEFINE_DOT_VIA_DEQUANTIZE_IMPL(Q5_0, kQK)
PROCTOR_DEFINE_DOT_VIA_DEQUANTIZE_IMPL(Q5_1, kQK)
PROCTOR_DEFINE_DOT_VIA_DEQUANTIZE_IMPL(IQ4_NL, kQK)

}  // namespace HWY_NAMESPACE
}  // namespace proctor::quant
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace proctor::quant {

PROCTOR_EXPORT_BLOCK_KERNELS(Q8_0)
PROCTOR_EXPORT_BLOCK_KERNELS(Q4_0)
PROCTOR_EXPORT_BLOCK_KERNELS(Q4_1)
PROCTOR_EXPORT_BLOCK_KERNELS(Q5_0)
PROCTOR_EXPORT_BLOCK_KERNELS(Q5_1)
PROCTOR_EXPORT_BLOCK_KERNELS(IQ4_NL)

}  // namespace proctor::quant
#endif  // HWY_ONCE
