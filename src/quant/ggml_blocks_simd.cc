// Highway versions of the Q8_0 / Q4_0 dequantizers and dot products (see ggml_blocks.h).
#include <cstring>

#include "quant/ggml_blocks.h"
#include "util/half.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "quant/ggml_blocks_simd.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace proctor::quant {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

inline float BlockScale(const uint8_t* block) {
  uint16_t d;
  std::memcpy(&d, block, sizeof(d));
  return F16ToF32(d);
}

void DequantizeQ8_0Impl(const uint8_t* blocks, int64_t n_blocks, float* out) {
  const hn::ScalableTag<float> df;
  const hn::Rebind<int32_t, decltype(df)> di32;
  const hn::Rebind<int8_t, decltype(df)> di8;
  const size_t N = hn::Lanes(df);
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* block = blocks + b * sizeof(BlockQ8_0);
    const int8_t* q = reinterpret_cast<const int8_t*>(block + 2);
    const auto d = hn::Set(df, BlockScale(block));
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
    const auto d = hn::Set(df, BlockScale(block));
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
    acc = hn::MulAdd(hn::Set(df, BlockScale(block)), block_sum, acc);
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
    acc = hn::MulAdd(hn::Set(df, BlockScale(block)), block_sum, acc);
  }
  return hn::GetLane(hn::SumOfLanes(df, acc));
}

}  // namespace HWY_NAMESPACE
}  // namespace proctor::quant
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace proctor::quant {

HWY_EXPORT(DequantizeQ8_0Impl);
HWY_EXPORT(DequantizeQ4_0Impl);
HWY_EXPORT(DotQ8_0Impl);
HWY_EXPORT(DotQ4_0Impl);

void DequantizeQ8_0(const uint8_t* blocks, int64_t n_blocks, float* out) {
  HWY_DYNAMIC_DISPATCH(DequantizeQ8_0Impl)(blocks, n_blocks, out);
}
void DequantizeQ4_0(const uint8_t* blocks, int64_t n_blocks, float* out) {
  HWY_DYNAMIC_DISPATCH(DequantizeQ4_0Impl)(blocks, n_blocks, out);
}
float DotQ8_0(const uint8_t* blocks, int64_t n_blocks, const float* x) {
  return HWY_DYNAMIC_DISPATCH(DotQ8_0Impl)(blocks, n_blocks, x);
}
float DotQ4_0(const uint8_t* blocks, int64_t n_blocks, const float* x) {
  return HWY_DYNAMIC_DISPATCH(DotQ4_0Impl)(blocks, n_blocks, x);
}

}  // namespace proctor::quant
#endif  // HWY_ONCE
