// Highway kernels of ops/attention_rows.h: query-key products and probability-weighted value
// sums for a few query rows, register-tiled over rows (scores) or rows and d (values).
#include "ops/attention_rows.h"

#include <algorithm>

#include <cstring>

#include "quant/mlx_quant.h"
#include "quant/segment_prefetch.h"
#include "quant/turbo_quant.h"
#include "util/error.h"
#include "util/half.h"

// Highway: HWY_TARGET_INCLUDE, then foreach_target.h, then highway.h and the -inl.h headers.
// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/attention_rows.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "quant/packed_codes-inl.h"
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace proctor::ops::internal {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;

int64_t FloatLanesImpl() { return static_cast<int64_t>(hn::Lanes(DF())); }

// Rows are read a short segment of long cache rows at a time, a stride the hardware prefetcher
// does not follow: the segment a few rows ahead is prefetched by hand, as far ahead as a memory
// latency of work (scores do rows x D FMAs per key, values only R x C vectors' per row).
constexpr int64_t kKeysAhead = 8;
constexpr int64_t kValuesAhead = 32;
inline void PrefetchSegment(const float* row, int64_t floats) {
  const auto* bytes = reinterpret_cast<const char*>(row);
  const int64_t n_bytes = floats * static_cast<int64_t>(sizeof(float));
  for (int64_t b = 0; b < n_bytes; b += 64) __builtin_prefetch(bytes + b);
  __builtin_prefetch(bytes + n_bytes - 1);
}

// out[r * stride] = the sum of acc[r]'s lanes for r < R. Eight-lane vectors on x86 sum eight (or
// four) accumulators at once in a tree of horizontal adds (lanes ((0+1)+(2+3))+((4+5)+(6+7))),
// sixteen-lane ones first add their halves; elsewhere each is reduced alone.
template <int R, class D>
HWY_INLINE void StoreSums(D d, const hn::Vec<D>* acc, float* out, int64_t stride) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
  if constexpr (hn::MaxLanes(D()) == 8 && (R == 8 || R == 4)) {
    alignas(32) float sums[8];
    const __m256 t0 = _mm256_hadd_ps(acc[0].raw, acc[1].raw);
    const __m256 t1 = _mm256_hadd_ps(acc[2].raw, acc[3].raw);
    const __m256 u0 = _mm256_hadd_ps(t0, t1);  // rows 0-3: lanes 0-3 | rows 0-3: lanes 4-7
    if constexpr (R == 8) {
      const __m256 t2 = _mm256_hadd_ps(acc[4].raw, acc[5].raw);
      const __m256 t3 = _mm256_hadd_ps(acc[6].raw, acc[7].raw);
      const __m256 u1 = _mm256_hadd_ps(t2, t3);
      _mm256_store_ps(sums, _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20),
                                          _mm256_permute2f128_ps(u0, u1, 0x31)));
    } else {
      _mm_store_ps(sums, _mm_add_ps(_mm256_castps256_ps128(u0), _mm256_extractf128_ps(u0, 1)));
    }
    for (int r = 0; r < R; ++r) out[r * stride] = sums[r];
    return;
  }
#endif
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
  // Sixteen lanes (AVX-512): each accumulator's halves added (lane i + lane i + 8), then the
  // eight-lane tree.
  if constexpr (hn::MaxLanes(D()) == 16 && (R == 8 || R == 4)) {
    const hn::Half<D> dh;
    hn::Vec<hn::Half<D>> halves[R];
    for (int r = 0; r < R; ++r)
      halves[r] = hn::Add(hn::LowerHalf(dh, acc[r]), hn::UpperHalf(dh, acc[r]));
    StoreSums<R>(dh, halves, out, stride);
    return;
  }
#endif
  for (int r = 0; r < R; ++r) out[r * stride] = hn::GetLane(hn::SumOfLanes(d, acc[r]));
}

