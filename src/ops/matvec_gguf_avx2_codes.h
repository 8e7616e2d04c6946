// The GGUF block codes as the AVX2 matrix-vector kernels read them (matvec_gguf_avx2.cc for f32
// activations, matvec_gguf_q8_avx2.cc for 8-bit ones): the 32 codes of a 32-wide block as int8
// in two xmm, and K-quant super-blocks decoded to int8 codes with per-16 scales and offsets.
// Internal to src/ops; every function is compiled for AVX2 + FMA + F16C and runs only where
// CpuFeatures::avx2_fma holds.
#pragma once

#include <immintrin.h>

#include <bit>
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

// The pair of int16 (a, b) as one int32 lane for vpmaddwd.
inline int32_t Int16Pair(int a, int b) {
  return static_cast<int32_t>(static_cast<uint16_t>(a) |
                              static_cast<uint32_t>(static_cast<uint16_t>(b)) << 16);
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

// ---- Q4_K / Q5_K codes ------------------------------------------------------------------------

// Q4_K (144-byte blocks: d, dmin, 12 scale bytes, qs[128]) and Q5_K (kFifthBit; 176 bytes: qh[32]
// before qs): the unsigned codes of sub-block 2c in *lo (the low nibbles of qs[32c..32c+32), plus
// bit 2c of qh[l] as 16) and of sub-block 2c + 1 in *hi (the high nibbles, bit 2c + 1).
template <bool kFifthBit>
PROCTOR_AVX2_TARGET inline void Q45_KCodes(const uint8_t* block, int c, __m256i* lo, __m256i* hi) {
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const __m256i qs =
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + (kFifthBit ? 48 : 16) + 32 * c));
  *lo = _mm256_and_si256(qs, low4);
  *hi = _mm256_and_si256(_mm256_srli_epi16(qs, 4), low4);
  if constexpr (kFifthBit) {
    const __m256i one = _mm256_set1_epi8(1);
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 16));
    *lo = _mm256_or_si256(
        *lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * c), one), 4));
    *hi = _mm256_or_si256(
        *hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * c + 1), one), 4));
  }
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

// ---- K-quants of 16 groups of 16 values, as the 8-bit-activation kernels read them ---------
//
// Q2_K, Q3_K and Q6_K: a super-block's 8 slices of 32 values as unsigned codes (Slice), the 16
// groups' integer scales as int8 (Scales), and either each group's integer minimum (kHasMin:
// value = d scale_g code - dmin min_g) or one offset (value = d scale_g (code - kOffset)).
// d (and dmin) are f16 at bytes kD (kDmin). The slice shifts move bits within 16-bit lanes; each
// mask keeps only bits that stayed in their byte.

// The shift that multiplies by a Groups format's offset (a power of two; formats with minimums
// have none).
template <class Format>
inline constexpr int kOffsetShift = Format::kHasMin
                                        ? 0
                                        : std::countr_zero(static_cast<unsigned>(Format::kOffset));

// Q2_K (84 bytes: scales[16], qs[64], d, dmin): value 128h + 32i + l has code
// (qs[32h + l] >> 2i) & 3; group g: scale scales[g] & 15, minimum scales[g] >> 4.
struct Q2_KGroups {
  static constexpr int kBytes = 84, kBits = 2, kD = 80, kDmin = 82, kOffset = 0;
  static constexpr bool kHasMin = true;
  PROCTOR_AVX2_TARGET static __m256i Slice(const uint8_t* b, int j) {
    const __m256i qs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 16 + 32 * (j / 4)));
    return _mm256_and_si256(_mm256_srli_epi16(qs, 2 * (j % 4)), _mm256_set1_epi8(3));
  }
  PROCTOR_AVX2_TARGET static __m128i Scales(const uint8_t* b) {
    return _mm_and_si128(Load16(b), _mm_set1_epi8(15));
  }
  PROCTOR_AVX2_TARGET static __m128i Mins(const uint8_t* b) {
    return _mm_and_si128(_mm_srli_epi16(Load16(b), 4), _mm_set1_epi8(15));
  }
};

