// Fused AVX-512 matrix-vector kernels for the GGUF block types (decode, T == 1): every weight
// row is streamed once and decoded in registers, four rows at a time sharing the loads of x.
//
//  - 32-wide types (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1): codes become f32 lanes in registers (nibbles
//    through a 16- or 32-entry vpermps table, int8 by widening); per block
//    acc += d * (sum of code * x); a block minimum m adds m * sum(x of the block).
//  - K-quants (Q2_K .. Q6_K): each 256-value super-block is first decoded with byte-wide SIMD into
//    int8 codes on the stack plus one f32 scale (and, with a minimum, one f32 offset) per group of
//    16 values; the shared dot loop widens the codes and accumulates
//    scale_g * sum(code * x) - offset_g * sum(x of the group).
// Sums of x per 16 values are computed once per call. Every output is a fixed chain over its row,
// so results do not depend on thread partitions. Agreement with the references is f32 rounding
// (the scales are applied to partial sums rather than to each weight).
#include <immintrin.h>

// GCC 12's AVX-512 intrinsics start some results from _mm*_undefined_*() (self-initialised
// variables), which -Wuninitialized reports once they are inlined into these kernels.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <cstring>

#include "ops/matmul_kernels.h"
#include "ops/matvec_gguf_rows.h"
#include "quant/ggml_blocks.h"
#include "util/error.h"

#define PROCTOR_GGUF_TARGET \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vbmi,fma,f16c")))

namespace proctor::ops::internal {

bool FusedGgufMatVecCovers(DType type) {
  switch (type) {
    case DType::kQ8_0:
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ5_0:
    case DType::kQ5_1:
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
      return true;
    default:
      return false;
  }
}

namespace {

using Inputs = GgufRowInputs;

// Sum of the 16 lanes in a fixed pairwise order.
PROCTOR_GGUF_TARGET inline float SumLanes(__m512 v) {
  const __m256 a = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
  const __m128 b = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  const __m128 c = _mm_add_ps(b, _mm_movehl_ps(b, b));
  return _mm_cvtss_f32(_mm_add_ss(c, _mm_movehdup_ps(c)));
}

PROCTOR_GGUF_TARGET inline __m512i LoadBytesAsI32(const uint8_t* p) {
  return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

PROCTOR_GGUF_TARGET inline __m512 Iota(float first) {
  return _mm512_add_ps(_mm512_set1_ps(first),
                       _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
}

// ---- 32-wide block types -------------------------------------------------------------------

// One block's sum of code * x as lanes, for each 32-wide type; the types with a block minimum
// (kHasMin) keep it as f16 at byte kMinAt.
struct Q8_0Block {
  static constexpr int kBytes = 34;
  PROCTOR_GGUF_TARGET static __m512 Dot(const uint8_t* b, __m512 x0, __m512 x1, __m512, __m512) {
    const __m512 q0 = _mm512_cvtepi32_ps(
        _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2))));
    const __m512 q1 = _mm512_cvtepi32_ps(
        _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 18))));
    return _mm512_fmadd_ps(q1, x1, _mm512_mul_ps(q0, x0));
  }
  static constexpr bool kHasMin = false;  // no kMinAt
};

// Q4_0 / Q4_1: nibbles through a table of code values (Q4_0: q - 8, Q4_1: q).
template <bool kMin>
struct Q4Block {
  static constexpr int kBytes = kMin ? 20 : 18;
  static constexpr bool kHasMin = kMin;
  static constexpr int kMinAt = 2;
  PROCTOR_GGUF_TARGET static __m512 Dot(const uint8_t* b, __m512 x0, __m512 x1, __m512 table,
                                        __m512) {
    const __m512i bytes = LoadBytesAsI32(b + (kMin ? 4 : 2));
    const __m512 lo = _mm512_permutexvar_ps(bytes, table);  // vpermps reads index bits 0..3
    const __m512 hi = _mm512_permutexvar_ps(_mm512_srli_epi32(bytes, 4), table);
    return _mm512_fmadd_ps(hi, x1, _mm512_mul_ps(lo, x0));
  }
};

