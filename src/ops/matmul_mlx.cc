// MatMul for MLX quantized weights (see ops/matmul.h and quant/mlx_quant.h).
//
// Prefill (T >= 2): the blocked f32 kernel of matmul_kernels.cc, whose weight panels
// (16..32 rows x 256 k) are decoded group by group (quant::DecodeMlxRowSegment) into a small f32
// buffer; no more of the matrix is ever expanded.
//
// Decode (T == 1): a matrix-vector kernel that never forms weights at all for affine 2-, 4- and
// 8-bit codes. Per group g of a row, with codes q and activations x:
//   sum_j (s_g q_j + b_g) x_j  =  s_g * sum_j q_j x_j  +  b_g * sum_j x_j
// (MLX's own qmv kernels use the same factoring.) The codes of one byte load are split by shifts
// into c = 8 / bits vectors; vector i, lane j holds code j*c + i of the block, so x is permuted
// once per call into that order (xp) and sum_j x_j is precomputed per group (x_sums). Other
// widths and the float modes use quant::DotMlxRow. Each output is one fixed chain of operations,
// independent of thread partitions.
#include <algorithm>
#include <cstring>
#include <vector>

#include "ops/convert.h"
#include "ops/matmul_kernels.h"
#include "util/error.h"
#include "util/half.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/matmul_mlx.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace proctor::ops::internal {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;

// Scales and biases of row `row`, decoded to f32 (biases are zero for the float modes).
void DecodeGroupParams(const quant::MlxQuantizedMatrix& m, int64_t row, float* scales,
                       float* biases) {
  const int64_t groups = m.cols() / m.group_size;
  const auto decode = [&](const MatView& v, float* out) {
    const uint8_t* p = v.Row(row);
    switch (v.type) {
      case DType::kF32:
        std::memcpy(out, p, static_cast<size_t>(groups) * 4);
        return;
      case DType::kBF16:
        for (int64_t g = 0; g < groups; ++g) {
          uint16_t h;
          std::memcpy(&h, p + 2 * g, 2);
          out[g] = BF16ToF32(h);
        }
        return;
      default: {  // f16
        const DF df;
        const hn::Rebind<hwy::float16_t, DF> df16;
        const int64_t N = static_cast<int64_t>(hn::Lanes(df));
        int64_t g = 0;
        for (; g + N <= groups; g += N) {
          const auto* src = reinterpret_cast<const hwy::float16_t*>(p + 2 * g);
          hn::StoreU(hn::PromoteTo(df, hn::LoadU(df16, src)), df, out + g);
        }
        for (; g < groups; ++g) {
          uint16_t h;
          std::memcpy(&h, p + 2 * g, 2);
          out[g] = F16ToF32(h);
        }
        return;
      }
    }
  };
  decode(m.scales, scales);
  decode(m.biases, biases);
}

// Codes per byte c = 8 / kBits; the byte-load width caps the vector at 32 / c floats so one block
// (Lanes * c codes) never spans two groups (groups are >= 32 codes).
template <int kBits>
using DBlock = hn::CappedTag<float, 32 / (8 / kBits)>;

// x permuted into the per-block order of the shift kernel: xp[e + i*N + j] = x[e + j*c + i].
template <int kBits>
void PermuteX(const float* x, int64_t K, float* xp) {
  constexpr int c = 8 / kBits;
  const int64_t N = static_cast<int64_t>(hn::Lanes(DBlock<kBits>()));
  for (int64_t e = 0; e < K; e += N * c) {
    for (int i = 0; i < c; ++i) {
      for (int64_t j = 0; j < N; ++j) xp[e + i * N + j] = x[e + j * c + i];
    }
  }
}

