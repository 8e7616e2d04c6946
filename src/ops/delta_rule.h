// The gated delta rule of Gated DeltaNet (model/gated_deltanet.cc), one value head over T tokens:
// per token t, with the state S [dk, dv] (row i: key dimension i),
//   S *= exp(g_t);  delta = (v_t - S^T k_t) * beta_t;  S += k_t delta^T;  o_t = S^T q_t
// Three forms compute it:
//  - DeltaRuleRecurrent: token by token, as above (transformers' torch_recurrent_gated_delta_rule;
//    decode). Highway kernels over the state's rows, two passes per token.
//  - DeltaRuleChunked: transformers' torch_chunk_gated_delta_rule (prefill), chunks of
//    kDeltaRuleChunk tokens. Within a chunk, with c_i the cumulative sum of g from its start, the
//    unit lower-triangular system (I + L) X = [V beta, K beta exp(c)], L[i][m] = beta_i k_i . k_m
//    exp(c_i - c_m) for m < i, is solved by forward substitution (new values U, decayed keys W);
//    then V' = U - W S, O = (Q exp(c)) S + tril(Q K^T exp(c_i - c_m)) V', and
//    S = exp(c_last) S + (K exp(c_last - c))^T V'. The products run on the f32 GEMM kernel.
//  - DeltaRuleRef: the recurrence in double, the reference for tests.
// The two fast forms give the same outputs and state up to f32 rounding (delta_rule_test.cc).
#pragma once

#include <cstdint>
#include <vector>

namespace proctor::ops {

// Tokens per chunk of DeltaRuleChunked (transformers' chunk_size).
inline constexpr int64_t kDeltaRuleChunk = 64;

// One value head's inputs for `tokens` tokens. Row t of q, k is at q/k + t * qk_stride (dk
// floats; q already scaled by 1/sqrt(dk) as the mixer prepares it), of v at v + t * v_stride (dv
// floats); beta and g (log decay, <= 0) of token t at beta/g + t * gate_stride.
struct DeltaRuleHead {
  int64_t tokens = 0, dk = 0, dv = 0;
  const float* q = nullptr;
  const float* k = nullptr;
  int64_t qk_stride = 0;
  const float* v = nullptr;
  int64_t v_stride = 0;
  const float* beta = nullptr;
  const float* g = nullptr;
  int64_t gate_stride = 0;
};

// Every form: `state` [dk, dv] row-major is read and left updated; output row t goes to
// out + t * out_stride (dv floats). `out` may be `v` itself: a row of v is read before the row of
// out at the same place is written.
void DeltaRuleRecurrent(const DeltaRuleHead& head, float* state, float* out, int64_t out_stride);
void DeltaRuleRef(const DeltaRuleHead& head, float* state, float* out, int64_t out_stride);

// DeltaRuleChunked's buffers, sized on first use for (dk, dv) and reused (one per thread).
class DeltaRuleScratch {
 public:
  float* Reserve(int64_t dk, int64_t dv);  // zeroed the first time; returns the base
  int64_t dk() const { return dk_; }
  int64_t dv() const { return dv_; }

 private:
  std::vector<float> buffer_;
  int64_t dk_ = -1, dv_ = -1;
};
void DeltaRuleChunked(const DeltaRuleHead& head, float* state, float* out, int64_t out_stride,
                      DeltaRuleScratch& scratch);

}  // namespace proctor::ops