// Q5_0 / Q5_1: 5-bit codes through a 32-entry table (Q5_0: q - 16, Q5_1: q).
template <bool kMin>
struct Q5Block {
  static constexpr int kBytes = kMin ? 24 : 22;
  static constexpr bool kHasMin = kMin;
  static constexpr int kMinAt = 2;
  PROCTOR_GGUF_TARGET static __m512 Dot(const uint8_t* b, __m512 x0, __m512 x1, __m512 table_lo,
                                        __m512 table_hi) {
    constexpr int kQh = kMin ? 4 : 2;
    uint32_t qh;
    std::memcpy(&qh, b + kQh, 4);
    const __m512i bytes = LoadBytesAsI32(b + kQh + 4);
    const __m512i sixteen = _mm512_set1_epi32(16);
    const __m512i nib_lo = _mm512_and_si512(bytes, _mm512_set1_epi32(15));
    const __m512i nib_hi = _mm512_srli_epi32(bytes, 4);
    const __m512i idx_lo =
        _mm512_mask_or_epi32(nib_lo, static_cast<__mmask16>(qh), nib_lo, sixteen);
    const __m512i idx_hi =
        _mm512_mask_or_epi32(nib_hi, static_cast<__mmask16>(qh >> 16), nib_hi, sixteen);
    const __m512 lo = _mm512_permutex2var_ps(table_lo, idx_lo, table_hi);
    const __m512 hi = _mm512_permutex2var_ps(table_lo, idx_hi, table_hi);
    return _mm512_fmadd_ps(hi, x1, _mm512_mul_ps(lo, x0));
  }
};

template <class Block, int R>
PROCTOR_GGUF_TARGET void Rows32(const Inputs& in, const uint8_t* const* rows, __m512 table_lo,
                                __m512 table_hi, float* out) {
  __m512 acc[R];
  float min_sum[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps(), min_sum[r] = 0.0f;
  for (int64_t b = 0; b < in.n_blocks; ++b) {
    const __m512 x0 = _mm512_loadu_ps(in.x + 32 * b);
    const __m512 x1 = _mm512_loadu_ps(in.x + 32 * b + 16);
    const float xs = Block::kHasMin ? in.xsum32[b] : 0.0f;
    in.prefetch.Advance(b + 1);
    for (int r = 0; r < R; ++r) {
      const uint8_t* block = rows[r] + b * Block::kBytes;
      const __m512 dot = Block::Dot(block, x0, x1, table_lo, table_hi);
      acc[r] = _mm512_fmadd_ps(dot, _mm512_set1_ps(HalfAt(in.f16, block)), acc[r]);
      if constexpr (Block::kHasMin) min_sum[r] += HalfAt(in.f16, block + Block::kMinAt) * xs;
    }
  }
  for (int r = 0; r < R; ++r) out[r] = SumLanes(acc[r]) + min_sum[r];
}

// ---- K-quants: super-blocks decoded to int8 codes + per-16 scales/offsets -------------------

struct alignas(64) Decoded {
  int8_t q[256];     // codes (offsets such as Q6_K's -32 applied)
  float scale[16];   // value = scale[g] * q - offset[g] for values 16g..16g+15
  float offset[16];  // zero for the types without a minimum
};

PROCTOR_GGUF_TARGET inline __m512i Bcast256(const uint8_t* p) {
  return _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// Words of a zmm shifted right by `lo` in the low 256 bits and `hi` in the high 256 bits.
PROCTOR_GGUF_TARGET inline __m512i ShiftHalves(__m512i v, int lo, int hi) {
  const __m512i counts = _mm512_inserti64x4(_mm512_set1_epi16(static_cast<int16_t>(lo)),
                                            _mm256_set1_epi16(static_cast<int16_t>(hi)), 1);
  return _mm512_srlv_epi16(v, counts);
}

PROCTOR_GGUF_TARGET inline void StoreCodes(int8_t* dst, __m512i v) {
  _mm512_store_si512(reinterpret_cast<__m512i*>(dst), v);
}

// 16 per-group scales from 16 int32 lanes times a float.
PROCTOR_GGUF_TARGET inline void StoreScaled(float* dst, __m512i ints, float factor) {
  _mm512_store_ps(dst, _mm512_mul_ps(_mm512_cvtepi32_ps(ints), _mm512_set1_ps(factor)));
}

// Q4_K / Q5_K: 8 (scale, min) pairs per super-block, each covering 32 values (2 groups).
PROCTOR_GGUF_TARGET inline void ScalesK4(const uint8_t* packed, float d, float dmin, Decoded* o) {
  __m128i sc, m;
  UnpackK4(packed, &sc, &m);
  const __m512i pairs = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
  StoreScaled(o->scale, _mm512_permutexvar_epi32(pairs, _mm512_cvtepu8_epi32(sc)), d);
  StoreScaled(o->offset, _mm512_permutexvar_epi32(pairs, _mm512_cvtepu8_epi32(m)), dmin);
}

struct Q5_KDecode {
  static constexpr int kBytes = 176;
  static constexpr bool kHasMin = true;
  PROCTOR_GGUF_TARGET static void Run(const uint8_t* b, const float* f16, Decoded* o) {
    ScalesK4(b + 4, HalfAt(f16, b), HalfAt(f16, b + 2), o);
    const __m512i low4 = _mm512_set1_epi8(0x0F), bit0 = _mm512_set1_epi8(0x01);
    const __m512i qh = Bcast256(b + 16);    // fifth bits
    for (int half = 0; half < 2; ++half) {  // chunks c = 2*half, 2*half + 1
      const __m512i qs = _mm512_loadu_si512(b + 48 + 64 * half);
      const int c0 = 2 * half;
      // chunk c: lo nibbles use qh bit 2c, hi nibbles bit 2c + 1 (isolated, then moved to bit 4).
      const __m512i h_lo =
          _mm512_slli_epi16(_mm512_and_si512(ShiftHalves(qh, 2 * c0, 2 * c0 + 2), bit0), 4);
      const __m512i h_hi =
          _mm512_slli_epi16(_mm512_and_si512(ShiftHalves(qh, 2 * c0 + 1, 2 * c0 + 3), bit0), 4);
      const __m512i lo = _mm512_or_si512(_mm512_and_si512(qs, low4), h_lo);
      const __m512i hi = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(qs, 4), low4), h_hi);
      const __m512i first = _mm512_inserti64x4(lo, _mm512_castsi512_si256(hi), 1);
      const __m512i second = _mm512_inserti64x4(hi, _mm512_extracti64x4_epi64(lo, 1), 0);
      StoreCodes(o->q + 128 * half, first);
      StoreCodes(o->q + 128 * half + 64, second);
    }
  }
};