// out[n + r] for r < rows (<= 4): rows n.. of an affine kBits matrix times x (as xp / x_sums).
template <int kBits>
void DotRowsAffine(const quant::MlxQuantizedMatrix& m, const float* xp, const float* x_sums,
                   int64_t n, int64_t rows, float* params, float* out) {
  constexpr int c = 8 / kBits;
  const DBlock<kBits> d;
  const hn::Rebind<uint8_t, decltype(d)> du8;
  const hn::Rebind<uint32_t, decltype(d)> du32;
  const hn::Rebind<int32_t, decltype(d)> di32;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const int64_t K = m.cols(), G = m.group_size, groups = K / G;
  const auto mask = hn::Set(du32, (1u << kBits) - 1u);
  float* scales = params;               // [4][groups]
  float* biases = params + 4 * groups;  // [4][groups]
  const uint8_t* packed[4];
  for (int64_t r = 0; r < 4; ++r) {
    const int64_t row = n + std::min(r, rows - 1);
    packed[r] = m.packed.Row(row);
    if (r < rows) DecodeGroupParams(m, row, scales + r * groups, biases + r * groups);
  }
  decltype(hn::Zero(d)) acc[4] = {hn::Zero(d), hn::Zero(d), hn::Zero(d), hn::Zero(d)};
  for (int64_t g = 0; g < groups; ++g) {
    decltype(hn::Zero(d)) gq[4] = {hn::Zero(d), hn::Zero(d), hn::Zero(d), hn::Zero(d)};
    for (int64_t e = g * G; e < (g + 1) * G; e += N * c) {
      decltype(hn::Zero(d)) xv[c];
      for (int i = 0; i < c; ++i) xv[i] = hn::LoadU(d, xp + e + i * N);
      for (int r = 0; r < 4; ++r) {
        if (r >= rows) break;
        const auto bytes = hn::PromoteTo(du32, hn::LoadU(du8, packed[r] + e * kBits / 8));
        for (int i = 0; i < c; ++i) {
          const auto codes = hn::And(hn::Shr(bytes, hn::Set(du32, i * kBits)), mask);
          gq[r] = hn::MulAdd(hn::ConvertTo(d, hn::BitCast(di32, codes)), xv[i], gq[r]);
        }
      }
    }
    for (int r = 0; r < 4; ++r) {
      if (r >= rows) break;
      acc[r] = hn::MulAdd(hn::Set(d, scales[r * groups + g]), gq[r], acc[r]);
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    float bias_sum = 0.0f;
    for (int64_t g = 0; g < groups; ++g) bias_sum += biases[r * groups + g] * x_sums[g];
    out[n + r] = hn::GetLane(hn::SumOfLanes(d, acc[r])) + bias_sum;
  }
}

template <int kBits>
void MatVecAffine(const float* x, const quant::MlxQuantizedMatrix& m, float* out, int64_t n_begin,
                  int64_t n_end) {
  const int64_t K = m.cols(), G = m.group_size, groups = K / G;
  thread_local std::vector<float> xp, x_sums, params;
  xp.resize(static_cast<size_t>(K));                // [K] permuted x
  x_sums.resize(static_cast<size_t>(groups));       // [groups]
  params.resize(static_cast<size_t>(8 * groups));   // [scales | biases][4 rows][groups]
  PermuteX<kBits>(x, K, xp.data());
  for (int64_t g = 0; g < groups; ++g) {
    float sum = 0.0f;
    for (int64_t j = g * G; j < (g + 1) * G; ++j) sum += x[j];
    x_sums[static_cast<size_t>(g)] = sum;
  }
  for (int64_t n = n_begin; n < n_end; n += 4) {
    DotRowsAffine<kBits>(m, xp.data(), x_sums.data(), n, std::min<int64_t>(4, n_end - n),
                         params.data(), out);
  }
}

void MatVecMlxF32Impl(const float* x, const quant::MlxQuantizedMatrix& m, float* out,
                      int64_t n_begin, int64_t n_end) {
  if (m.mode == quant::MlxMode::kAffine) {
    switch (m.bits) {
      case 2:
        return MatVecAffine<2>(x, m, out, n_begin, n_end);
      case 4:
        return MatVecAffine<4>(x, m, out, n_begin, n_end);
      case 8:
        return MatVecAffine<8>(x, m, out, n_begin, n_end);
      default:
        break;
    }
  }
  for (int64_t n = n_begin; n < n_end; ++n) out[n] = quant::DotMlxRow(m, n, x);
}

}  // namespace HWY_NAMESPACE
}  // namespace proctor::ops::internal
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace proctor::ops::internal {

HWY_EXPORT(MatVecMlxF32Impl);

void MatVecMlxF32(const float* x, const quant::MlxQuantizedMatrix& w, float* out, int64_t n_begin,
                  int64_t n_end) {
  HWY_DYNAMIC_DISPATCH(MatVecMlxF32Impl)(x, w, out, n_begin, n_end);
}

namespace {
constexpr int64_t kMatVecGrain = 64;  // rows per partition unit for T == 1
}  // namespace

void MatMulMlx(const MatView& x, const quant::MlxQuantizedMatrix& w, MutMatF32 out,
               ComputeMode mode, ThreadPool& pool) {
  CHECK(x.type == DType::kF32 && x.row_stride % sizeof(float) == 0);
  CHECK_MSG(x.cols == w.cols() && out.rows == x.rows && out.cols == w.rows(),
            "x [{}, {}] w [{}, {}] out [{}, {}]", x.rows, x.cols, w.rows(), w.cols(), out.rows,
            out.cols);
  const int64_t T = x.rows, K = x.cols, N = w.rows();
  if (T == 0 || N == 0) return;
  MatView xs = x;
  std::vector<float> rounded;  // [T, K]: activations rounded to bf16 (bf16 mode)
  if (mode == ComputeMode::kBF16) {
    rounded.resize(static_cast<size_t>(T * K));
    for (int64_t t = 0; t < T; ++t) RoundToBF16Floats(x.RowAs<float>(t), K, &rounded[t * K]);
    xs = MatView{DType::kF32, T, K, static_cast<size_t>(K) * 4,
                 reinterpret_cast<const uint8_t*>(rounded.data())};
  }
  if (T == 1) {
    pool.ParallelForGrain(static_cast<size_t>(N), kMatVecGrain,
                          [&](size_t begin, size_t end, int) {
      MatVecMlxF32(xs.RowAs<float>(0), w, out.Row(0), static_cast<int64_t>(begin),
                   static_cast<int64_t>(end));
    });
    return;
  }
  pool.ParallelForGrain(static_cast<size_t>(N), static_cast<size_t>(BlockedPanelWidth()),
                        [&](size_t begin, size_t end, int) {
    MatMulBlockedF32Mlx(xs, w, out, static_cast<int64_t>(begin), static_cast<int64_t>(end));
  });
}

}  // namespace proctor::ops::internal
#endif  // HWY_ONCE
