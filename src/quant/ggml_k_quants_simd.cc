// Highway versions of the K-quant kernels, Q2_K, Q3_K, Q4_K, Q5_K and Q6_K (see ggml_blocks.h),
// bit-identical to the scalar references in ggml_k_quants.cc when dequantizing; the dot products
// dequantize one block at a time (ggml_simd_helpers-inl.h).
// Highway: HWY_TARGET_INCLUDE, then foreach_target.h, then highway.h and the -inl.h headers.
// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "quant/ggml_k_quants_simd.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "quant/ggml_blocks.h"
#include "quant/ggml_simd_helpers-inl.h"
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace proctor::quant {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void DequantizeQ2_KImpl(const uint8_t* blocks, int64_t n_blocks, float* out) {
  const DF df;
  const size_t N = hn::Lanes(df);
  const auto three = hn::Set(DI32(), 3);
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* block = blocks + b * sizeof(BlockQ2_K);
    const uint8_t* scales = block;
    const uint8_t* qs = block + 16;
    const float d = F16At(block + 80), dmin = F16At(block + 82);
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
    const float d = F16At(block + 108);
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
    const float d = F16At(block), dmin = F16At(block + 2);
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
    const float d = F16At(block + 208);
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
          const int8_t sub_scale = sc[l / 16 + 2 * i];  // one scale per 16 weights
          const auto scale = hn::Set(df, d * static_cast<float>(sub_scale));
          hn::StoreU(hn::Mul(scale, ToFloat(code)), df, o + l + 32 * i);
        }
      }
    }
  }
}

PROCTOR_DEFINE_DOT_VIA_DEQUANTIZE_IMPL(Q2_K, kQK_K)
PROCTOR_DEFINE_DOT_VIA_DEQUANTIZE_IMPL(Q3_K, kQK_K)
PROCTOR_DEFINE_DOT_VIA_DEQUANTIZE_IMPL(Q4_K, kQK_K)
PROCTOR_DEFINE_DOT_VIA_DEQUANTIZE_IMPL(Q5_K, kQK_K)
PROCTOR_DEFINE_DOT_VIA_DEQUANTIZE_IMPL(Q6_K, kQK_K)

}  // namespace HWY_NAMESPACE
}  // namespace proctor::quant
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace proctor::quant {

PROCTOR_EXPORT_BLOCK_KERNELS(Q2_K)
PROCTOR_EXPORT_BLOCK_KERNELS(Q3_K)
PROCTOR_EXPORT_BLOCK_KERNELS(Q4_K)
PROCTOR_EXPORT_BLOCK_KERNELS(Q5_K)
PROCTOR_EXPORT_BLOCK_KERNELS(Q6_K)

}  // namespace proctor::quant
#endif  // HWY_ONCE