struct Q6_KDecode {
  static constexpr int kBytes = 210;
  static constexpr bool kHasMin = false;
  PROCTOR_GGUF_TARGET static void Run(const uint8_t* b, const float* f16, Decoded* o) {
    StoreScaled(o->scale,
                _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 192))),
                HalfAt(f16, b + 208));
    const __m512i low4 = _mm512_set1_epi8(0x0F), low2 = _mm512_set1_epi8(0x03);
    const __m512i bias = _mm512_set1_epi8(32);
    for (int h = 0; h < 2; ++h) {
      const __m512i ql = _mm512_loadu_si512(b + 64 * h);  // [ql[0..32) | ql[32..64)]
      const __m512i qh = Bcast256(b + 128 + 32 * h);
      // values 128h + 32i + l: i = 0, 1 from the low nibbles, i = 2, 3 from the high nibbles;
      // the two high bits are qh[l] bits 2i, 2i + 1 (moved to bits 4, 5).
      const __m512i h01 = _mm512_slli_epi16(_mm512_and_si512(ShiftHalves(qh, 0, 2), low2), 4);
      const __m512i h23 = _mm512_slli_epi16(_mm512_and_si512(ShiftHalves(qh, 4, 6), low2), 4);
      const __m512i c01 = _mm512_or_si512(_mm512_and_si512(ql, low4), h01);
      const __m512i c23 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), low4), h23);
      StoreCodes(o->q + 128 * h, _mm512_sub_epi8(c01, bias));
      StoreCodes(o->q + 128 * h + 64, _mm512_sub_epi8(c23, bias));
    }
  }
};

struct Q2_KDecode {
  static constexpr int kBytes = 84;
  static constexpr bool kHasMin = true;
  PROCTOR_GGUF_TARGET static void Run(const uint8_t* b, const float* f16, Decoded* o) {
    const __m512i sc = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b)));
    StoreScaled(o->scale, _mm512_and_si512(sc, _mm512_set1_epi32(15)), HalfAt(f16, b + 80));
    StoreScaled(o->offset, _mm512_srli_epi32(sc, 4), HalfAt(f16, b + 82));
    const __m512i low2 = _mm512_set1_epi8(3);
    for (int h = 0; h < 2; ++h) {  // values 128h + 32j + l: (qs[32h + l] >> 2j) & 3
      const __m512i q = Bcast256(b + 16 + 32 * h);
      StoreCodes(o->q + 128 * h, _mm512_and_si512(ShiftHalves(q, 0, 2), low2));
      StoreCodes(o->q + 128 * h + 64, _mm512_and_si512(ShiftHalves(q, 4, 6), low2));
    }
  }
};