// Key vectors of f32 rows read in place: Visit(j, f) calls f(d, the vector of elements d..) for
// the key's vectors in order.
class F32Keys {
 public:
  using D = DF;
  F32Keys(const float* k, int64_t stride, int64_t width, int64_t readable)
      : k_(k), stride_(stride), width_(width), readable_(readable) {}

  void Prefetch(int64_t j) const {
    if (j + kKeysAhead < readable_) PrefetchSegment(k_ + (j + kKeysAhead) * stride_, width_);
  }
  template <class F>
  HWY_INLINE void Visit(int64_t j, const F& f) const {
    const D d;
    const float* row = k_ + j * stride_;
    for (int64_t e = 0; e < width_; e += static_cast<int64_t>(hn::Lanes(d))) {
      f(e, hn::LoadU(d, row + e));
    }
  }

 private:
  const float* k_;
  int64_t stride_, width_, readable_;
};

// A coded key's vector of elements e .. e + Lanes(DF) - 1, from `make`, which decodes Lanes(D8)
// of them: itself where the two widths agree (AVX2), two decoded halves side by side where DF is
// twice as wide (AVX-512). Coded keys are DF wide as F32Keys' are, so each lane sums the same
// elements in the same order and the scores equal those over the decoded rows bit for bit.
template <class Make>
HWY_INLINE hn::Vec<DF> KeyVector(int64_t e, const Make& make) {
  constexpr size_t kCodes = hn::MaxLanes(quant::HWY_NAMESPACE::D8());
  constexpr size_t kLanes = hn::MaxLanes(DF());
  if constexpr (kLanes == kCodes) {
    return make(e);
  } else {
#if HWY_TARGET != HWY_SCALAR
    if constexpr (kLanes == 2 * kCodes) {
      return hn::Combine(DF(), make(e + static_cast<int64_t>(kCodes)), make(e));
    }
#endif
    HWY_ALIGN float lanes[kLanes];
    for (size_t k = 0; k < kLanes; k += kCodes) {
      hn::Store(make(e + static_cast<int64_t>(k)), quant::HWY_NAMESPACE::D8(), lanes + k);
    }
    return hn::Load(DF(), lanes);
  }
}

// Key vectors of coded keys, made in registers instead of a tile with the decoders' f32
// operations: scale * code + offset per group. Affine caches (mlx-lm's: 2-, 3-, 4- or 8-bit codes,
// an f32 scale and bias per group; DecodeMlxRowsSegment) and TurboQuant keys (2-, 4- or 8-bit
// codes, an fp16 scale and offset per group of 32; DecodeTurboRowsSegment).
class CodedKeys {
 public:
  using D = DF;
  CodedKeys(const quant::MlxQuantizedMatrix& m, int64_t s0, int64_t k0, int64_t width, int64_t n)
      : CodedKeys(m.packed, m.scales, m.biases, m.bits, m.group_size, m.packed.cols * 4, m.cols(),
                  s0, k0, width, n) {}
  CodedKeys(const quant::TurboRows& m, int64_t s0, int64_t k0, int64_t width, int64_t n)
      : CodedKeys(m.packed, m.scales, m.offsets, m.bits, quant::kTurboGroup,
                  static_cast<int64_t>(m.packed.cols), m.cols(), s0, k0, width, n) {}

  void Prefetch(int64_t j) const { prefetch_.Ahead(s0_, j, n_); }
  template <class F>
  HWY_INLINE void Visit(int64_t j, const F& f) const {
    const quant::HWY_NAMESPACE::D8 d8;
    const auto N = static_cast<int64_t>(hn::Lanes(D()));
    const int64_t row = s0_ + j;
    const uint8_t* codes = packed_.Row(row);
    const quant::HWY_NAMESPACE::ShiftedCodes shifted(codes, row_bytes_, bits_);
    for (int64_t g = k0_ / group_; g < (k0_ + width_) / group_; ++g) {
      const auto scale = hn::Set(d8, GroupValue(scales_, row, g));
      const auto offset = hn::Set(d8, GroupValue(offsets_, row, g));
      const auto decode = [&](int64_t e) HWY_ATTR {
        const auto code = bits_ == 8 ? quant::HWY_NAMESPACE::LoadCodesWord(codes, e) : shifted(e);
        return hn::Add(hn::Mul(scale, hn::ConvertTo(d8, code)), offset);
      };
      for (int64_t e = g * group_; e < (g + 1) * group_; e += N) f(e - k0_, KeyVector(e, decode));
    }
  }

