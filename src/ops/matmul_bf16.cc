// AVX-512 BF16 MatMul kernels (vdpbf16ps) for bf16 weights in bf16 compute mode. Highway 1.0.3
// has no bf16 dot product, so these use intrinsics in functions compiled for that ISA and are
// chosen at run time (ChooseMatMulKernel); everything else falls back to the Highway f32 kernels.
//
// vdpbf16ps(acc, a, b): acc[i] += a[2i] * b[2i] + a[2i+1] * b[2i+1] for 16 f32 lanes. The blocked
// kernel packs 32 weight rows per panel as [k/2][32 rows][2] so lane i of two vectors is output
// column i and each x pair is a 32-bit broadcast; every output lane is one fixed chain over k.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "ops/matmul_kernels.h"
#include "util/error.h"

#define PROCTOR_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

namespace proctor::ops::internal {

namespace {

constexpr int kRows = 12;            // x rows per micro-tile (24 accumulators)
constexpr int64_t kPairChunk = 256;  // k pairs per packed panel (32 x 512 bf16 = 32 KiB)
constexpr int kPanelsPerBlock = 8;
constexpr int64_t NR = kBF16PanelWidth;

inline __mmask16 LaneMask(int64_t n) {
  return n >= 16 ? static_cast<__mmask16>(0xFFFF)
                 : static_cast<__mmask16>((1u << std::max<int64_t>(n, 0)) - 1u);
}

template <int MR>
PROCTOR_BF16_TARGET __attribute__((noinline)) void MicroKernel(const uint16_t* x, int64_t x_stride,
                                                               const uint32_t* panel, int64_t pairs,
                                                               float* out, int64_t out_stride,
                                                               int64_t nr, bool accumulate) {
  __m512 acc0[MR], acc1[MR];
  const __mmask16 m0 = LaneMask(nr), m1 = LaneMask(nr - 16);
  for (int m = 0; m < MR; ++m) {
    if (accumulate) {
      acc0[m] = _mm512_maskz_loadu_ps(m0, out + m * out_stride);
      acc1[m] = _mm512_maskz_loadu_ps(m1, out + m * out_stride + 16);
    } else {
      acc0[m] = _mm512_setzero_ps();
      acc1[m] = _mm512_setzero_ps();
    }
  }
  for (int64_t p = 0; p < pairs; ++p) {
    const __m512i w0 = _mm512_loadu_si512(panel + p * NR);
    const __m512i w1 = _mm512_loadu_si512(panel + p * NR + 16);
    for (int m = 0; m < MR; ++m) {
      int32_t pair;
      std::memcpy(&pair, x + m * x_stride + 2 * p, sizeof(pair));
      const __m512i xb = _mm512_set1_epi32(pair);
      acc0[m] = _mm512_dpbf16_ps(acc0[m], (__m512bh)w0, (__m512bh)xb);
      acc1[m] = _mm512_dpbf16_ps(acc1[m], (__m512bh)w1, (__m512bh)xb);
    }
  }
  for (int m = 0; m < MR; ++m) {
    _mm512_mask_storeu_ps(out + m * out_stride, m0, acc0[m]);
    _mm512_mask_storeu_ps(out + m * out_stride + 16, m1, acc1[m]);
  }
}

template <int MR>
PROCTOR_BF16_TARGET void RunTile(int rows, const uint16_t* x, int64_t x_stride,
                                 const uint32_t* panel, int64_t pairs, float* out,
                                 int64_t out_stride, int64_t nr, bool accumulate) {
  if constexpr (MR > 0) {
    if (rows == MR) {
      MicroKernel<MR>(x, x_stride, panel, pairs, out, out_stride, nr, accumulate);
    } else {
      RunTile<MR - 1>(rows, x, x_stride, panel, pairs, out, out_stride, nr, accumulate);
    }
  }
}

// Packs rows [n0, n0+nr), columns [k0, k0 + 2*pairs) of bf16 w as panel[pair][32] (u32 pairs);
// columns past K and rows past nr are zero.
void PackPanel(const MatView& w, int64_t n0, int64_t nr, int64_t k0, int64_t pairs,
               uint32_t* panel) {
  const int64_t K = w.cols;
  for (int64_t r = 0; r < NR; ++r) {
    if (r >= nr) {
      for (int64_t p = 0; p < pairs; ++p) panel[p * NR + r] = 0;
      continue;
    }
    const uint8_t* row = w.Row(n0 + r) + k0 * 2;
    const int64_t full_pairs = std::min(pairs, (K - k0) / 2);
    for (int64_t p = 0; p < full_pairs; ++p) {
      uint32_t v;
      std::memcpy(&v, row + p * 4, 4);
      panel[p * NR + r] = v;
    }
    for (int64_t p = full_pairs; p < pairs; ++p) {  // odd K: last pair is (w[K-1], 0)
      uint16_t lo = 0;
      if (k0 + 2 * p < K) std::memcpy(&lo, row + p * 4, 2);
      panel[p * NR + r] = lo;
    }
  }
}

}  // namespace

void MatMulBlockedBF16Dot(const uint16_t* x_bf16, int64_t T, int64_t x_stride, const MatView& w,
                          MutMatF32 out, int64_t n_begin, int64_t n_end) {
  CHECK(w.type == DType::kBF16 && CpuFeatures::Host().avx512_bf16);
  const int64_t total_pairs = (w.cols + 1) / 2;
  thread_local std::vector<uint32_t> panels;
  panels.resize(static_cast<size_t>(kPanelsPerBlock * NR * kPairChunk));  // [panel][pair][NR]
  for (int64_t nb = n_begin; nb < n_end; nb += kPanelsPerBlock * NR) {
    const int64_t nb_end = std::min(n_end, nb + kPanelsPerBlock * NR);
    const int64_t n_panels = (nb_end - nb + NR - 1) / NR;
    for (int64_t p0 = 0; p0 < total_pairs; p0 += kPairChunk) {
      const int64_t pairs = std::min(kPairChunk, total_pairs - p0);
      for (int64_t p = 0; p < n_panels; ++p) {
        PackPanel(w, nb + p * NR, std::min(NR, nb_end - nb - p * NR), 2 * p0, pairs,
                  panels.data() + p * NR * kPairChunk);
      }
      for (int64_t t0 = 0; t0 < T; t0 += kRows) {
        const int rows = static_cast<int>(std::min<int64_t>(kRows, T - t0));
        for (int64_t p = 0; p < n_panels; ++p) {
          const int64_t n0 = nb + p * NR;
          RunTile<kRows>(rows, x_bf16 + t0 * x_stride + 2 * p0, x_stride,
                         panels.data() + p * NR * kPairChunk, pairs, out.Row(t0) + n0, out.stride,
                         std::min(NR, nb_end - n0), p0 > 0);
        }
      }
    }
  }
}

namespace {

// Sum of the 16 lanes in a fixed pairwise order.
PROCTOR_BF16_TARGET inline float SumLanes(__m512 v) {
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, v);
  for (int width = 8; width > 0; width /= 2) {
    for (int i = 0; i < width; ++i) lanes[i] += lanes[i + width];
  }
  return lanes[0];
}

PROCTOR_BF16_TARGET void MatVecRows(const uint16_t* x, const MatView& w, float* out, int64_t n,
                                    int64_t rows) {
  const int64_t K = w.cols;
  __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                   _mm512_setzero_ps()};
  const uint16_t* wr[4];
  for (int64_t r = 0; r < 4; ++r) wr[r] = w.RowAs<uint16_t>(n + std::min(r, rows - 1));
  int64_t k = 0;
  for (; k + 32 <= K; k += 32) {
    const __m512bh xv = (__m512bh)_mm512_loadu_si512(x + k);
    for (int r = 0; r < 4; ++r) {
      acc[r] = _mm512_dpbf16_ps(acc[r], (__m512bh)_mm512_loadu_si512(wr[r] + k), xv);
    }
  }
  if (k < K) {  // x is zero-padded to a multiple of 32; weights are read with a mask
    const __mmask32 mask = static_cast<__mmask32>((1ull << (K - k)) - 1ull);
    const __m512bh xv = (__m512bh)_mm512_loadu_si512(x + k);
    for (int r = 0; r < 4; ++r) {
      acc[r] = _mm512_dpbf16_ps(acc[r], (__m512bh)_mm512_maskz_loadu_epi16(mask, wr[r] + k), xv);
    }
  }
  for (int64_t r = 0; r < rows; ++r) out[n + r] = SumLanes(acc[r]);
}

}  // namespace

void MatVecBF16Dot(const uint16_t* x_bf16, const MatView& w, float* out, int64_t n_begin,
                   int64_t n_end) {
  CHECK(w.type == DType::kBF16 && CpuFeatures::Host().avx512_bf16);
  for (int64_t n = n_begin; n < n_end; n += 4) {
    MatVecRows(x_bf16, w, out, n, std::min<int64_t>(4, n_end - n));
  }
}

}  // namespace proctor::ops::internal
