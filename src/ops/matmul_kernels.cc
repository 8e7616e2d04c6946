// Highway f32 MatMul kernels: a packed, register-tiled matrix-matrix kernel (prefill) and a
// streaming matrix-vector kernel (decode). Every output lane is one sequential FMA chain over k
// (blocked kernel), so results do not depend on T, panel or thread boundaries.
#include <algorithm>
#include <cstring>
#include <vector>

#include "ops/convert.h"
#include "ops/matmul_kernels.h"
#include "quant/ggml_blocks.h"
#include "util/error.h"

// Highway: HWY_TARGET_INCLUDE, then foreach_target.h, then highway.h and the -inl.h headers.
// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/matmul_kernels.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace proctor::ops::internal {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;

// Rows of x per micro-tile: as many accumulators as the register file holds (2 per row).
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
constexpr int kMaxRows = 12;
#elif HWY_TARGET == HWY_AVX2
constexpr int kMaxRows = 6;
#else
constexpr int kMaxRows = 4;
#endif
constexpr int64_t kKChunk = 256;  // k values per packed panel (NR * 256 floats stay in L1)
constexpr int kPanelsPerBlock = 8;

inline int64_t PanelWidth() { return 2 * static_cast<int64_t>(hn::Lanes(DF())); }

int64_t BlockedPanelWidthImpl() { return PanelWidth(); }

// out[m][0..nr) (+)= sum_k x[m][k] * panel[k][0..NR) for m < MR.
// panel_stride: floats between consecutive k rows of the panel (NR for packed panels).
template <int MR>
HWY_NOINLINE void MicroKernel(const float* x, int64_t x_stride, const float* panel,
                              int64_t panel_stride, int64_t kc, float* out, int64_t out_stride,
                              int64_t nr, bool accumulate) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  hn::Vec<DF> acc0[MR], acc1[MR];
  const bool full = nr == 2 * N;
  for (int m = 0; m < MR; ++m) {
    if (!accumulate) {
      acc0[m] = hn::Zero(df);
      acc1[m] = hn::Zero(df);
    } else if (full) {
      acc0[m] = hn::LoadU(df, out + m * out_stride);
      acc1[m] = hn::LoadU(df, out + m * out_stride + N);
    } else {
      const float* o = out + m * out_stride;
      acc0[m] = hn::MaskedLoad(hn::FirstN(df, static_cast<size_t>(std::min(nr, N))), df, o);
      acc1[m] = nr > N ? hn::MaskedLoad(hn::FirstN(df, static_cast<size_t>(nr - N)), df, o + N)
                       : hn::Zero(df);
    }
  }
  for (int64_t k = 0; k < kc; ++k) {
    const auto w0 = hn::LoadU(df, panel + k * panel_stride);
    const auto w1 = hn::LoadU(df, panel + k * panel_stride + N);
    for (int m = 0; m < MR; ++m) {
      const auto xv = hn::Set(df, x[m * x_stride + k]);
      acc0[m] = hn::MulAdd(xv, w0, acc0[m]);
      acc1[m] = hn::MulAdd(xv, w1, acc1[m]);
    }
  }
  for (int m = 0; m < MR; ++m) {
    float* o = out + m * out_stride;
    if (full) {
      hn::StoreU(acc0[m], df, o);
      hn::StoreU(acc1[m], df, o + N);
    } else {
      hn::BlendedStore(acc0[m], hn::FirstN(df, static_cast<size_t>(std::min(nr, N))), df, o);
      if (nr > N) hn::BlendedStore(acc1[m], hn::FirstN(df, static_cast<size_t>(nr - N)), df, o + N);
    }
  }
}

template <int MR>
void RunTile(int rows, const float* x, int64_t x_stride, const float* panel, int64_t panel_stride,
             int64_t kc, float* out, int64_t out_stride, int64_t nr, bool accumulate) {
  if constexpr (MR > 0) {
    if (rows == MR) {
      MicroKernel<MR>(x, x_stride, panel, panel_stride, kc, out, out_stride, nr, accumulate);
    } else {
      RunTile<MR - 1>(rows, x, x_stride, panel, panel_stride, kc, out, out_stride, nr, accumulate);
    }
  }
}

void GemmF32Impl(const float* a, int64_t a_stride, int64_t M, int64_t K, const float* b,
                 int64_t b_stride, int64_t N, float* c, int64_t c_stride) {
  const int64_t NR = PanelWidth();
  for (int64_t n0 = 0; n0 < N; n0 += NR) {
    for (int64_t m0 = 0; m0 < M; m0 += kMaxRows) {
      const int rows = static_cast<int>(std::min<int64_t>(kMaxRows, M - m0));
      RunTile<kMaxRows>(rows, a + m0 * a_stride, a_stride, b + n0, b_stride, K,
                        c + m0 * c_stride + n0, c_stride, std::min(NR, N - n0), false);
    }
  }
}

