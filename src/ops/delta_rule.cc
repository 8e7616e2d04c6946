// The gated delta rule (ops/delta_rule.h): Highway row kernels for the recurrence and the chunked
// form's triangular solve, the chunked form on the f32 GEMM kernel, and the double reference.
#include "ops/delta_rule.h"

#include <algorithm>
#include <cmath>

#include "ops/matmul_kernels.h"
#include "util/error.h"

// Highway: HWY_TARGET_INCLUDE, then foreach_target.h, then highway.h and the -inl.h headers.
// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/delta_rule.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/contrib/math/math-inl.h"
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace proctor::ops {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;

// acc[j] += c * x[j], j < n.
void AxpyRowImpl(float c, const float* x, float* acc, int64_t n) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const auto vc = hn::Set(df, c);
  int64_t j = 0;
  for (; j + N <= n; j += N) {
    hn::StoreU(hn::MulAdd(vc, hn::LoadU(df, x + j), hn::LoadU(df, acc + j)), df, acc + j);
  }
  for (; j < n; ++j) acc[j] += c * x[j];
}

// row[m] *= exp(ci - c[m]), m < n: the decay between position m and position i of a chunk.
void ScaleByDecayRowImpl(float ci, const float* c, int64_t n, float* row) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const auto vci = hn::Set(df, ci);
  int64_t m = 0;
  for (; m + N <= n; m += N) {
    const auto decay = hn::Exp(df, hn::Sub(vci, hn::LoadU(df, c + m)));
    hn::StoreU(hn::Mul(hn::LoadU(df, row + m), decay), df, row + m);
  }
  for (; m < n; ++m) row[m] *= std::exp(ci - c[m]);
}

