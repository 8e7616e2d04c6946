// Highway kernels of ops/attention_rows.h: query-key products and probability-weighted value
// sums for a few query rows, register-tiled over rows (scores) or rows and d (values); coded keys
// and values made in registers from their codes (CodedRows).
#include "ops/attention_rows.h"

#include <algorithm>

#include <cstring>
#include <type_traits>

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
// the key's vectors in order. Nothing to fill: all rows at once.
class F32Keys {
 public:
  using D = DF;
  static constexpr int64_t kRowsPerFill = int64_t{1} << 62;
  F32Keys(const float* k, int64_t stride, int64_t width, int64_t readable)
      : k_(k), stride_(stride), width_(width), readable_(readable) {}

  void Fill(int64_t /*j0*/, int64_t /*count*/) {}
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

// Group g's scale or offset of a coded cache's `row`: stored as f32 (affine) or fp16
// (TurboQuant), widened exactly (on x86 from AVX2 up by F16C's vcvtph2ps, whose results equal
// F16ToF32's: half_test.cc).
HWY_INLINE float GroupValue(const MatView& values, int64_t row, int64_t g) {
  if (values.type == DType::kF16) {
    uint16_t half;
    std::memcpy(&half, values.Row(row) + 2 * g, 2);
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
    return _cvtsh_ss(half);
#else
    return F16ToF32(half);
#endif
  }
  return values.RowAs<float>(row)[g];
}

// How a coded row's elements are made from its codes, as its tile decoder makes them: affine
// rows (mlx-lm's cache: an f32 scale and bias per group; DecodeMlxRowsSegment) and TurboQuant
// keys (an fp16 scale and offset per group of 32) as scale * code + offset, TurboQuant values as
// scale * level[code], still rotated (DecodeTurboRowsSegment).
enum class CodeForm {
  kBytes,    // 8-bit codes: scale * code + offset
  kShifted,  // 2-, 3- or 4-bit codes: the same
  kLevels,   // 2-, 3- or 4-bit TurboQuant values: scale * level[code]
};

// Rows s0 .. s0 + n - 1 of a coded cache, the head at columns [k0, k0 + width): a row's vector of
// elements made in registers with its decoder's f32 operations, instead of a tile. The group
// scales (and offsets) of up to kRowsPerFill rows are widened at a time into tables (Fill), so a
// vector costs its codes' load and the decode.
template <CodeForm kForm>
class CodedRows {
 public:
  using D = DF;
  static constexpr int64_t kRowsPerFill = 64;

  CodedRows(const quant::MlxQuantizedMatrix& m, int64_t s0, int64_t k0, int64_t width, int64_t n)
      : CodedRows(m.packed, m.scales, m.biases, m.bits, m.group_size, m.packed.cols * 4, m.cols(),
                  s0, k0, width, n, nullptr) {}
  CodedRows(const quant::TurboRows& m, int64_t s0, int64_t k0, int64_t width, int64_t n)
      : CodedRows(
            m.packed, m.scales, m.offsets, m.bits, quant::kTurboGroup,
            static_cast<int64_t>(m.packed.cols), m.cols(), s0, k0, width, n,
            kForm == CodeForm::kLevels ? quant::internal::TurboValueLevels(m.bits) : nullptr) {}

  // Widens the group scales and offsets of rows j0 .. j0 + count - 1 (count <= kRowsPerFill).
  void Fill(int64_t j0, int64_t count) {
    j0_ = j0;
    for (int64_t j = 0; j < count; ++j) {
      for (int64_t g = 0; g < groups_; ++g) {
        scale_[j * groups_ + g] = GroupValue(scales_, s0_ + j0 + j, g0_ + g);
        if constexpr (kForm != CodeForm::kLevels) {
          offset_[j * groups_ + g] = GroupValue(offsets_, s0_ + j0 + j, g0_ + g);
        }
      }
    }
  }
  void Prefetch(int64_t j) const { prefetch_.Ahead(s0_, j, n_); }