inline void DecodePanelRow(const MatView& w, int64_t row, int64_t k0, int64_t kc, float* out) {
  DecodeRowSegment(w, row, k0, kc, out);
}
inline void DecodePanelRow(const quant::MlxQuantizedMatrix& w, int64_t row, int64_t k0, int64_t kc,
                           float* out) {
  DecodeMlxPanelRow(w, row, k0, kc, out);  // block order; MatMulMlx permuted x to match
}

// Packs rows [n0, n0 + nr) x columns [k0, k0 + kc) of w as panel[k][NR] f32 (zero rows past nr).
template <class Weights>
void PackPanel(const Weights& w, int64_t n0, int64_t nr, int64_t k0, int64_t kc, float* row_buf,
               float* panel) {
  const int64_t NR = PanelWidth();
  for (int64_t r = 0; r < NR; ++r) {
    if (r < nr) {
      DecodePanelRow(w, n0 + r, k0, kc, row_buf);
      for (int64_t k = 0; k < kc; ++k) panel[k * NR + r] = row_buf[k];
    } else {
      for (int64_t k = 0; k < kc; ++k) panel[k * NR + r] = 0.0f;
    }
  }
}

// Weights: a MatView or an MLX matrix (anything DecodePanelRow takes).
template <class Weights>
void BlockedF32(const MatView& x, const Weights& w, MutMatF32 out, int64_t n_begin, int64_t n_end) {
  const int64_t NR = PanelWidth();
  const int64_t T = x.rows, K = x.cols;
  const int64_t x_stride = static_cast<int64_t>(x.row_stride / sizeof(float));
  // A block size of kKChunk must keep quantized blocks (and MLX groups of <= 128) whole.
  static_assert(kKChunk % 128 == 0);
  thread_local std::vector<float> panels, row_buf;
  panels.resize(static_cast<size_t>(kPanelsPerBlock * NR * kKChunk));  // [panel][k][NR]
  row_buf.resize(static_cast<size_t>(kKChunk));                        // [kc]
  const float* x0 = x.RowAs<float>(0);
  for (int64_t nb = n_begin; nb < n_end; nb += kPanelsPerBlock * NR) {
    const int64_t nb_end = std::min(n_end, nb + kPanelsPerBlock * NR);
    const int64_t n_panels = (nb_end - nb + NR - 1) / NR;
    for (int64_t k0 = 0; k0 < K; k0 += kKChunk) {
      const int64_t kc = std::min(kKChunk, K - k0);
      for (int64_t p = 0; p < n_panels; ++p) {
        PackPanel(w, nb + p * NR, std::min(NR, nb_end - nb - p * NR), k0, kc, row_buf.data(),
                  panels.data() + p * NR * kKChunk);
      }
      for (int64_t t0 = 0; t0 < T; t0 += kMaxRows) {
        const int rows = static_cast<int>(std::min<int64_t>(kMaxRows, T - t0));
        for (int64_t p = 0; p < n_panels; ++p) {
          const int64_t n0 = nb + p * NR;
          RunTile<kMaxRows>(rows, x0 + t0 * x_stride + k0, x_stride,
                            panels.data() + p * NR * kKChunk, NR, kc, out.Row(t0) + n0, out.stride,
                            std::min(NR, nb_end - n0), k0 > 0);
        }
      }
    }
  }
}

void MatMulBlockedF32Impl(const MatView& x, const MatView& w, MutMatF32 out, int64_t n_begin,
                          int64_t n_end) {
  BlockedF32(x, w, out, n_begin, n_end);
}

void MatMulBlockedF32MlxImpl(const MatView& x, const quant::MlxQuantizedMatrix& w, MutMatF32 out,
                             int64_t n_begin, int64_t n_end) {
  BlockedF32(x, w, out, n_begin, n_end);
}

// Dot products of x with 4 weight rows decoded by `load(row, k)` (a vector of f32 weights).
template <class LoadW>
void Dot4Rows(const float* x, int64_t K, int64_t rows, LoadW load, float* out) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  auto a0 = hn::Zero(df), a1 = hn::Zero(df), a2 = hn::Zero(df), a3 = hn::Zero(df);
  int64_t k = 0;
  for (; k + N <= K; k += N) {
    const auto xv = hn::LoadU(df, x + k);
    a0 = hn::MulAdd(xv, load(0, k), a0);
    if (rows > 1) a1 = hn::MulAdd(xv, load(1, k), a1);
    if (rows > 2) a2 = hn::MulAdd(xv, load(2, k), a2);
    if (rows > 3) a3 = hn::MulAdd(xv, load(3, k), a3);
  }
  float sums[4] = {hn::GetLane(hn::SumOfLanes(df, a0)), hn::GetLane(hn::SumOfLanes(df, a1)),
                   hn::GetLane(hn::SumOfLanes(df, a2)), hn::GetLane(hn::SumOfLanes(df, a3))};
  for (int64_t r = 0; r < rows; ++r) out[r] = sums[r];
  (void)k;
}