 private:
  CodedKeys(const MatView& packed, const MatView& scales, const MatView& offsets, int bits,
            int64_t group, int64_t row_bytes, int64_t cols, int64_t s0, int64_t k0, int64_t width,
            int64_t n)
      : packed_(packed),
        scales_(scales),
        offsets_(offsets),
        bits_(bits),
        group_(group),
        row_bytes_(row_bytes),
        s0_(s0),
        k0_(k0),
        width_(width),
        n_(n),
        prefetch_(packed, scales, offsets, cols, k0, width) {}

  // Group g's scale or offset of `row`: stored as f32 (affine) or fp16 (TurboQuant), widened
  // exactly.
  static float GroupValue(const MatView& values, int64_t row, int64_t g) {
    if (values.type == DType::kF16) {
      uint16_t half;
      std::memcpy(&half, values.Row(row) + 2 * g, 2);
      return F16ToF32(half);
    }
    return values.RowAs<float>(row)[g];
  }

  MatView packed_, scales_, offsets_;
  int bits_;
  int64_t group_, row_bytes_, s0_, k0_, width_, n_;
  quant::SegmentPrefetcher prefetch_;
};

// R query rows (q, D floats apart) against key j: one accumulator per row.
template <int R, class Keys>
HWY_INLINE void ScoreKey(const float* q, int64_t D, const Keys& keys, int64_t j, float* scores,
                         int64_t scores_stride) {
  const typename Keys::D d;
  hn::Vec<decltype(d)> acc[R];
  for (int r = 0; r < R; ++r) acc[r] = hn::Zero(d);
  keys.Visit(j, [&](int64_t e, auto key) HWY_ATTR {
    for (int r = 0; r < R; ++r) acc[r] = hn::MulAdd(hn::LoadU(d, q + r * D + e), key, acc[r]);
  });
  StoreSums<R>(d, acc, scores + j, scores_stride);
}

// Every query row against keys [0, n): eight rows at a time, then four, two, one.
template <class Keys>
void ScoreKeys(const float* q, int64_t rows, int64_t D, const Keys& keys, int64_t n, float* scores,
               int64_t scores_stride) {
  for (int64_t j = 0; j < n; ++j) {
    keys.Prefetch(j);
    int64_t r = 0;
    for (; r + 8 <= rows; r += 8)
      ScoreKey<8>(q + r * D, D, keys, j, scores + r * scores_stride, scores_stride);
    if (r + 4 <= rows) {
      ScoreKey<4>(q + r * D, D, keys, j, scores + r * scores_stride, scores_stride);
      r += 4;
    }
    if (r + 2 <= rows) {
      ScoreKey<2>(q + r * D, D, keys, j, scores + r * scores_stride, scores_stride);
      r += 2;
    }
    if (r < rows) ScoreKey<1>(q + r * D, D, keys, j, scores + r * scores_stride, scores_stride);
  }
}

void ScoreFewRowsImpl(const float* q, int64_t rows, int64_t D, const float* k, int64_t k_stride,
                      int64_t n, int64_t readable, float* scores, int64_t scores_stride) {
  ScoreKeys(q, rows, D, F32Keys(k, k_stride, D, readable), n, scores, scores_stride);
}

