// Highway kernel for sum_exp.h, compiled once per SIMD target (foreach_target), and its scalar
// reference.
#include "ops/sum_exp.h"

// As in ops/: AVX2, AVX3 (AVX-512) and the portable fallback only.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4)
#endif
// Highway: HWY_TARGET_INCLUDE, then foreach_target.h, then highway.h and the -inl.h headers.
// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/sum_exp.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/contrib/math/math-inl.h"
// clang-format on

#include <cmath>

HWY_BEFORE_NAMESPACE();
namespace proctor {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

double SumExpShiftedKernel(const float* HWY_RESTRICT x, int64_t n, float shift) {
  const hn::ScalableTag<double> d;          // float64 lanes
  const hn::Rebind<float, decltype(d)> df;  // as many float32 lanes, loaded then promoted
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const auto vshift = hn::Set(d, static_cast<double>(shift));
  auto sum0 = hn::Zero(d);
  auto sum1 = hn::Zero(d);
  int64_t i = 0;
  for (; i + 2 * N <= n; i += 2 * N) {
    const auto v0 = hn::PromoteTo(d, hn::LoadU(df, x + i));
    const auto v1 = hn::PromoteTo(d, hn::LoadU(df, x + i + N));
    sum0 = hn::Add(sum0, hn::Exp(d, hn::Sub(v0, vshift)));
    sum1 = hn::Add(sum1, hn::Exp(d, hn::Sub(v1, vshift)));
  }
  double total = hn::GetLane(hn::SumOfLanes(d, hn::Add(sum0, sum1)));
  for (; i < n; ++i) total += std::exp(static_cast<double>(x[i]) - static_cast<double>(shift));
  return total;
}

}  // namespace HWY_NAMESPACE
}  // namespace proctor
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace proctor {

HWY_EXPORT(SumExpShiftedKernel);

double SumExpShifted(const float* x, int64_t n, float shift) {
  return HWY_DYNAMIC_DISPATCH(SumExpShiftedKernel)(x, n, shift);
}

double SumExpShiftedScalar(const float* x, int64_t n, float shift) {
  double total = 0;
  for (int64_t i = 0; i < n; ++i) {
    total += std::exp(static_cast<double>(x[i]) - static_cast<double>(shift));
  }
  return total;
}

}  // namespace proctor
#endif  // HWY_ONCE