struct Q3_KDecode {
  static constexpr int kBytes = 110;
  static constexpr bool kHasMin = false;
  PROCTOR_GGUF_TARGET static void Run(const uint8_t* b, const float* f16, Decoded* o) {
    // 16 six-bit scales: low nibbles from bytes 0..7 (s < 8: low nibble of byte s, else high
    // nibble of byte s - 8), two high bits from bytes 8..11 (bits 2(s/4) of byte 8 + s%4);
    // minus 32.
    uint32_t w[3];
    std::memcpy(w, b + 96, 12);
    const uint32_t m4 = 0x0F0F0F0Fu, m2 = 0x03030303u;
    const __m128i sc =
        _mm_setr_epi32(static_cast<int>((w[0] & m4) | ((w[2] & m2) << 4)),
                       static_cast<int>((w[1] & m4) | (((w[2] >> 2) & m2) << 4)),
                       static_cast<int>(((w[0] >> 4) & m4) | (((w[2] >> 4) & m2) << 4)),
                       static_cast<int>(((w[1] >> 4) & m4) | (((w[2] >> 6) & m2) << 4)));
    StoreScaled(o->scale, _mm512_sub_epi32(_mm512_cvtepu8_epi32(sc), _mm512_set1_epi32(32)),
                HalfAt(f16, b + 108));
    const __m512i low2 = _mm512_set1_epi8(3), bit0 = _mm512_set1_epi8(1);
    const __m512i four = _mm512_set1_epi8(4);
    const __m512i hm = Bcast256(b);  // high bits
    for (int h = 0; h < 2; ++h) {
      // values 128h + 32j + l: low2 = (qs[32h + l] >> 2j) & 3, high = hmask[l] bit 4h + j;
      // code = low2 + 4 * high - 4.
      const __m512i q = Bcast256(b + 32 + 32 * h);
      for (int pair = 0; pair < 2; ++pair) {  // j = 2 * pair, 2 * pair + 1
        const int j = 2 * pair;
        const __m512i low = _mm512_and_si512(ShiftHalves(q, 2 * j, 2 * j + 2), low2);
        const __m512i high =
            _mm512_slli_epi16(_mm512_and_si512(ShiftHalves(hm, 4 * h + j, 4 * h + j + 1), bit0), 2);
        StoreCodes(o->q + 128 * h + 64 * pair, _mm512_sub_epi8(_mm512_or_si512(low, high), four));
      }
    }
  }
};

template <class Decode, int R>
PROCTOR_GGUF_TARGET void RowsK(const Inputs& in, const uint8_t* const* rows, float* out) {
  Decoded dec[R];
  __m512 acc[R], min_acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps(), min_acc[r] = _mm512_setzero_ps();
  for (int64_t sb = 0; sb < in.n_blocks; ++sb) {
    in.prefetch.Advance(sb + 1);
    for (int r = 0; r < R; ++r) Decode::Run(rows[r] + sb * Decode::kBytes, in.f16, &dec[r]);
    const float* x = in.x + 256 * sb;
    for (int g = 0; g < 16; ++g) {
      const __m512 xv = _mm512_loadu_ps(x + 16 * g);
      for (int r = 0; r < R; ++r) {
        const __m512 q = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
            _mm_load_si128(reinterpret_cast<const __m128i*>(dec[r].q + 16 * g))));
        acc[r] = _mm512_fmadd_ps(_mm512_mul_ps(q, xv), _mm512_set1_ps(dec[r].scale[g]), acc[r]);
      }
    }
    if constexpr (Decode::kHasMin) {
      const __m512 xs = _mm512_loadu_ps(in.xsum + 16 * sb);
      for (int r = 0; r < R; ++r) {
        min_acc[r] = _mm512_fmadd_ps(_mm512_load_ps(dec[r].offset), xs, min_acc[r]);
      }
    }
  }
  for (int r = 0; r < R; ++r) out[r] = SumLanes(acc[r]) - SumLanes(min_acc[r]);
}

