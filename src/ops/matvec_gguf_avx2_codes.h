// The GGUF block codes as the AVX2 matrix-vector kernels read them (matvec_gguf_avx2.cc for f32
// activations, matvec_gguf_q8_avx2.cc for 8-bit ones): the 32 codes of a 32-wide block as int8
// in two xmm, and K-quant super-blocks decoded to int8 codes with per-16 scales and offsets.
// Internal to src/ops; every function is compiled for AVX2 + FMA + F16C and runs only where
// CpuFeatures::avx2_fma holds.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "ops/matvec_gguf_rows.h"
#include "quant/ggml_blocks.h"

#define PROCTOR_AVX2_TARGET __attribute__((target("avx2,fma,f16c")))

namespace proctor::ops::internal {

// Sum of the 8 lanes in a fixed pairwise order.
PROCTOR_AVX2_TARGET inline float SumLanes(__m256 v) {
  const __m128 b = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 c = _mm_add_ps(b, _mm_movehl_ps(b, b));
  return _mm_cvtss_f32(_mm_add_ss(c, _mm_movehdup_ps(c)));
}

PROCTOR_AVX2_TARGET inline __m128i Load16(const uint8_t* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

// Bytes with value `bit` where bit j of `bits` (j = 0..15) is set, else 0.
PROCTOR_AVX2_TARGET inline __m128i BitsToBytes(uint32_t bits, int8_t bit) {
  const __m128i spread =
      _mm_shuffle_epi8(_mm_cvtsi32_si128(static_cast<int>(bits)),
                       _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1));
  const __m128i select = _mm_setr_epi8(1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32, 64, -128);
  const __m128i set = _mm_cmpeq_epi8(_mm_and_si128(spread, select), select);
  return _mm_and_si128(set, _mm_set1_epi8(bit));
}

// ---- 32-wide block types -------------------------------------------------------------------

// One block's codes as two xmm of 16 int8 (values 0..15, 16..31); the types with a block minimum
// (kHasMin) keep it as f16 at byte kMinAt.
struct Q8_0Block {
  static constexpr int kBytes = 34;
  static constexpr bool kHasMin = false;  // no kMinAt
  static constexpr int kOffset = 0;
  PROCTOR_AVX2_TARGET static void Codes(const uint8_t* b, __m128i* lo, __m128i* hi) {
    *lo = Load16(b + 2);
    *hi = Load16(b + 18);
  }
};

// The low nibbles of 16 bytes (values 0..15 of a block) and their high nibbles (16..31).
PROCTOR_AVX2_TARGET inline void SplitNibbles(__m128i bytes, __m128i* lo, __m128i* hi) {
  const __m128i low4 = _mm_set1_epi8(0x0F);
  *lo = _mm_and_si128(bytes, low4);
  *hi = _mm_and_si128(_mm_srli_epi16(bytes, 4), low4);
}

// The codes minus kOffset (nothing for 0).
template <int kOffset>
PROCTOR_AVX2_TARGET inline void SubtractOffset(__m128i* lo, __m128i* hi) {
  if constexpr (kOffset != 0) {
    *lo = _mm_sub_epi8(*lo, _mm_set1_epi8(kOffset));
    *hi = _mm_sub_epi8(*hi, _mm_set1_epi8(kOffset));
  }
}

// Q4_0 (codes q - 8) / Q4_1 (codes q): value l has the low nibble of byte l, value 16 + l the
// high one. StoredCodes gives q itself (0..15); kOffset is what Codes subtracts from it.
template <bool kMin>
struct Q4Block {
  static constexpr int kBytes = kMin ? 20 : 18;
  static constexpr bool kHasMin = kMin;
  static constexpr int kMinAt = 2;
  static constexpr int kOffset = kMin ? 0 : 8;
  PROCTOR_AVX2_TARGET static void StoredCodes(const uint8_t* b, __m128i* lo, __m128i* hi) {
    SplitNibbles(Load16(b + (kMin ? 4 : 2)), lo, hi);
  }
  PROCTOR_AVX2_TARGET static void Codes(const uint8_t* b, __m128i* lo, __m128i* hi) {
    StoredCodes(b, lo, hi);
    SubtractOffset<kOffset>(lo, hi);
  }
};

// Q5_0 (codes q - 16) / Q5_1 (codes q): Q4's nibbles plus 16 where bit l of qh is set.
template <bool kMin>
struct Q5Block {
  static constexpr int kBytes = kMin ? 24 : 22;
  static constexpr bool kHasMin = kMin;
  static constexpr int kMinAt = 2;
  static constexpr int kOffset = kMin ? 0 : 16;
  PROCTOR_AVX2_TARGET static void StoredCodes(const uint8_t* b, __m128i* lo, __m128i* hi) {
    constexpr int kQh = kMin ? 4 : 2;
    uint32_t qh;
    std::memcpy(&qh, b + kQh, 4);
    SplitNibbles(Load16(b + kQh + 4), lo, hi);
    *lo = _mm_or_si128(*lo, BitsToBytes(qh, 16));
    *hi = _mm_or_si128(*hi, BitsToBytes(qh >> 16, 16));
  }
  PROCTOR_AVX2_TARGET static void Codes(const uint8_t* b, __m128i* lo, __m128i* hi) {
    StoredCodes(b, lo, hi);
    SubtractOffset<kOffset>(lo, hi);
  }
};

// The 8-bit-activation kernels' second term of a 32-wide block, m * f with f = MinTermFactor(sum
// of x^ over the block): m the block minimum and f the sum itself (kHasMin), or m = d_w and f
// = -kOffset * sum for Q4_0 / Q5_0 (exact: kOffset is a power of two); no term for Q8_0.
template <class Block>
inline constexpr bool kHasMinTerm = Block::kHasMin || Block::kOffset != 0;
template <class Block>
inline float MinTermFactor(float sum32) {
  return Block::kHasMin ? sum32 : static_cast<float>(-Block::kOffset) * sum32;
}

// ---- K-quants: super-blocks decoded to int8 codes + per-16 scales/offsets -------------------

struct alignas(32) Decoded {
  int8_t q[256];     // codes (offsets such as Q6_K's -32 applied)
  float scale[16];   // value = scale[g] * q - offset[g] for values 16g..16g+15
  float offset[16];  // zero for the types without a minimum
};

// Q2_K: value 128h + 32j + m has code (qs[32h + m] >> 2j) & 3; group g: scale d * (sc & 15),
// offset dmin * (sc >> 4).
struct Q2_KDecode {
  static constexpr int kBytes = 84;
  static constexpr bool kHasMin = true;
  PROCTOR_AVX2_TARGET static void Run(const uint8_t* b, const float* f16, Decoded* o) {
    const float d = HalfAt(f16, b + 80), dmin = HalfAt(f16, b + 82);
    for (int g = 0; g < 16; ++g) {
      o->scale[g] = d * static_cast<float>(b[g] & 15);
      o->offset[g] = dmin * static_cast<float>(b[g] >> 4);
    }
    for (int h = 0; h < 2; ++h) {
      const uint8_t* qs = b + 16 + 32 * h;
      for (int j = 0; j < 4; ++j) {
        int8_t* q = o->q + 128 * h + 32 * j;
        for (int m = 0; m < 32; ++m) q[m] = static_cast<int8_t>((qs[m] >> (2 * j)) & 3);
      }
    }
  }
};

// Q3_K: Q2_K's layout plus hmask[m] bit 4h + j; code = low2 - (bit set ? 0 : 4); group g:
// scale d * (6-bit scale - 32).
struct Q3_KDecode {
  static constexpr int kBytes = 110;
  static constexpr bool kHasMin = false;
  PROCTOR_AVX2_TARGET static void Run(const uint8_t* b, const float* f16, Decoded* o) {
    int8_t scales[16];
    quant::UnpackQ3_KScales(b + 96, scales);
    const float d = HalfAt(f16, b + 108);
    for (int g = 0; g < 16; ++g) o->scale[g] = d * static_cast<float>(scales[g]);
    const uint8_t* hmask = b;
    for (int h = 0; h < 2; ++h) {
      const uint8_t* qs = b + 32 + 32 * h;
      for (int j = 0; j < 4; ++j) {
        int8_t* q = o->q + 128 * h + 32 * j;
        const int bit = 4 * h + j;
        for (int m = 0; m < 32; ++m) {
          const int low = (qs[m] >> (2 * j)) & 3;
          q[m] = static_cast<int8_t>(low - (((hmask[m] >> bit) & 1) != 0 ? 0 : 4));
        }
      }
    }
  }
};

// Q5_K: value 64c + l (l < 32) has code (qs[32c + l] & 15) | (qh[l] bit 2c) << 4, value
// 64c + 32 + l (qs[32c + l] >> 4) | (qh[l] bit 2c + 1) << 4; sub-block j (groups 2j, 2j + 1):
// scale d * sc_j, offset dmin * m_j.
struct Q5_KDecode {
  static constexpr int kBytes = 176;
  static constexpr bool kHasMin = true;
  PROCTOR_AVX2_TARGET static void Run(const uint8_t* b, const float* f16, Decoded* o) {
    const float d = HalfAt(f16, b), dmin = HalfAt(f16, b + 2);
    __m128i sc, m;
    UnpackK4(b + 4, &sc, &m);
    alignas(16) uint8_t scales[16], mins[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(scales), sc);
    _mm_store_si128(reinterpret_cast<__m128i*>(mins), m);
    for (int j = 0; j < 8; ++j) {
      o->scale[2 * j] = o->scale[2 * j + 1] = d * static_cast<float>(scales[j]);
      o->offset[2 * j] = o->offset[2 * j + 1] = dmin * static_cast<float>(mins[j]);
    }
    const uint8_t* qh = b + 16;
    for (int c = 0; c < 4; ++c) {
      const uint8_t* qs = b + 48 + 32 * c;
      int8_t* q = o->q + 64 * c;
      for (int l = 0; l < 32; ++l) {
        q[l] = static_cast<int8_t>((qs[l] & 15) | ((qh[l] >> (2 * c)) & 1) << 4);
        q[32 + l] = static_cast<int8_t>((qs[l] >> 4) | ((qh[l] >> (2 * c + 1)) & 1) << 4);
      }
    }
  }
};

// Q6_K: value 128h + 32i + l has code (ql[64h + l + 32 (i & 1)] >> 4 (i >> 1)) & 15 |
// ((qh[32h + l] >> 2i) & 3) << 4, minus 32; group g: scale d * scales[g].
struct Q6_KDecode {
  static constexpr int kBytes = 210;
  static constexpr bool kHasMin = false;
  PROCTOR_AVX2_TARGET static void Run(const uint8_t* b, const float* f16, Decoded* o) {
    const float d = HalfAt(f16, b + 208);
    const auto* scales = reinterpret_cast<const int8_t*>(b + 192);
    for (int g = 0; g < 16; ++g) o->scale[g] = d * static_cast<float>(scales[g]);
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = b + 64 * h;
      const uint8_t* qh = b + 128 + 32 * h;
      for (int i = 0; i < 4; ++i) {
        int8_t* q = o->q + 128 * h + 32 * i;
        const uint8_t* low = ql + 32 * (i & 1);
        const int shift = 4 * (i >> 1);
        for (int l = 0; l < 32; ++l) {
          q[l] =
              static_cast<int8_t>((((low[l] >> shift) & 15) | ((qh[l] >> (2 * i)) & 3) << 4) - 32);
        }
      }
    }
  }
};

}  // namespace proctor::ops::internal
