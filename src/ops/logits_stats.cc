// Highway kernels for logits_stats.h, compiled once per SIMD target (foreach_target), plus the
// scalar references (the top-k selection is in top_k.cc).
#include "ops/logits_stats.h"

// Highway: HWY_TARGET_INCLUDE, then foreach_target.h, then highway.h and the -inl.h headers.
// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/logits_stats.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/contrib/math/math-inl.h"
// clang-format on

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "util/error.h"

HWY_BEFORE_NAMESPACE();
namespace proctor::ops {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Elements summed in float32 before a block's sum is added to the float64 total.
constexpr int64_t kBlock = 512;

void RowStatsKernel(const float* HWY_RESTRICT x, int64_t n, RowStats* out) {
  const hn::ScalableTag<float> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const float kNegInf = -std::numeric_limits<float>::infinity();
  *out = RowStats{};
  if (n <= 0) return;

  // Pass 1: the max, and whether any element is NaN.
  auto vmax = hn::Set(d, kNegInf);
  auto nan_seen = hn::Zero(d);  // 1.0 in lanes that have seen a NaN
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    const auto v = hn::LoadU(d, x + i);
    vmax = hn::Max(vmax, v);
    nan_seen = hn::Or(nan_seen, hn::IfThenElseZero(hn::IsNaN(v), hn::Set(d, 1.0f)));
  }
  float max = hn::GetLane(hn::MaxOfLanes(d, vmax));
  bool has_nan = hn::GetLane(hn::MaxOfLanes(d, nan_seen)) != 0.0f;
  for (; i < n; ++i) {
    if (std::isnan(x[i])) has_nan = true;
    max = std::max(max, x[i]);
  }
  out->has_nan = has_nan;
  out->max = max;
  if (has_nan) return;

  // Pass 2: sum of exp(x - max) and the first index equal to max.
  const auto vm = hn::Set(d, max);
  int64_t argmax = -1;
  double total = 0;
  i = 0;
  while (i < n) {
    const int64_t block_end = std::min(n, i + kBlock);
    auto sum0 = hn::Zero(d);
    auto sum1 = hn::Zero(d);
    for (; i + 2 * N <= block_end; i += 2 * N) {
      const auto v0 = hn::LoadU(d, x + i);
      const auto v1 = hn::LoadU(d, x + i + N);
      if (argmax < 0) {
        const intptr_t f0 = hn::FindFirstTrue(d, hn::Eq(v0, vm));
        const intptr_t f1 = hn::FindFirstTrue(d, hn::Eq(v1, vm));
        if (f0 >= 0) {
          argmax = i + f0;
        } else if (f1 >= 0) {
          argmax = i + N + f1;
        }
      }
      sum0 = hn::Add(sum0, hn::Exp(d, hn::Sub(v0, vm)));
      sum1 = hn::Add(sum1, hn::Exp(d, hn::Sub(v1, vm)));
    }
    for (; i + N <= block_end; i += N) {
      const auto v = hn::LoadU(d, x + i);
      if (argmax < 0) {
        const intptr_t f = hn::FindFirstTrue(d, hn::Eq(v, vm));
        if (f >= 0) argmax = i + f;
      }
      sum0 = hn::Add(sum0, hn::Exp(d, hn::Sub(v, vm)));
    }
    if (i < block_end) {  // tail shorter than a vector: pad with -inf (exp gives 0)
      HWY_ALIGN float padded[hn::MaxLanes(d)];
      for (int64_t j = 0; j < N; ++j) padded[j] = i + j < block_end ? x[i + j] : kNegInf;
      const auto v = hn::Load(d, padded);
      if (argmax < 0) {
        const intptr_t f = hn::FindFirstTrue(d, hn::Eq(v, vm));
        if (f >= 0) argmax = i + f;
      }
      sum0 = hn::Add(sum0, hn::Exp(d, hn::Sub(v, vm)));
      i = block_end;
    }
    total += static_cast<double>(hn::GetLane(hn::SumOfLanes(d, hn::Add(sum0, sum1))));
  }
  out->argmax = argmax;
  out->log_sum_exp_shifted = static_cast<float>(std::log(total));
}