// Q4_K without staging codes on the stack (the most used K-quant): per 64-value chunk, nibbles
// widen to lanes directly; acc += scale_j * sum(code * x) per 32-value sub-block j, and
// min_acc += dmin * m_j * sum(x of sub-block j) (8 lanes).
template <int R>
PROCTOR_GGUF_TARGET void RowsQ4_K(const Inputs& in, const uint8_t* const* rows, float* out) {
  constexpr int kBytes = 144;
  const __m512 identity = Iota(0.0f);
  __m512 acc[R];
  __m256 min_acc[R];
  alignas(32) float scale[R][8];
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps(), min_acc[r] = _mm256_setzero_ps();
  for (int64_t sb = 0; sb < in.n_blocks; ++sb) {
    const __m256 xs32 = _mm256_loadu_ps(in.xsum32 + 8 * sb);
    in.prefetch.Advance(sb + 1);
    for (int r = 0; r < R; ++r) {
      const uint8_t* block = rows[r] + sb * kBytes;
      __m128i sc, m;
      UnpackK4(block + 4, &sc, &m);
      _mm256_store_ps(scale[r], _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(sc)),
                                              _mm256_set1_ps(HalfAt(in.f16, block))));
      const __m256 mins = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(m)),
                                        _mm256_set1_ps(HalfAt(in.f16, block + 2)));
      min_acc[r] = _mm256_fmadd_ps(mins, xs32, min_acc[r]);
    }
    const float* x = in.x + 256 * sb;
    for (int c = 0; c < 4; ++c) {
      const __m512 x0 = _mm512_loadu_ps(x + 64 * c), x1 = _mm512_loadu_ps(x + 64 * c + 16);
      const __m512 x2 = _mm512_loadu_ps(x + 64 * c + 32), x3 = _mm512_loadu_ps(x + 64 * c + 48);
      for (int r = 0; r < R; ++r) {
        const uint8_t* qs = rows[r] + sb * kBytes + 16 + 32 * c;
        const __m512i b0 = LoadBytesAsI32(qs), b1 = LoadBytesAsI32(qs + 16);
        __m512 t = _mm512_mul_ps(_mm512_permutexvar_ps(b0, identity), x0);
        t = _mm512_fmadd_ps(_mm512_permutexvar_ps(b1, identity), x1, t);
        acc[r] = _mm512_fmadd_ps(t, _mm512_set1_ps(scale[r][2 * c]), acc[r]);
        __m512 u = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(b0, 4)), x2);
        u = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(b1, 4)), x3, u);
        acc[r] = _mm512_fmadd_ps(u, _mm512_set1_ps(scale[r][2 * c + 1]), acc[r]);
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    const __m128 m4 =
        _mm_add_ps(_mm256_castps256_ps128(min_acc[r]), _mm256_extractf128_ps(min_acc[r], 1));
    const __m128 m2 = _mm_add_ps(m4, _mm_movehl_ps(m4, m4));
    out[r] = SumLanes(acc[r]) - _mm_cvtss_f32(_mm_add_ss(m2, _mm_movehdup_ps(m2)));
  }
}

// ---- dispatch --------------------------------------------------------------------------------

template <int R>
PROCTOR_GGUF_TARGET void RunRows(DType type, const Inputs& in, const uint8_t* const* rows,
                                 float* out) {
  switch (type) {
    case DType::kQ8_0:
      return Rows32<Q8_0Block, R>(in, rows, _mm512_setzero_ps(), _mm512_setzero_ps(), out);
    case DType::kQ4_0:
      return Rows32<Q4Block<false>, R>(in, rows, Iota(-8.0f), _mm512_setzero_ps(), out);
    case DType::kQ4_1:
      return Rows32<Q4Block<true>, R>(in, rows, Iota(0.0f), _mm512_setzero_ps(), out);
    case DType::kQ5_0:
      return Rows32<Q5Block<false>, R>(in, rows, Iota(-16.0f), Iota(0.0f), out);
    case DType::kQ5_1:
      return Rows32<Q5Block<true>, R>(in, rows, Iota(0.0f), Iota(16.0f), out);
    case DType::kQ2_K:
      return RowsK<Q2_KDecode, R>(in, rows, out);
    case DType::kQ3_K:
      return RowsK<Q3_KDecode, R>(in, rows, out);
    case DType::kQ4_K:
      return RowsQ4_K<R>(in, rows, out);
    case DType::kQ5_K:
      return RowsK<Q5_KDecode, R>(in, rows, out);
    case DType::kQ6_K:
      return RowsK<Q6_KDecode, R>(in, rows, out);
    default:
      CHECK_MSG(false, "no fused matvec for {}", Name(type));
  }
}

PROCTOR_GGUF_TARGET void GroupSums(const float* x, int64_t K, float* sums) {
  for (int64_t g = 0; g < K / 16; ++g) sums[g] = SumLanes(_mm512_loadu_ps(x + 16 * g));
}

}  // namespace

void MatVecGguf(const float* x, const MatView& w, float* out, int64_t n_begin, int64_t n_end) {
  CHECK(FusedGgufMatVecCovers(w.type) && CpuFeatures::Host().avx512_gguf);
  ForEachRowPass(x, w, out, n_begin, n_end, GroupSums,
                 [&]<int R>(const Inputs& in, const uint8_t* const* row_ptrs, float* row_out) {
                   RunRows<R>(w.type, in, row_ptrs, row_out);
                 });
}

}  // namespace proctor::ops::internal
