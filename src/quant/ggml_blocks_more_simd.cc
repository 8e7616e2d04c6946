// Highway versions of the Q4_1 / Q5_0 / Q5_1 / K-quant dequantizers and dot products (see
// ggml_blocks.h). Codes are unpacked in 32-bit lanes and scaled with the same f32 operations, in
// the same order, as the scalar references, so the dequantized values are bit-identical to them.
// The dot products dequantize one block into a stack buffer and accumulate value * x in lanes.
#include <cstring>

#include "quant/ggml_blocks.h"
#include "util/half.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "quant/ggml_blocks_more_simd.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace proctor::quant {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using DI32 = hn::Rebind<int32_t, DF>;
using DU8 = hn::Rebind<uint8_t, DF>;

inline float HalfAt(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return F16ToF32(h);
}

// N consecutive bytes widened to int32 lanes.
HWY_INLINE hn::Vec<DI32> LoadBytes(const uint8_t* p) {
  return hn::PromoteTo(DI32(), hn::LoadU(DU8(), p));
}

HWY_INLINE hn::Vec<DF> ToFloat(hn::Vec<DI32> v) { return hn::ConvertTo(DF(), v); }

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
    const auto d = hn::Set(df, HalfAt(block)), m = hn::Set(df, HalfAt(block + 2));
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
    const auto d = hn::Set(df, HalfAt(block));
    const auto m = hn::Set(df, kHasMin ? HalfAt(block + 2) : 0.0f);
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

void DequantizeQ2_KImpl(const uint8_t* blocks, int64_t n_blocks, float* out) {
  const DF df;
  const size_t N = hn::Lanes(df);
  const auto three = hn::Set(DI32(), 3);
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* block = blocks + b * sizeof(BlockQ2_K);
    const uint8_t* scales = block;
    const uint8_t* qs = block + 16;
    const float d = HalfAt(block + 80), dmin = HalfAt(block + 82);
    float* o = out + b * kQK_K;
    for (int h = 0; h < 2; ++h) {
      for (int shift_index = 0; shift_index < 4; ++shift_index) {
        for (int p = 0; p < 2; ++p) {
          const uint8_t sc = scales[8 * h + 2 * shift_index + p];
          const auto dl = hn::Set(df, d * static_cast<float>(sc & 0x0F));
          const auto ml = hn::Set(df, dmin * static_cast<float>(sc >> 4));
          const uint8_t* q = qs + 32 * h + 16 * p;
          for (size_t l = 0; l < 16; l += N) {
            const auto code = hn::And(hn::ShiftRightSame(LoadBytes(q + l), 2 * shift_index), three);
            hn::StoreU(hn::Sub(hn::Mul(dl, ToFloat(code)), ml), df, o + l);
          }
          o += 16;
        }
      }
    }
  }
}

void DequantizeQ3_KImpl(const uint8_t* blocks, int64_t n_blocks, float* out) {
  const DF df;
  const DI32 di;
  const size_t N = hn::Lanes(df);
  const auto three = hn::Set(di, 3), one = hn::Set(di, 1), four = hn::Set(di, 4);
  int8_t scales[16];
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* block = blocks + b * sizeof(BlockQ3_K);
    const uint8_t* hmask = block;
    const uint8_t* qs = block + 32;
    UnpackQ3_KScales(block + 96, scales);
    const float d = HalfAt(block + 108);
    float* o = out + b * kQK_K;
    for (int h = 0; h < 2; ++h) {
      for (int shift_index = 0; shift_index < 4; ++shift_index) {
        const int high_bit = 4 * h + shift_index;
        for (int p = 0; p < 2; ++p) {
          const auto dl = hn::Set(df, d * static_cast<float>(scales[8 * h + 2 * shift_index + p]));
          const uint8_t* q = qs + 32 * h + 16 * p;
          for (size_t l = 0; l < 16; l += N) {
            const auto low = hn::And(hn::ShiftRightSame(LoadBytes(q + l), 2 * shift_index), three);
            const auto high =
                hn::And(hn::ShiftRightSame(LoadBytes(hmask + 16 * p + l), high_bit), one);
            // low - (high ? 0 : 4) == low + 4 * high - 4
            const auto code = hn::Sub(hn::Add(low, hn::ShiftLeft<2>(high)), four);
            hn::StoreU(hn::Mul(dl, ToFloat(code)), df, o + l);
          }
          o += 16;
        }
      }
    }
  }
}

// Q4_K (kFiveBits false) and Q5_K (true).
template <bool kFiveBits>
void DequantizeQ45_KImpl(const uint8_t* blocks, int64_t n_blocks, float* out) {
  const DF df;
  const DI32 di;
  const size_t N = hn::Lanes(df);
  const auto mask = hn::Set(di, 0x0F), one = hn::Set(di, 1);
  constexpr size_t kBytes = kFiveBits ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K);
  constexpr size_t kQsAt = kFiveBits ? 48 : 16;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* block = blocks + b * kBytes;
    const float d = HalfAt(block), dmin = HalfAt(block + 2);
    const uint8_t* packed_scales = block + 4;
    const uint8_t* qh = block + 16;
    float* o = out + b * kQK_K;
    for (int c = 0; c < 4; ++c) {
      const uint8_t* q = block + kQsAt + 32 * c;
      for (int half = 0; half < 2; ++half) {
        uint8_t sc, m;
        UnpackScaleMinK4(packed_scales, 2 * c + half, &sc, &m);
        const auto dl = hn::Set(df, d * static_cast<float>(sc));
        const auto ml = hn::Set(df, dmin * static_cast<float>(m));
        for (size_t l = 0; l < 32; l += N) {
          const auto bytes = LoadBytes(q + l);
          auto code = half == 0 ? hn::And(bytes, mask) : hn::ShiftRight<4>(bytes);
          if constexpr (kFiveBits) {
            const auto high = hn::And(hn::ShiftRightSame(LoadBytes(qh + l), 2 * c + half), one);
            code = hn::Add(code, hn::ShiftLeft<4>(high));
          }
          hn::StoreU(hn::Sub(hn::Mul(dl, ToFloat(code)), ml), df, o + l);
        }
        o += 32;
      }
    }
  }
}

