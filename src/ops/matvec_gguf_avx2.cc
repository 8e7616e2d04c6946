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

#include <cmath>

#include <cstring>

#include "ops/matmul_kernels.h"
#include "ops/matvec_gguf_avx2_codes.h"
#include "ops/matvec_gguf_rows.h"
#include "quant/ggml_blocks.h"
#include "util/error.h"

namespace proctor::ops::internal {
namespace {

using Inputs = GgufRowInputs;

// sum over 16 int8 codes (an xmm) of code * x[0..16).
PROCTOR_AVX2_TARGET inline __m256 Dot16(__m128i codes, __m256 x0, __m256 x1) {
  const __m256 q0 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(codes));
  const __m256 q1 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(codes, 8)));
  return _mm256_fmadd_ps(q1, x1, _mm256_mul_ps(q0, x0));
}

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
      if constexpr (Block::kHasMin) {  // one explicit fma: the same rounding for every R
        min_sum[r] = std::fma(HalfAt(in.f16, block + Block::kMinAt), xs, min_sum[r]);
      }
    }
  }
  for (int r = 0; r < R; ++r) out[r] = SumLanes(acc[r]) + min_sum[r];
}

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