// One token of the recurrence on state [dk, dv]: two passes over the state's rows.
//   memory = S^T k (before the decay), delta = (v - decay * memory) * beta,
//   S = decay * S + k delta^T and out = S^T q in the second pass.
// memory and delta share `row` (dv floats); out may be v.
void RecurrentTokenImpl(const float* q, const float* k, const float* v, float beta, float decay,
                        int64_t dk, int64_t dv, float* state, float* row, float* out) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  std::fill(row, row + dv, 0.0f);
  for (int64_t i = 0; i < dk; ++i) AxpyRowImpl(k[i], state + i * dv, row, dv);
  for (int64_t j = 0; j < dv; ++j) row[j] = (v[j] - decay * row[j]) * beta;  // delta
  std::fill(out, out + dv, 0.0f);
  const auto vdecay = hn::Set(df, decay);
  for (int64_t i = 0; i < dk; ++i) {
    float* s = state + i * dv;
    const auto ki = hn::Set(df, k[i]), qi = hn::Set(df, q[i]);
    int64_t j = 0;
    for (; j + N <= dv; j += N) {
      const auto updated =
          hn::MulAdd(ki, hn::LoadU(df, row + j), hn::Mul(hn::LoadU(df, s + j), vdecay));
      hn::StoreU(updated, df, s + j);
      hn::StoreU(hn::MulAdd(qi, updated, hn::LoadU(df, out + j)), df, out + j);
    }
    for (; j < dv; ++j) {
      s[j] = s[j] * decay + k[i] * row[j];
      out[j] += q[i] * s[j];
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace proctor::ops
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace proctor::ops {
HWY_EXPORT(AxpyRowImpl);
HWY_EXPORT(RecurrentTokenImpl);
HWY_EXPORT(ScaleByDecayRowImpl);

namespace {

void CheckHead(const DeltaRuleHead& head) {
  CHECK(head.tokens >= 0 && head.dk > 0 && head.dv > 0);
  CHECK(head.qk_stride >= 0 && head.v_stride >= 0 && head.gate_stride >= 0);
}

int64_t PanelPadded(int64_t n) {
  const int64_t panel = internal::BlockedPanelWidth();
  return (n + panel - 1) / panel * panel;
}

// DeltaRuleChunked's buffers inside the scratch, for (dk, dv). Widths used as the GEMM's right
// operand are padded to the panel width (rows readable that far, pads kept at zero). The layout
// is laid out once: from offset 0 it gives the floats the scratch needs (`floats`), from the
// scratch's base the buffers.
struct ChunkBuffers {
  static constexpr int64_t C = kDeltaRuleChunk;
  int64_t dk, dv, dkp, dvp, x_stride, floats = 0;
  float *cum, *k_t, *k_beta, *system, *x, *scores, *q_decayed, *state, *product, *product2,
      *k_decayed_t;

  // base == nullptr: only `floats` is meaningful.
  ChunkBuffers(int64_t dk_in, int64_t dv_in, float* base)
      : dk(dk_in),
        dv(dv_in),
        dkp(PanelPadded(dk_in)),
        dvp(PanelPadded(dv_in)),
        x_stride(dvp + dkp) {
    auto take = [&](int64_t n) {
      float* at = base == nullptr ? nullptr : base + floats;
      floats += n;
      return at;
    };
    cum = take(C);
    k_t = take(dk * C);        // [dk, C]: keys of the chunk, transposed
    k_beta = take(C * dk);     // [C, dk]
    system = take(C * C);      // [C, C]: L, strictly lower
    x = take(C * x_stride);    // [C, dvp | dkp]: V beta | K beta exp(c), solved in place
    scores = take(C * C);      // [C, C]: decayed causal Q K^T
    q_decayed = take(C * dk);  // [C, dk]
    state = take(dk * dvp);    // [dk, dvp]
    product = take(std::max(C, dk) * dvp);
    product2 = take(C * dvp);
    k_decayed_t = take(dk * C);  // [dk, C]
  }
};

// One chunk of L tokens starting at token t0; buf.state holds S.
void ProcessChunk(const DeltaRuleHead& head, int64_t t0, int64_t L, ChunkBuffers& buf, float* out,
                  int64_t out_stride) {
  constexpr int64_t C = kDeltaRuleChunk;
  const int64_t dk = head.dk, dv = head.dv, xs = buf.x_stride;
  auto q_row = [&](int64_t i) { return head.q + (t0 + i) * head.qk_stride; };
  auto k_row = [&](int64_t i) { return head.k + (t0 + i) * head.qk_stride; };
  auto beta = [&](int64_t i) { return head.beta[(t0 + i) * head.gate_stride]; };

  float* c = buf.cum;
  float sum = 0.0f;
  for (int64_t i = 0; i < L; ++i) c[i] = sum += head.g[(t0 + i) * head.gate_stride];

  for (int64_t i = 0; i < L; ++i) {
    const float* k = k_row(i);
    const float b = beta(i), from_start = std::exp(c[i]);
    const float* v = head.v + (t0 + i) * head.v_stride;
    float* x = buf.x + i * xs;
    for (int64_t d = 0; d < dk; ++d) {
      buf.k_t[d * C + i] = k[d];
      buf.k_beta[i * dk + d] = k[d] * b;
      x[buf.dvp + d] = k[d] * b * from_start;
    }
    for (int64_t j = 0; j < dv; ++j) x[j] = v[j] * b;
    for (int64_t d = 0; d < dk; ++d) buf.q_decayed[i * dk + d] = q_row(i)[d] * from_start;
  }
  for (int64_t i = L; i < C; ++i) {
    for (int64_t d = 0; d < dk; ++d) buf.k_t[d * C + i] = 0.0f;
  }

  // (I + L) X = [V beta, K beta exp(c)] by forward substitution: X_i -= L[i][m] X_m, m < i.
  internal::GemmF32(buf.k_beta, dk, L, dk, buf.k_t, C, L, buf.system, C);
  for (int64_t i = 1; i < L; ++i) {
    float* l = buf.system + i * C;
    HWY_DYNAMIC_DISPATCH(ScaleByDecayRowImpl)(c[i], c, i, l);
    float* x = buf.x + i * xs;
    for (int64_t m = 0; m < i; ++m) HWY_DYNAMIC_DISPATCH(AxpyRowImpl)(-l[m], buf.x + m * xs, x, xs);
  }
  // X: the new values U ([L, dv] at column 0) and the decayed keys W ([L, dk] at column dvp).
  const float* w = buf.x + buf.dvp;

  // Causal scores within the chunk: (q_i . k_m) exp(c_i - c_m) for m <= i.
  internal::GemmF32(head.q + t0 * head.qk_stride, head.qk_stride, L, dk, buf.k_t, C, L, buf.scores,
                    C);
  for (int64_t i = 0; i < L; ++i) {
    float* s = buf.scores + i * C;
    HWY_DYNAMIC_DISPATCH(ScaleByDecayRowImpl)(c[i], c, i + 1, s);
    for (int64_t m = i + 1; m < L; ++m) s[m] = 0.0f;
  }

  // V' = U - W S (in place of U).
  internal::GemmF32(w, xs, L, dk, buf.state, buf.dvp, dv, buf.product, buf.dvp);
  for (int64_t i = 0; i < L; ++i) {
    float* row = buf.x + i * xs;
    for (int64_t j = 0; j < dv; ++j) row[j] -= buf.product[i * buf.dvp + j];
  }

  // O = (Q exp(c)) S + scores V'.
  internal::GemmF32(buf.q_decayed, dk, L, dk, buf.state, buf.dvp, dv, buf.product, buf.dvp);
  internal::GemmF32(buf.scores, C, L, L, buf.x, xs, dv, buf.product2, buf.dvp);
  for (int64_t i = 0; i < L; ++i) {
    float* o = out + (t0 + i) * out_stride;
    for (int64_t j = 0; j < dv; ++j)
      o[j] = buf.product[i * buf.dvp + j] + buf.product2[i * buf.dvp + j];
  }

  // S = exp(c_last) S + (K exp(c_last - c))^T V'.
  const float last = c[L - 1];
  float to_last[C];
  for (int64_t i = 0; i < L; ++i) to_last[i] = std::exp(last - c[i]);
  for (int64_t d = 0; d < dk; ++d) {
    for (int64_t i = 0; i < L; ++i) buf.k_decayed_t[d * C + i] = buf.k_t[d * C + i] * to_last[i];
  }
  internal::GemmF32(buf.k_decayed_t, C, dk, L, buf.x, xs, dv, buf.product, buf.dvp);
  const float chunk_decay = std::exp(last);
  for (int64_t d = 0; d < dk; ++d) {
    float* s = buf.state + d * buf.dvp;
    const float* p = buf.product + d * buf.dvp;
    for (int64_t j = 0; j < dv; ++j) s[j] = s[j] * chunk_decay + p[j];
  }
}

}  // namespace

void DeltaRuleRecurrent(const DeltaRuleHead& head, float* state, float* out, int64_t out_stride) {
  CheckHead(head);
  std::vector<float> row(static_cast<size_t>(head.dv));
  for (int64_t t = 0; t < head.tokens; ++t) {
    HWY_DYNAMIC_DISPATCH(RecurrentTokenImpl)
    (head.q + t * head.qk_stride, head.k + t * head.qk_stride, head.v + t * head.v_stride,
     head.beta[t * head.gate_stride], std::exp(head.g[t * head.gate_stride]), head.dk, head.dv,
     state, row.data(), out + t * out_stride);
  }
}

float* DeltaRuleScratch::Reserve(int64_t dk, int64_t dv) {
  if (dk != dk_ || dv != dv_) {
    buffer_.assign(static_cast<size_t>(ChunkBuffers(dk, dv, nullptr).floats), 0.0f);
    dk_ = dk;
    dv_ = dv;
  }
  return buffer_.data();
}

void DeltaRuleChunked(const DeltaRuleHead& head, float* state, float* out, int64_t out_stride,
                      DeltaRuleScratch& scratch) {
  CheckHead(head);
  ChunkBuffers buf(head.dk, head.dv, scratch.Reserve(head.dk, head.dv));
  for (int64_t d = 0; d < head.dk; ++d) {
    std::copy(state + d * head.dv, state + (d + 1) * head.dv, buf.state + d * buf.dvp);
  }
  for (int64_t t0 = 0; t0 < head.tokens; t0 += kDeltaRuleChunk) {
    ProcessChunk(head, t0, std::min(kDeltaRuleChunk, head.tokens - t0), buf, out, out_stride);
  }
  for (int64_t d = 0; d < head.dk; ++d) {
    std::copy(buf.state + d * buf.dvp, buf.state + d * buf.dvp + head.dv, state + d * head.dv);
  }
}

void DeltaRuleRef(const DeltaRuleHead& head, float* state, float* out, int64_t out_stride) {
  CheckHead(head);
  const int64_t dk = head.dk, dv = head.dv;
  std::vector<double> s(state, state + dk * dv), delta(static_cast<size_t>(dv));
  for (int64_t t = 0; t < head.tokens; ++t) {
    const float* q = head.q + t * head.qk_stride;
    const float* k = head.k + t * head.qk_stride;
    const float* v = head.v + t * head.v_stride;
    const double decay = std::exp(static_cast<double>(head.g[t * head.gate_stride]));
    const double beta = head.beta[t * head.gate_stride];
    for (double& x : s) x *= decay;
    for (int64_t j = 0; j < dv; ++j) {
      double memory = 0.0;
      for (int64_t i = 0; i < dk; ++i) memory += s[static_cast<size_t>(i * dv + j)] * k[i];
      delta[static_cast<size_t>(j)] = (v[j] - memory) * beta;
    }
    float* o = out + t * out_stride;
    for (int64_t j = 0; j < dv; ++j) {
      double sum = 0.0;
      for (int64_t i = 0; i < dk; ++i) {
        double& x = s[static_cast<size_t>(i * dv + j)];
        x += k[i] * delta[static_cast<size_t>(j)];
        sum += x * q[i];
      }
      o[j] = static_cast<float>(sum);
    }
  }
  for (int64_t i = 0; i < dk * dv; ++i) state[i] = static_cast<float>(s[static_cast<size_t>(i)]);
}

}  // namespace proctor::ops
#endif  // HWY_ONCE
