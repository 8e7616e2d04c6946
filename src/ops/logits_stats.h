// Per-row statistics of logits that KL scoring and dumping need, at vocabulary sizes up to
// 262,144: the max and its (lowest) index, the max-shifted logsumexp, the KL terms at a
// teacher's top-k indices (with the gather), and the top-k selection a dumper keeps.
//
// The SIMD kernels use Highway with dynamic dispatch; each has a scalar reference beside it
// (the *Scalar functions) that tests compare against. Every kernel is single-threaded and
// deterministic: callers thread over rows, so results do not depend on the thread count.
#pragma once

#include <cstdint>

namespace proctor::ops {

// Full-vocabulary statistics of one row x[0..n) of float32 logits.
struct RowStats {
  float max = 0;        // largest logit
  int64_t argmax = -1;  // lowest index holding `max` (-1 for an empty row)
  // log(sum_j exp(x_j - max)); the row's logsumexp is max + this. Accumulated in float32
  // within blocks of 512 elements, blocks added in float64, in a fixed order.
  float log_sum_exp_shifted = 0;
  bool has_nan = false;  // a NaN anywhere (then the other fields mean nothing)
};

RowStats ComputeRowStats(const float* x, int64_t n);
RowStats ComputeRowStatsScalar(const float* x, int64_t n);  // reference (float64 sums)

// Sums over the teacher's top-k set K of one position (FORMATS.md section 2).
struct TopKTerms {
  double kl = 0;              // sum_{j in K, p_j > 0} p_j (log p_j - log q_j)
  double teacher_mass = 0;    // sum_{j in K} p_j
  double candidate_mass = 0;  // sum_{j in K} q_j
};

// Teacher: logits t[0..k) at vocabulary indices idx[0..k) and its full logsumexp T (both
// shifted by the same constant, which cancels): p_j = exp(t_j - T). Candidate: the full row c
// with its RowStats: log q_j = (c[idx_j] - max) - log_sum_exp_shifted. Every idx_j must be in
// [0, vocabulary) (the caller checks; the kernel gathers c[idx_j] with SIMD gathers).
TopKTerms ComputeTopKTerms(const float* t, const int32_t* idx, int64_t k, float T, const float* c,
                           const RowStats& c_stats);
TopKTerms ComputeTopKTermsScalar(const float* t, const int32_t* idx, int64_t k, float T,
                                 const float* c, const RowStats& c_stats);

// Indices of the k largest of x[0..n), largest first; equal values in ascending index order.
// x must not contain NaN (the caller checks with ComputeRowStats). Requires 0 < k <= n.
// -0 and +0 tie (float `==`), so the lower index comes first. SelectTopK is an exact radix
// select (two passes over the row, a sort of the k survivors; top_k.cc); SelectTopKScalar is the
// reference (nth_element + sort) it equals for every input without NaN.
void SelectTopK(const float* x, int64_t n, int64_t k, int32_t* indices);
void SelectTopKScalar(const float* x, int64_t n, int64_t k, int32_t* indices);

}  // namespace proctor::ops