void TopKTermsKernel(const float* HWY_RESTRICT t, const int32_t* HWY_RESTRICT idx, int64_t k,
                     float T, const float* HWY_RESTRICT c, const RowStats* c_stats,
                     TopKTerms* out) {
  const hn::ScalableTag<float> d;
  const hn::RebindToSigned<decltype(d)> di;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const auto vT = hn::Set(d, T);
  const auto vcmax = hn::Set(d, c_stats->max);
  const auto vC = hn::Set(d, c_stats->log_sum_exp_shifted);
  const auto zero = hn::Zero(d);
  double kl = 0, p_mass = 0, q_mass = 0;
  int64_t i = 0;
  while (i < k) {
    const int64_t block_end = std::min(k, i + kBlock);
    auto acc_kl = zero, acc_p = zero, acc_q = zero;
    for (; i < block_end; i += N) {
      hn::Vec<decltype(d)> vt, vc;
      if (i + N <= block_end) {
        vt = hn::LoadU(d, t + i);
        vc = hn::GatherIndex(d, c, hn::LoadU(di, idx + i));
      } else {  // tail: padded lanes have t = c = -inf, so p = q = 0 and the term is 0
        HWY_ALIGN float tp[hn::MaxLanes(d)];
        HWY_ALIGN float cp[hn::MaxLanes(d)];
        for (int64_t j = 0; j < N; ++j) {
          const bool in = i + j < block_end;
          tp[j] = in ? t[i + j] : -std::numeric_limits<float>::infinity();
          cp[j] = in ? c[idx[i + j]] : -std::numeric_limits<float>::infinity();
        }
        vt = hn::Load(d, tp);
        vc = hn::Load(d, cp);
      }
      const auto log_p = hn::Sub(vt, vT);
      const auto p = hn::Exp(d, log_p);
      const auto log_q = hn::Sub(hn::Sub(vc, vcmax), vC);
      const auto q = hn::Exp(d, log_q);
      const auto term = hn::IfThenElseZero(hn::Gt(p, zero), hn::Mul(p, hn::Sub(log_p, log_q)));
      acc_kl = hn::Add(acc_kl, term);
      acc_p = hn::Add(acc_p, p);
      acc_q = hn::Add(acc_q, q);
    }
    i = block_end;
    kl += static_cast<double>(hn::GetLane(hn::SumOfLanes(d, acc_kl)));
    p_mass += static_cast<double>(hn::GetLane(hn::SumOfLanes(d, acc_p)));
    q_mass += static_cast<double>(hn::GetLane(hn::SumOfLanes(d, acc_q)));
  }
  *out = TopKTerms{kl, p_mass, q_mass};
}

}  // namespace HWY_NAMESPACE
}  // namespace proctor::ops
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace proctor::ops {

HWY_EXPORT(RowStatsKernel);
HWY_EXPORT(TopKTermsKernel);

RowStats ComputeRowStats(const float* x, int64_t n) {
  RowStats stats;
  HWY_DYNAMIC_DISPATCH(RowStatsKernel)(x, n, &stats);
  return stats;
}

RowStats ComputeRowStatsScalar(const float* x, int64_t n) {
  RowStats stats;
  if (n <= 0) return stats;
  stats.max = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(x[i])) {
      stats.has_nan = true;
      return stats;
    }
    stats.max = std::max(stats.max, x[i]);
  }
  for (int64_t i = 0; i < n; ++i) {  // the lowest index holding the max
    if (x[i] == stats.max) {
      stats.argmax = i;
      break;
    }
  }
  double total = 0;
  for (int64_t i = 0; i < n; ++i) total += std::exp(static_cast<double>(x[i]) - stats.max);
  stats.log_sum_exp_shifted = static_cast<float>(std::log(total));
  return stats;
}

TopKTerms ComputeTopKTerms(const float* t, const int32_t* idx, int64_t k, float T, const float* c,
                           const RowStats& c_stats) {
  TopKTerms terms;
  HWY_DYNAMIC_DISPATCH(TopKTermsKernel)(t, idx, k, T, c, &c_stats, &terms);
  return terms;
}

TopKTerms ComputeTopKTermsScalar(const float* t, const int32_t* idx, int64_t k, float T,
                                 const float* c, const RowStats& c_stats) {
  TopKTerms terms;
  for (int64_t j = 0; j < k; ++j) {
    const double log_p = static_cast<double>(t[j]) - T;
    const double p = std::exp(log_p);
    const double log_q =
        (static_cast<double>(c[idx[j]]) - c_stats.max) - c_stats.log_sum_exp_shifted;
    if (p > 0) terms.kl += p * (log_p - log_q);
    terms.teacher_mass += p;
    terms.candidate_mass += std::exp(log_q);
  }
  return terms;
}

}  // namespace proctor::ops
#endif  // HWY_ONCE