void ScoreFewRowsAffineImpl(const float* q, int64_t rows, int64_t D,
                            const quant::MlxQuantizedMatrix& keys, int64_t s0, int64_t n,
                            int64_t k0, float* scores, int64_t scores_stride) {
  ScoreKeys(q, rows, D, CodedKeys(keys, s0, k0, D, n), n, scores, scores_stride);
}

void ScoreFewRowsTurboImpl(const float* q, int64_t rows, int64_t D, const quant::TurboRows& keys,
                           int64_t s0, int64_t n, int64_t k0, float* scores,
                           int64_t scores_stride) {
  ScoreKeys(q, rows, D, CodedKeys(keys, s0, k0, D, n), n, scores, scores_stride);
}

// out[R rows][C vectors from d] (+)= sum_j p[r][j] * v[j][d..]: R x C accumulators. With
// prefetch_floats > 0, that many floats of row j + kValuesAhead (if readable) are prefetched.
template <int R, int C>
HWY_INLINE void WeightTile(const float* p, int64_t p_stride, const float* v, int64_t v_stride,
                           int64_t n, float* out, int64_t out_stride, bool accumulate,
                           int64_t prefetch_floats, int64_t readable) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  hn::Vec<DF> acc[R][C];
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) {
      acc[r][c] = accumulate ? hn::LoadU(df, out + r * out_stride + c * N) : hn::Zero(df);
    }
  }
  for (int64_t j = 0; j < n; ++j) {
    if (prefetch_floats > 0 && j + kValuesAhead < readable) {
      PrefetchSegment(v + (j + kValuesAhead) * v_stride, prefetch_floats);
    }
    hn::Vec<DF> value[C];
    for (int c = 0; c < C; ++c) value[c] = hn::LoadU(df, v + j * v_stride + c * N);
    for (int r = 0; r < R; ++r) {
      const auto weight = hn::Set(df, p[r * p_stride + j]);
      for (int c = 0; c < C; ++c) acc[r][c] = hn::MulAdd(weight, value[c], acc[r][c]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) hn::StoreU(acc[r][c], df, out + r * out_stride + c * N);
  }
}

// R rows of out, all of D, two vectors at a time; the first pass over the rows prefetches them.
template <int R>
void WeightRowBlock(const float* p, int64_t p_stride, const float* v, int64_t v_stride, int64_t n,
                    int64_t D, float* out, int64_t out_stride, bool accumulate, bool first_pass,
                    int64_t readable) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(DF()));
  int64_t d = 0;
  for (; d + 2 * N <= D; d += 2 * N) {
    WeightTile<R, 2>(p, p_stride, v + d, v_stride, n, out + d, out_stride, accumulate,
                     first_pass && d == 0 ? D : 0, readable);
  }
  if (d < D) {
    WeightTile<R, 1>(p, p_stride, v + d, v_stride, n, out + d, out_stride, accumulate,
                     first_pass && d == 0 ? D : 0, readable);
  }
}

