// Fused AVX2 (+FMA, F16C) matrix-vector kernels for the GGUF block types (decode, T == 1), for
// CPUs without the AVX-512 kernels of matvec_gguf.cc. The same contract: x stays f32, every code
// is exact, every weight row is streamed once and decoded in registers, four rows at a time
// sharing the loads of x, the next rows prefetched.
//
//  - 32-wide types (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1): the block's 32 codes become int8 in one xmm
//    (nibbles split, Q5's fifth bit from qh, Q4_0 / Q5_0's offset subtracted in integers), are
//    widened 8 at a time to f32 and multiplied by x; per block acc += d * (sum of code * x), and a
//    block minimum m adds m * sum(x of the block).
//  - Q4_K: per 32-value sub-block, nibbles widen to lanes directly; acc += scale_j * sum(code * x)
//    and dmin * m_j * sum(x of sub-block j) is subtracted at the end.
//  - the other K-quants (Q2_K, Q3_K, Q5_K, Q6_K): each 256-value super-block is decoded into int8
//    codes on the stack plus one f32 scale (and offset) per 16 values, by plain loops the compiler
//    vectorises; the shared dot loop widens the codes and accumulates
//    scale_g * sum(code * x) - offset_g * sum(x of the group).
// Every output is a fixed chain over its row, so results do not depend on thread partitions.
#include <immintrin.h>

#include <cstring>

#include "ops/matmul_kernels.h"
#include "ops/matvec_gguf_rows.h"
#include "quant/ggml_blocks.h"
#include "util/error.h"

#define PROCTOR_AVX2_TARGET __attribute__((target("avx2,fma,f16c")))

namespace proctor::ops::internal {
namespace {

using Inputs = GgufRowInputs;

// Sum of the 8 lanes in a fixed pairwise order.
PROCTOR_AVX2_TARGET inline float SumLanes(__m256 v) {
  const __m128 b = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 c = _mm_add_ps(b, _mm_movehl_ps(b, b));
  return _mm_cvtss_f32(_mm_add_ss(c, _mm_movehdup_ps(c)));
}

// sum over 16 int8 codes (an xmm) of code * x[0..16).
PROCTOR_AVX2_TARGET inline __m256 Dot16(__m128i codes, __m256 x0, __m256 x1) {
  const __m256 q0 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(codes));
  const __m256 q1 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(codes, 8)));
  return _mm256_fmadd_ps(q1, x1, _mm256_mul_ps(q0, x0));
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

// Q4_0 (codes q - 8) / Q4_1 (codes q): value l has the low nibble of byte l, value 16 + l the
// high one.
template <bool kMin>
struct Q4Block {
  static constexpr int kBytes = kMin ? 20 : 18;
  static constexpr bool kHasMin = kMin;
  static constexpr int kMinAt = 2;
  PROCTOR_AVX2_TARGET static void Codes(const uint8_t* b, __m128i* lo, __m128i* hi) {
    SplitNibbles(Load16(b + (kMin ? 4 : 2)), lo, hi);
    if constexpr (!kMin) {
      *lo = _mm_sub_epi8(*lo, _mm_set1_epi8(8));
      *hi = _mm_sub_epi8(*hi, _mm_set1_epi8(8));
    }
  }
};

// Q5_0 (codes q - 16) / Q5_1 (codes q): Q4's nibbles plus 16 where bit l of qh is set.
template <bool kMin>
struct Q5Block {
  static constexpr int kBytes = kMin ? 24 : 22;
  static constexpr bool kHasMin = kMin;
  static constexpr int kMinAt = 2;
  PROCTOR_AVX2_TARGET static void Codes(const uint8_t* b, __m128i* lo, __m128i* hi) {
    constexpr int kQh = kMin ? 4 : 2;
    uint32_t qh;
    std::memcpy(&qh, b + kQh, 4);
    SplitNibbles(Load16(b + kQh + 4), lo, hi);
    *lo = _mm_or_si128(*lo, BitsToBytes(qh, 16));
    *hi = _mm_or_si128(*hi, BitsToBytes(qh >> 16, 16));
    if constexpr (!kMin) {
      *lo = _mm_sub_epi8(*lo, _mm_set1_epi8(16));
      *hi = _mm_sub_epi8(*hi, _mm_set1_epi8(16));
    }
  }
};