  // Elements e .. e + Lanes(DF) - 1 of the head (in its group g) in row j (filled).
  HWY_INLINE hn::Vec<DF> Vector(int64_t j, int64_t g, int64_t e) const {
    const quant::HWY_NAMESPACE::D8 d8;
    const uint8_t* codes = packed_.Row(s0_ + j);
    const int64_t slot = (j - j0_) * groups_ + g;
    const auto scale = hn::Set(d8, scale_[slot]);
    const auto make = [&](int64_t element) HWY_ATTR {
      if constexpr (kForm == CodeForm::kBytes) {
        const auto code = quant::HWY_NAMESPACE::LoadCodesWord(codes, element);
        return hn::Add(hn::Mul(scale, hn::ConvertTo(d8, code)), hn::Set(d8, offset_[slot]));
      } else {
        const auto code = quant::HWY_NAMESPACE::ShiftedCodes(codes, row_bytes_, bits_)(element);
        if constexpr (kForm == CodeForm::kShifted) {
          return hn::Add(hn::Mul(scale, hn::ConvertTo(d8, code)), hn::Set(d8, offset_[slot]));
        } else {
          return hn::Mul(scale, lookup_(code));
        }
      }
    };
    return KeyVector(k0_ + e, make);
  }
  // f(e, the vector of elements e ..) for the head's vectors of row j in order (Keys' interface).
  template <class F>
  HWY_INLINE void Visit(int64_t j, const F& f) const {
    const auto N = static_cast<int64_t>(hn::Lanes(DF()));
    for (int64_t g = 0; g < groups_; ++g) {
      for (int64_t e = g * group_; e < (g + 1) * group_; e += N) f(e, Vector(j, g, e));
    }
  }
  int64_t group() const { return group_; }

 private:
  CodedRows(const MatView& packed, const MatView& scales, const MatView& offsets, int bits,
            int64_t group, int64_t row_bytes, int64_t cols, int64_t s0, int64_t k0, int64_t width,
            int64_t n, const float* levels)
      : packed_(packed),
        scales_(scales),
        offsets_(offsets),
        bits_(bits),
        group_(group),
        row_bytes_(row_bytes),
        s0_(s0),
        k0_(k0),
        n_(n),
        g0_(k0 / group),
        groups_(width / group),
        lookup_(levels, bits),
        prefetch_(packed, scales, offsets, cols, k0, width) {}

  struct NoLookup {
    NoLookup(const float* /*levels*/, int /*bits*/) {}
  };
  using Lookup =
      std::conditional_t<kForm == CodeForm::kLevels, quant::HWY_NAMESPACE::LevelLookup, NoLookup>;