void WeightFewRowsImpl(const float* p, int64_t p_stride, int64_t rows, const float* v,
                       int64_t v_stride, int64_t n, int64_t readable, int64_t D, float* out,
                       int64_t out_stride, bool accumulate) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    WeightRowBlock<4>(p + r * p_stride, p_stride, v, v_stride, n, D, out + r * out_stride,
                      out_stride, accumulate, r == 0, readable);
  }
  const float* p_rest = p + r * p_stride;
  float* out_rest = out + r * out_stride;
  const bool first = r == 0;
  switch (rows - r) {
    case 3:
      WeightRowBlock<3>(p_rest, p_stride, v, v_stride, n, D, out_rest, out_stride, accumulate,
                        first, readable);
      break;
    case 2:
      WeightRowBlock<2>(p_rest, p_stride, v, v_stride, n, D, out_rest, out_stride, accumulate,
                        first, readable);
      break;
    case 1:
      WeightRowBlock<1>(p_rest, p_stride, v, v_stride, n, D, out_rest, out_stride, accumulate,
                        first, readable);
      break;
    default:
      break;
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace proctor::ops::internal
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace proctor::ops::internal {
HWY_EXPORT(FloatLanesImpl);
HWY_EXPORT(ScoreFewRowsImpl);
HWY_EXPORT(ScoreFewRowsAffineImpl);
HWY_EXPORT(ScoreFewRowsTurboImpl);
HWY_EXPORT(WeightFewRowsImpl);

bool FewRowsKernelsFit(int64_t head_dim) {
  const int64_t lanes = HWY_DYNAMIC_DISPATCH(FloatLanesImpl)();
  return head_dim > 0 && head_dim % lanes == 0;
}

void ScoreFewRows(const float* q, int64_t rows, int64_t D, const float* k, int64_t k_stride,
                  int64_t n, int64_t readable, float* scores, int64_t scores_stride) {
  HWY_DYNAMIC_DISPATCH(ScoreFewRowsImpl)
  (q, rows, D, k, k_stride, n, readable, scores, scores_stride);
}

bool AffineKeysScoredInPlace(const quant::MlxQuantizedMatrix& keys, int64_t head_dim) {
  return keys.mode == quant::MlxMode::kAffine && keys.scales.type == DType::kF32 &&
         keys.biases.type == DType::kF32 && (keys.bits == 8 || keys.bits <= 4) &&
         head_dim % keys.group_size == 0;
}

void ScoreFewRowsAffine(const float* q, int64_t rows, int64_t D,
                        const quant::MlxQuantizedMatrix& keys, int64_t s0, int64_t n, int64_t k0,
                        float* scores, int64_t scores_stride) {
  CHECK_MSG(AffineKeysScoredInPlace(keys, D), "affine keys of {} bits, group {}, head_dim {}",
            keys.bits, keys.group_size, D);
  CHECK_MSG(s0 >= 0 && s0 + n <= keys.rows() && k0 >= 0 && k0 % D == 0 && k0 + D <= keys.cols(),
            "rows [{}, {}) of {}, head at {} of {}", s0, s0 + n, keys.rows(), k0, keys.cols());
  HWY_DYNAMIC_DISPATCH(ScoreFewRowsAffineImpl)(q, rows, D, keys, s0, n, k0, scores, scores_stride);
}

bool TurboKeysScoredInPlace(const quant::TurboRows& keys, int64_t head_dim) {
  return keys.part == quant::TurboPart::kKeys && (keys.bits == 8 || keys.bits <= 4) &&
         head_dim % quant::kTurboGroup == 0;
}

void ScoreFewRowsTurbo(const float* q, int64_t rows, int64_t D, const quant::TurboRows& keys,
                       int64_t s0, int64_t n, int64_t k0, float* scores, int64_t scores_stride) {
  CHECK_MSG(TurboKeysScoredInPlace(keys, D), "TurboQuant keys of {} bits, head_dim {}", keys.bits,
            D);
  CHECK_MSG(s0 >= 0 && s0 + n <= keys.rows() && k0 >= 0 && k0 % D == 0 && k0 + D <= keys.cols(),
            "rows [{}, {}) of {}, head at {} of {}", s0, s0 + n, keys.rows(), k0, keys.cols());
  HWY_DYNAMIC_DISPATCH(ScoreFewRowsTurboImpl)(q, rows, D, keys, s0, n, k0, scores, scores_stride);
}

void WeightFewRows(const float* p, int64_t p_stride, int64_t rows, const float* v, int64_t v_stride,
                   int64_t n, int64_t readable, int64_t D, float* out, int64_t out_stride,
                   bool accumulate) {
  HWY_DYNAMIC_DISPATCH(WeightFewRowsImpl)
  (p, p_stride, rows, v, v_stride, n, readable, D, out, out_stride, accumulate);
}
}  // namespace proctor::ops::internal
#endif  // HWY_ONCE