void DequantizeQ4_KImpl(const uint8_t* blocks, int64_t n_blocks, float* out) {
  DequantizeQ45_KImpl<false>(blocks, n_blocks, out);
}
void DequantizeQ5_KImpl(const uint8_t* blocks, int64_t n_blocks, float* out) {
  DequantizeQ45_KImpl<true>(blocks, n_blocks, out);
}

void DequantizeQ6_KImpl(const uint8_t* blocks, int64_t n_blocks, float* out) {
  const DF df;
  const DI32 di;
  const size_t N = hn::Lanes(df);
  const auto mask = hn::Set(di, 0x0F), three = hn::Set(di, 3), bias = hn::Set(di, 32);
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* block = blocks + b * sizeof(BlockQ6_K);
    const float d = HalfAt(block + 208);
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = block + 64 * h;
      const uint8_t* qh = block + 128 + 32 * h;
      const int8_t* sc = reinterpret_cast<const int8_t*>(block + 192) + 8 * h;
      float* o = out + b * kQK_K + 128 * h;
      for (size_t l = 0; l < 32; l += N) {
        const auto high_bytes = LoadBytes(qh + l);
        for (int i = 0; i < 4; ++i) {
          const auto low =
              hn::And(hn::ShiftRightSame(LoadBytes(ql + l + 32 * (i & 1)), 4 * (i >> 1)), mask);
          const auto high = hn::And(hn::ShiftRightSame(high_bytes, 2 * i), three);
          const auto code = hn::Sub(hn::Or(low, hn::ShiftLeft<4>(high)), bias);
          const auto scale = hn::Set(df, d * static_cast<float>(sc[l / 16 + 2 * i]));
          hn::StoreU(hn::Mul(scale, ToFloat(code)), df, o + l + 32 * i);
        }
      }
    }
  }
}

// sum over blocks of value * x, dequantizing one block at a time.
template <void (*kDequantize)(const uint8_t*, int64_t, float*), int kElems, size_t kBytes>
float DotViaDequantize(const uint8_t* blocks, int64_t n_blocks, const float* x) {
  const DF df;
  const size_t N = hn::Lanes(df);
  HWY_ALIGN float values[kElems];
  auto acc = hn::Zero(df);
  for (int64_t b = 0; b < n_blocks; ++b) {
    kDequantize(blocks + b * kBytes, 1, values);
    const float* xb = x + b * kElems;
    for (size_t i = 0; i < kElems; i += N) {
      acc = hn::MulAdd(hn::Load(df, values + i), hn::LoadU(df, xb + i), acc);
    }
  }
  return hn::GetLane(hn::SumOfLanes(df, acc));
}

#define PROCTOR_DOT_IMPL(T, kElems)                                                              \
  float Dot##T##Impl(const uint8_t* blocks, int64_t n_blocks, const float* x) {                  \
    return DotViaDequantize<Dequantize##T##Impl, kElems, sizeof(Block##T)>(blocks, n_blocks, x); \
  }
PROCTOR_DOT_IMPL(Q4_1, kQK)
PROCTOR_DOT_IMPL(Q5_0, kQK)
PROCTOR_DOT_IMPL(Q5_1, kQK)
PROCTOR_DOT_IMPL(Q2_K, kQK_K)
PROCTOR_DOT_IMPL(Q3_K, kQK_K)
PROCTOR_DOT_IMPL(Q4_K, kQK_K)
PROCTOR_DOT_IMPL(Q5_K, kQK_K)
PROCTOR_DOT_IMPL(Q6_K, kQK_K)
#undef PROCTOR_DOT_IMPL

}  // namespace HWY_NAMESPACE
}  // namespace proctor::quant
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace proctor::quant {

#define PROCTOR_EXPORT_BLOCK_KERNELS(T)                                     \
  HWY_EXPORT(Dequantize##T##Impl);                                          \
  HWY_EXPORT(Dot##T##Impl);                                                 \
  void Dequantize##T(const uint8_t* blocks, int64_t n_blocks, float* out) { \
    HWY_DYNAMIC_DISPATCH(Dequantize##T##Impl)(blocks, n_blocks, out);       \
  }                                                                         \
  float Dot##T(const uint8_t* blocks, int64_t n_blocks, const float* x) {   \
    return HWY_DYNAMIC_DISPATCH(Dot##T##Impl)(blocks, n_blocks, x);         \
  }
PROCTOR_EXPORT_BLOCK_KERNELS(Q4_1)
PROCTOR_EXPORT_BLOCK_KERNELS(Q5_0)
PROCTOR_EXPORT_BLOCK_KERNELS(Q5_1)
PROCTOR_EXPORT_BLOCK_KERNELS(Q2_K)
PROCTOR_EXPORT_BLOCK_KERNELS(Q3_K)
PROCTOR_EXPORT_BLOCK_KERNELS(Q4_K)
PROCTOR_EXPORT_BLOCK_KERNELS(Q5_K)
PROCTOR_EXPORT_BLOCK_KERNELS(Q6_K)
#undef PROCTOR_EXPORT_BLOCK_KERNELS

}  // namespace proctor::quant
#endif  // HWY_ONCE