  MatView packed_, scales_, offsets_;
  int bits_;
  int64_t group_, row_bytes_, s0_, k0_, n_, g0_, groups_, j0_ = 0;
  Lookup lookup_;
  quant::SegmentPrefetcher prefetch_;
  float scale_[kRowsPerFill * kMaxCodedGroups];
  float offset_[kForm == CodeForm::kLevels ? 1 : kRowsPerFill * kMaxCodedGroups];
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

// Every query row against keys [0, n): eight rows at a time, then four, two, one, a fill of keys
// at a time.
template <class Keys>
void ScoreKeys(const float* q, int64_t rows, int64_t D, Keys&& keys, int64_t n, float* scores,
               int64_t scores_stride) {
  for (int64_t j = 0; j < n; ++j) {
    if (j % keys.kRowsPerFill == 0) keys.Fill(j, std::min(keys.kRowsPerFill, n - j));
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

// Keys of an affine cache or TurboQuant keys: 8-bit codes as bytes, else shifted out.
template <class Matrix>
void ScoreCodedKeys(const float* q, int64_t rows, int64_t D, const Matrix& keys, int64_t s0,
                    int64_t n, int64_t k0, float* scores, int64_t scores_stride) {
  if (keys.bits == 8) {
    ScoreKeys(q, rows, D, CodedRows<CodeForm::kBytes>(keys, s0, k0, D, n), n, scores,
              scores_stride);
  } else {
    ScoreKeys(q, rows, D, CodedRows<CodeForm::kShifted>(keys, s0, k0, D, n), n, scores,
              scores_stride);
  }
}

void ScoreFewRowsAffineImpl(const float* q, int64_t rows, int64_t D,
                            const quant::MlxQuantizedMatrix& keys, int64_t s0, int64_t n,
                            int64_t k0, float* scores, int64_t scores_stride) {
  ScoreCodedKeys(q, rows, D, keys, s0, n, k0, scores, scores_stride);
}

void ScoreFewRowsTurboImpl(const float* q, int64_t rows, int64_t D, const quant::TurboRows& keys,
                           int64_t s0, int64_t n, int64_t k0, float* scores,
                           int64_t scores_stride) {
  ScoreCodedKeys(q, rows, D, keys, s0, n, k0, scores, scores_stride);
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

// out[R rows][D] (+)= sum over j in [j0, j0 + n), in order, of p[r][j] * value row j, a vector of
// elements at a time (one FMA chain per output, as WeightTile's): each value vector is made once
// for the R rows. The pass over the first vector prefetches the rows ahead when `prefetch`.
template <int R, class Values>
void WeightCodedRows(const float* p, int64_t p_stride, const Values& values, int64_t j0, int64_t n,
                     int64_t D, float* out, int64_t out_stride, bool accumulate, bool prefetch) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  for (int64_t e = 0; e < D; e += N) {
    const int64_t g = e / values.group();
    hn::Vec<DF> acc[R];
    for (int r = 0; r < R; ++r) {
      acc[r] = accumulate ? hn::LoadU(df, out + r * out_stride + e) : hn::Zero(df);
    }
    for (int64_t j = j0; j < j0 + n; ++j) {
      if (prefetch && e == 0) values.Prefetch(j);
      const auto value = values.Vector(j, g, e);
      for (int r = 0; r < R; ++r) {
        acc[r] = hn::MulAdd(hn::Set(df, p[r * p_stride + j]), value, acc[r]);
      }
    }
    for (int r = 0; r < R; ++r) hn::StoreU(acc[r], df, out + r * out_stride + e);
  }
}

// WeightFewRows over coded value rows: every query row, eight at a time, then four, two, one, a
// fill of rows at a time.
template <class Values>
void WeightCodedValues(const float* p, int64_t p_stride, int64_t rows, Values& values, int64_t n,
                       int64_t D, float* out, int64_t out_stride, bool accumulate) {
  for (int64_t j0 = 0; j0 < n; j0 += Values::kRowsPerFill) {
    const int64_t count = std::min(Values::kRowsPerFill, n - j0);
    values.Fill(j0, count);
    const bool sum_onto = accumulate || j0 > 0;
    int64_t r = 0;
    for (; r + 8 <= rows; r += 8) {
      WeightCodedRows<8>(p + r * p_stride, p_stride, values, j0, count, D, out + r * out_stride,
                         out_stride, sum_onto, r == 0);
    }
    if (r + 4 <= rows) {
      WeightCodedRows<4>(p + r * p_stride, p_stride, values, j0, count, D, out + r * out_stride,
                         out_stride, sum_onto, r == 0);
      r += 4;
    }
    if (r + 2 <= rows) {
      WeightCodedRows<2>(p + r * p_stride, p_stride, values, j0, count, D, out + r * out_stride,
                         out_stride, sum_onto, r == 0);
      r += 2;
    }
    if (r < rows) {
      WeightCodedRows<1>(p + r * p_stride, p_stride, values, j0, count, D, out + r * out_stride,
                         out_stride, sum_onto, r == 0);
    }
  }
}

void WeightFewRowsAffineImpl(const float* p, int64_t p_stride, int64_t rows,
                             const quant::MlxQuantizedMatrix& values, int64_t s0, int64_t n,
                             int64_t k0, int64_t D, float* out, int64_t out_stride,
                             bool accumulate) {
  if (values.bits == 8) {
    CodedRows<CodeForm::kBytes> coded(values, s0, k0, D, n);
    WeightCodedValues(p, p_stride, rows, coded, n, D, out, out_stride, accumulate);
  } else {
    CodedRows<CodeForm::kShifted> coded(values, s0, k0, D, n);
    WeightCodedValues(p, p_stride, rows, coded, n, D, out, out_stride, accumulate);
  }
}

void WeightFewRowsTurboImpl(const float* p, int64_t p_stride, int64_t rows,
                            const quant::TurboRows& values, int64_t s0, int64_t n, int64_t k0,
                            int64_t D, float* out, int64_t out_stride, bool accumulate) {
  CodedRows<CodeForm::kLevels> coded(values, s0, k0, D, n);
  WeightCodedValues(p, p_stride, rows, coded, n, D, out, out_stride, accumulate);
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
HWY_EXPORT(WeightFewRowsAffineImpl);
HWY_EXPORT(WeightFewRowsTurboImpl);

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
         head_dim % keys.group_size == 0 && head_dim / keys.group_size <= kMaxCodedGroups;
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
         head_dim % quant::kTurboGroup == 0 && head_dim / quant::kTurboGroup <= kMaxCodedGroups;
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

bool AffineValuesWeightedInPlace(const quant::MlxQuantizedMatrix& values, int64_t head_dim) {
  return AffineKeysScoredInPlace(values, head_dim);
}

void WeightFewRowsAffine(const float* p, int64_t p_stride, int64_t rows,
                         const quant::MlxQuantizedMatrix& values, int64_t s0, int64_t n, int64_t k0,
                         int64_t D, float* out, int64_t out_stride, bool accumulate) {
  CHECK_MSG(AffineValuesWeightedInPlace(values, D) && FewRowsKernelsFit(D),
            "affine values of {} bits, group {}, head_dim {}", values.bits, values.group_size, D);
  CHECK_MSG(s0 >= 0 && s0 + n <= values.rows() && k0 >= 0 && k0 % D == 0 && k0 + D <= values.cols(),
            "rows [{}, {}) of {}, head at {} of {}", s0, s0 + n, values.rows(), k0, values.cols());
  HWY_DYNAMIC_DISPATCH(WeightFewRowsAffineImpl)
  (p, p_stride, rows, values, s0, n, k0, D, out, out_stride, accumulate);
}

bool TurboValuesWeightedInPlace(const quant::TurboRows& values, int64_t head_dim) {
  return values.part == quant::TurboPart::kValues && values.bits <= 4 &&
         head_dim % quant::kTurboGroup == 0 && head_dim / quant::kTurboGroup <= kMaxCodedGroups;
}

void WeightFewRowsTurbo(const float* p, int64_t p_stride, int64_t rows,
                        const quant::TurboRows& values, int64_t s0, int64_t n, int64_t k0,
                        int64_t D, float* out, int64_t out_stride, bool accumulate) {
  CHECK_MSG(TurboValuesWeightedInPlace(values, D) && FewRowsKernelsFit(D),
            "TurboQuant values of {} bits, head_dim {}", values.bits, D);
  CHECK_MSG(s0 >= 0 && s0 + n <= values.rows() && k0 >= 0 && k0 % D == 0 && k0 + D <= values.cols(),
            "rows [{}, {}) of {}, head at {} of {}", s0, s0 + n, values.rows(), k0, values.cols());
  HWY_DYNAMIC_DISPATCH(WeightFewRowsTurboImpl)
  (p, p_stride, rows, values, s0, n, k0, D, out, out_stride, accumulate);
}
}  // namespace proctor::ops::internal
#endif  // HWY_ONCE