// Q3_K (110 bytes: hmask[32], qs[64], scales[12], d): value 128h + 32i + l has code
// ((qs[32h + l] >> 2i) & 3) | ((hmask[l] >> (4h + i)) & 1) << 2, minus 4 (ggml subtracts 4 where
// the hmask bit is clear); group g: the 6-bit scale minus 32 (quant::UnpackQ3_KScales).
struct Q3_KGroups {
  static constexpr int kBytes = 110, kBits = 3, kD = 108, kDmin = 0, kOffset = 4;
  static constexpr bool kHasMin = false;
  PROCTOR_AVX2_TARGET static __m256i Slice(const uint8_t* b, int j) {
    const int h = j / 4, i = j % 4, bit = 4 * h + i;
    const __m256i qs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 32 + 32 * h));
    const __m256i hm = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
    const __m256i low = _mm256_and_si256(_mm256_srli_epi16(qs, 2 * i), _mm256_set1_epi8(3));
    // hmask bit `bit` of each byte moved to bit 2 (shifts of at most 5 keep it in its byte).
    const __m256i high =
        _mm256_and_si256(bit >= 2 ? _mm256_srli_epi16(hm, bit - 2) : _mm256_slli_epi16(hm, 2 - bit),
                         _mm256_set1_epi8(4));
    return _mm256_or_si256(low, high);
  }
  // quant::UnpackQ3_KScales in registers: group g's low 4 bits are the low (g < 8) or high
  // nibble of byte g % 8, its high 2 bits bits 2 (g / 4) of byte 8 + g % 4.
  PROCTOR_AVX2_TARGET static __m128i Scales(const uint8_t* b) {
    int64_t nibbles;
    int32_t high_bytes;
    std::memcpy(&nibbles, b + 96, 8);
    std::memcpy(&high_bytes, b + 104, 4);
    const __m128i packed = _mm_cvtsi64_si128(nibbles), low4 = _mm_set1_epi8(15);
    const __m128i low = _mm_unpacklo_epi64(_mm_and_si128(packed, low4),
                                           _mm_and_si128(_mm_srli_epi16(packed, 4), low4));
    const __m128i high = _mm_and_si128(
        _mm_srlv_epi32(_mm_set1_epi32(high_bytes), _mm_setr_epi32(0, 2, 4, 6)), _mm_set1_epi8(3));
    return _mm_sub_epi8(_mm_or_si128(low, _mm_slli_epi16(high, 4)), _mm_set1_epi8(32));
  }
};

// Q6_K (210 bytes: ql[128], qh[64], scales int8[16], d): value 128h + 32i + l has code
// ((ql[64h + 32 (i & 1) + l] >> 4 (i >> 1)) & 15) | ((qh[32h + l] >> 2i) & 3) << 4, minus 32;
// group g: scales[g].
struct Q6_KGroups {
  static constexpr int kBytes = 210, kBits = 6, kD = 208, kDmin = 0, kOffset = 32;
  static constexpr bool kHasMin = false;
  PROCTOR_AVX2_TARGET static __m256i Slice(const uint8_t* b, int j) {
    const int h = j / 4, i = j % 4;
    const __m256i ql =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 64 * h + 32 * (i & 1)));
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 128 + 32 * h));
    const __m256i low = _mm256_and_si256(_mm256_srli_epi16(ql, 4 * (i >> 1)), _mm256_set1_epi8(15));
    // Bits 2i, 2i + 1 of qh moved to bits 4, 5: shift right by 2i - 4 (or left by 4 - 2i).
    const __m256i high = _mm256_and_si256(
        i < 2 ? _mm256_slli_epi16(qh, 4 - 2 * i) : _mm256_srli_epi16(qh, 2 * i - 4),
        _mm256_set1_epi8(0x30));
    return _mm256_or_si256(low, high);
  }
  PROCTOR_AVX2_TARGET static __m128i Scales(const uint8_t* b) { return Load16(b + 192); }
};

static_assert(Q3_KGroups::kOffset == 1 << kOffsetShift<Q3_KGroups> &&
              Q6_KGroups::kOffset == 1 << kOffsetShift<Q6_KGroups>);

}  // namespace proctor::ops::internal
