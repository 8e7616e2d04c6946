// Transcendental row kernels (Highway Exp, Tanh): masked softmax and soft-capping for Attention,
// SiLU- and GELU-gating for MLPs.
#include <cfloat>
#include <cmath>

#include "ops/matmul_kernels.h"

// Highway: HWY_TARGET_INCLUDE, then foreach_target.h, then highway.h and the -inl.h headers.
// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/softmax.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace proctor::ops::internal {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void MaskedSoftmaxRowImpl(float* row, int64_t n, int64_t begin, int64_t end, float scale) {
  const hn::ScalableTag<float> df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  for (int64_t i = 0; i < begin; ++i) row[i] = 0.0f;
  for (int64_t i = end; i < n; ++i) row[i] = 0.0f;
  float* x = row + begin;
  const int64_t len = end - begin;
  const auto vscale = hn::Set(df, scale);
  // Pass 1: scale and max (lane-wise, then reduced: fixed order).
  auto vmax = hn::Set(df, -INFINITY);
  int64_t i = 0;
  for (; i + N <= len; i += N) {
    const auto v = hn::Mul(hn::LoadU(df, x + i), vscale);
    hn::StoreU(v, df, x + i);
    vmax = hn::Max(vmax, v);
  }
  float max = hn::GetLane(hn::MaxOfLanes(df, vmax));
  for (; i < len; ++i) {
    x[i] *= scale;
    max = std::max(max, x[i]);
  }
  // Pass 2: exp(x - max) and the sum.
  const auto vmax_all = hn::Set(df, max);
  auto vsum = hn::Zero(df);
  i = 0;
  for (; i + N <= len; i += N) {
    const auto e = hn::Exp(df, hn::Sub(hn::LoadU(df, x + i), vmax_all));
    hn::StoreU(e, df, x + i);
    vsum = hn::Add(vsum, e);
  }
  float sum = hn::GetLane(hn::SumOfLanes(df, vsum));
  for (; i < len; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += x[i];
  }
  // Pass 3: normalise (probabilities, as Hugging Face computes them before P · V). Subnormal
  // probabilities (below FLT_MIN, 1.2e-38) become 0: their products with V lie far below the f32
  // resolution of the output (a weighted mean of V with weights summing to 1), and subnormal
  // operands make the P · V FMAs take microcode assists (measured: P · V 20x slower on random
  // weights, whose scores spread widely).
  const float inv = 1.0f / sum;
  const auto vinv = hn::Set(df, inv);
  const auto smallest = hn::Set(df, FLT_MIN);
  i = 0;
  for (; i + N <= len; i += N) {
    const auto p = hn::Mul(hn::LoadU(df, x + i), vinv);
    hn::StoreU(hn::IfThenZeroElse(hn::Lt(p, smallest), p), df, x + i);
  }
  for (; i < len; ++i) {
    x[i] *= inv;
    if (x[i] < FLT_MIN) x[i] = 0.0f;
  }
}

void SiluMulRowImpl(float* gate, const float* up, int64_t n) {
  const hn::ScalableTag<float> df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const auto one = hn::Set(df, 1.0f);
  // Highway's Exp is valid up to +104; for g < -88, silu(g) = g * e^g is below 1e-36: use 0.
  const auto max_arg = hn::Set(df, 88.0f);
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    const auto g = hn::LoadU(df, gate + i);
    const auto neg = hn::Neg(g);
    const auto sig = hn::Div(g, hn::Add(one, hn::Exp(df, hn::Min(neg, max_arg))));
    const auto silu = hn::IfThenZeroElse(hn::Gt(neg, max_arg), sig);
    hn::StoreU(hn::Mul(silu, hn::LoadU(df, up + i)), df, gate + i);
  }
  for (; i < n; ++i) gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

// Highway's Tanh is specified for finite arguments; beyond +-10 tanh is +-1 in f32 anyway.
constexpr float kTanhSaturates = 10.0f;

void SoftCapRowImpl(float* x, int64_t n, float scale, float cap) {
  const hn::ScalableTag<float> df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const auto vscale = hn::Set(df, scale), vcap = hn::Set(df, cap);
  const auto lo = hn::Set(df, -kTanhSaturates), hi = hn::Set(df, kTanhSaturates);
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    const auto v = hn::Clamp(hn::Div(hn::Mul(hn::LoadU(df, x + i), vscale), vcap), lo, hi);
    hn::StoreU(hn::Mul(hn::Tanh(df, v), vcap), df, x + i);
  }
  for (; i < n; ++i) x[i] = std::tanh(x[i] * scale / cap) * cap;
}

// gelu_tanh(g) = 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3))), in torch's order of operations.
void GeluTanhMulRowImpl(float* gate, const float* up, int64_t n) {
  const hn::ScalableTag<float> df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const auto beta = hn::Set(df, kGeluTanhBeta), kappa = hn::Set(df, kGeluTanhKappa);
  const auto half = hn::Set(df, 0.5f), one = hn::Set(df, 1.0f);
  const auto lo = hn::Set(df, -kTanhSaturates), hi = hn::Set(df, kTanhSaturates);
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    const auto g = hn::LoadU(df, gate + i);
    const auto cube = hn::Mul(hn::Mul(g, g), g);
    const auto inner = hn::Clamp(hn::Mul(beta, hn::Add(g, hn::Mul(kappa, cube))), lo, hi);
    const auto gelu = hn::Mul(hn::Mul(half, g), hn::Add(one, hn::Tanh(df, inner)));
    hn::StoreU(hn::Mul(gelu, hn::LoadU(df, up + i)), df, gate + i);
  }
  for (; i < n; ++i) gate[i] = GeluTanh(gate[i]) * up[i];
}

}  // namespace HWY_NAMESPACE
}  // namespace proctor::ops::internal
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace proctor::ops::internal {
HWY_EXPORT(MaskedSoftmaxRowImpl);
HWY_EXPORT(SiluMulRowImpl);
HWY_EXPORT(SoftCapRowImpl);
HWY_EXPORT(GeluTanhMulRowImpl);
void SoftCapRow(float* x, int64_t n, float scale, float cap) {
  HWY_DYNAMIC_DISPATCH(SoftCapRowImpl)(x, n, scale, cap);
}
void GeluTanhMulRow(float* gate, const float* up, int64_t n) {
  HWY_DYNAMIC_DISPATCH(GeluTanhMulRowImpl)(gate, up, n);
}
void SiluMulRow(float* gate, const float* up, int64_t n) {
  HWY_DYNAMIC_DISPATCH(SiluMulRowImpl)(gate, up, n);
}
void MaskedSoftmaxRow(float* row, int64_t n, int64_t begin, int64_t end, float scale) {
  HWY_DYNAMIC_DISPATCH(MaskedSoftmaxRowImpl)(row, n, begin, end, scale);
}
}  // namespace proctor::ops::internal
#endif  // HWY_ONCE