template <class Block, int R>
PROCTOR_AVX2_TARGET void Rows32(const Inputs& in, const uint8_t* const* rows, float* out) {
  __m256 acc[R];
  float min_sum[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps(), min_sum[r] = 0.0f;
  for (int64_t b = 0; b < in.n_blocks; ++b) {
    const float* x = in.x + 32 * b;
    const __m256 x0 = _mm256_loadu_ps(x), x1 = _mm256_loadu_ps(x + 8);
    const __m256 x2 = _mm256_loadu_ps(x + 16), x3 = _mm256_loadu_ps(x + 24);
    const float xs = Block::kHasMin ? in.xsum32[b] : 0.0f;
    in.prefetch.Advance(b + 1);
    for (int r = 0; r < R; ++r) {
      const uint8_t* block = rows[r] + b * Block::kBytes;
      __m128i lo, hi;
      Block::Codes(block, &lo, &hi);
      const __m256 dot = _mm256_add_ps(Dot16(lo, x0, x1), Dot16(hi, x2, x3));
      acc[r] = _mm256_fmadd_ps(dot, _mm256_set1_ps(HalfAt(in.f16, block)), acc[r]);
      if constexpr (Block::kHasMin) min_sum[r] += HalfAt(in.f16, block + Block::kMinAt) * xs;
    }
  }
  for (int r = 0; r < R; ++r) out[r] = SumLanes(acc[r]) + min_sum[r];
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

template <class Decode, int R>
PROCTOR_AVX2_TARGET void RowsK(const Inputs& in, const uint8_t* const* rows, float* out) {
  Decoded dec[R];
  __m256 acc[R], min_acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps(), min_acc[r] = _mm256_setzero_ps();
  for (int64_t sb = 0; sb < in.n_blocks; ++sb) {
    in.prefetch.Advance(sb + 1);
    for (int r = 0; r < R; ++r) Decode::Run(rows[r] + sb * Decode::kBytes, in.f16, &dec[r]);
    const float* x = in.x + 256 * sb;
    for (int g = 0; g < 16; ++g) {
      const __m256 x0 = _mm256_loadu_ps(x + 16 * g), x1 = _mm256_loadu_ps(x + 16 * g + 8);
      for (int r = 0; r < R; ++r) {
        const __m128i codes = _mm_load_si128(reinterpret_cast<const __m128i*>(dec[r].q + 16 * g));
        acc[r] = _mm256_fmadd_ps(Dot16(codes, x0, x1), _mm256_set1_ps(dec[r].scale[g]), acc[r]);
      }
    }
    if constexpr (Decode::kHasMin) {
      const __m256 xs0 = _mm256_loadu_ps(in.xsum + 16 * sb);
      const __m256 xs1 = _mm256_loadu_ps(in.xsum + 16 * sb + 8);
      for (int r = 0; r < R; ++r) {
        min_acc[r] = _mm256_fmadd_ps(_mm256_load_ps(dec[r].offset), xs0, min_acc[r]);
        min_acc[r] = _mm256_fmadd_ps(_mm256_load_ps(dec[r].offset + 8), xs1, min_acc[r]);
      }
    }
  }
  for (int r = 0; r < R; ++r) out[r] = SumLanes(acc[r]) - SumLanes(min_acc[r]);
}

// Q4_K without staging codes on the stack (the most used K-quant): per 64-value chunk c, the
// low nibbles of qs[32c..32c+32) are sub-block 2c and the high ones sub-block 2c + 1, widened
// 8 bytes at a time.
template <int R>
PROCTOR_AVX2_TARGET void RowsQ4_K(const Inputs& in, const uint8_t* const* rows, float* out) {
  constexpr int kBytes = 144;
  __m256 acc[R], min_acc[R];
  alignas(32) float scale[R][8];
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps(), min_acc[r] = _mm256_setzero_ps();
  const __m256i low4 = _mm256_set1_epi32(15);
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
      for (int half = 0; half < 2; ++half) {  // values 64c + 16 half + [0, 16) and + 32
        const float* xc = x + 64 * c + 16 * half;
        const __m256 x0 = _mm256_loadu_ps(xc), x1 = _mm256_loadu_ps(xc + 8);
        const __m256 x2 = _mm256_loadu_ps(xc + 32), x3 = _mm256_loadu_ps(xc + 40);
        for (int r = 0; r < R; ++r) {
          const uint8_t* qs = rows[r] + sb * kBytes + 16 + 32 * c + 16 * half;
          const __m256i b0 =
              _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(qs)));
          const __m256i b1 =
              _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(qs + 8)));
          __m256 t = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_and_si256(b0, low4)), x0);
          t = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_and_si256(b1, low4)), x1, t);
          acc[r] = _mm256_fmadd_ps(t, _mm256_set1_ps(scale[r][2 * c]), acc[r]);
          __m256 u = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(b0, 4)), x2);
          u = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(b1, 4)), x3, u);
          acc[r] = _mm256_fmadd_ps(u, _mm256_set1_ps(scale[r][2 * c + 1]), acc[r]);
        }
      }
    }
  }
  for (int r = 0; r < R; ++r) out[r] = SumLanes(acc[r]) - SumLanes(min_acc[r]);
}

// ---- dispatch --------------------------------------------------------------------------------

template <int R>
PROCTOR_AVX2_TARGET void RunRows(DType type, const Inputs& in, const uint8_t* const* rows,
                                 float* out) {
  switch (type) {
    case DType::kQ8_0:
      return Rows32<Q8_0Block, R>(in, rows, out);
    case DType::kQ4_0:
      return Rows32<Q4Block<false>, R>(in, rows, out);
    case DType::kQ4_1:
      return Rows32<Q4Block<true>, R>(in, rows, out);
    case DType::kQ5_0:
      return Rows32<Q5Block<false>, R>(in, rows, out);
    case DType::kQ5_1:
      return Rows32<Q5Block<true>, R>(in, rows, out);
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

PROCTOR_AVX2_TARGET void GroupSums(const float* x, int64_t K, float* sums) {
  for (int64_t g = 0; g < K / 16; ++g) {
    sums[g] = SumLanes(_mm256_add_ps(_mm256_loadu_ps(x + 16 * g), _mm256_loadu_ps(x + 16 * g + 8)));
  }
}

}  // namespace

void MatVecGgufAvx2(const float* x, const MatView& w, float* out, int64_t n_begin, int64_t n_end) {
  CHECK(FusedGgufMatVecCovers(w.type) && CpuFeatures::Host().avx2_fma);
  ForEachRowPass(x, w, out, n_begin, n_end, GroupSums,
                 [&]<int R>(const Inputs& in, const uint8_t* const* row_ptrs, float* row_out) {
                   RunRows<R>(w.type, in, row_ptrs, row_out);
                 });
}

}  // namespace proctor::ops::internal