void MatVecF32Impl(const float* x, const MatView& w, float* out, int64_t n_begin, int64_t n_end) {
  const DF df;
  const hn::Rebind<uint16_t, DF> du16;
  const hn::Rebind<uint32_t, DF> du32;
  const hn::Rebind<hwy::float16_t, DF> df16;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const int64_t K = w.cols;
  const int64_t k_main = K / N * N;
  thread_local std::vector<float> tail_buf;
  tail_buf.resize(static_cast<size_t>(K));
  for (int64_t n = n_begin; n < n_end; n += 4) {
    const int64_t rows = std::min<int64_t>(4, n_end - n);
    switch (w.type) {
      case DType::kF32:
        Dot4Rows(
            x, K, rows,
            [&](int64_t r, int64_t k) { return hn::LoadU(df, w.RowAs<float>(n + r) + k); },
            out + n);
        break;
      case DType::kBF16:
        Dot4Rows(
            x, K, rows,
            [&](int64_t r, int64_t k) {
              const auto h = hn::LoadU(du16, w.RowAs<uint16_t>(n + r) + k);
              return hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(du32, h)));
            },
            out + n);
        break;
      case DType::kF16:
        Dot4Rows(
            x, K, rows,
            [&](int64_t r, int64_t k) {
              return hn::PromoteTo(df, hn::LoadU(df16, w.RowAs<hwy::float16_t>(n + r) + k));
            },
            out + n);
        break;
      case DType::kQ8_0:
        for (int64_t r = 0; r < rows; ++r) out[n + r] = quant::DotQ8_0(w.Row(n + r), K / 32, x);
        continue;
      case DType::kQ4_0:
        for (int64_t r = 0; r < rows; ++r) out[n + r] = quant::DotQ4_0(w.Row(n + r), K / 32, x);
        continue;
      default: {  // the other GGUF block types: their dot kernels from the traits table
        const quant::BlockTraits* traits = quant::FindBlockTraits(w.type);
        CHECK_MSG(traits != nullptr, "matvec: unsupported weight type {}", Name(w.type));
        for (int64_t r = 0; r < rows; ++r) {
          out[n + r] = traits->dot_fast(w.Row(n + r), K / traits->block_elems, x);
        }
        continue;
      }
    }
    if (k_main < K) {  // float-type tail: decode the remaining columns and finish each dot
      for (int64_t r = 0; r < rows; ++r) {
        DecodeRowSegment(w, n + r, k_main, K - k_main, tail_buf.data());
        float sum = out[n + r];
        for (int64_t k = k_main; k < K; ++k) sum += x[k] * tail_buf[k - k_main];
        out[n + r] = sum;
      }
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace proctor::ops::internal
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace proctor::ops::internal {

HWY_EXPORT(MatMulBlockedF32Impl);
HWY_EXPORT(MatMulBlockedF32MlxImpl);
HWY_EXPORT(MatVecF32Impl);
HWY_EXPORT(BlockedPanelWidthImpl);
HWY_EXPORT(GemmF32Impl);

void GemmF32(const float* a, int64_t a_stride, int64_t M, int64_t K, const float* b,
             int64_t b_stride, int64_t N, float* c, int64_t c_stride) {
  HWY_DYNAMIC_DISPATCH(GemmF32Impl)(a, a_stride, M, K, b, b_stride, N, c, c_stride);
}

void MatMulBlockedF32(const MatView& x, const MatView& w, MutMatF32 out, int64_t n_begin,
                      int64_t n_end) {
  HWY_DYNAMIC_DISPATCH(MatMulBlockedF32Impl)(x, w, out, n_begin, n_end);
}
void MatMulBlockedF32Mlx(const MatView& x, const quant::MlxQuantizedMatrix& w, MutMatF32 out,
                         int64_t n_begin, int64_t n_end) {
  HWY_DYNAMIC_DISPATCH(MatMulBlockedF32MlxImpl)(x, w, out, n_begin, n_end);
}
void MatVecF32(const float* x, const MatView& w, float* out, int64_t n_begin, int64_t n_end) {
  HWY_DYNAMIC_DISPATCH(MatVecF32Impl)(x, w, out, n_begin, n_end);
}
int64_t BlockedPanelWidth() { return HWY_DYNAMIC_DISPATCH(BlockedPanelWidthImpl)(); }

}  // namespace proctor::ops::internal
#endif  // HWY_ONCE
