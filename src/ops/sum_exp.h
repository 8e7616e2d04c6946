// The inner loop of a float64 log-softmax over a vocabulary-sized row of f32 logits (perplexity's
// NLL, eval/runners/ppl.h): sum_i exp(x_i - shift) with every term and the sum in float64, so the
// NLL keeps ~1e-15 relative accuracy (f32 sums would limit it to ~1e-7).
//
// SumExpShifted is a Highway kernel (float64 lanes, Exp from hwy/contrib/math, two accumulators
// added in a fixed order: deterministic for a given SIMD target, any thread count);
// SumExpShiftedScalar is its reference (std::exp, left to right). Terms with x_i = -inf add 0.
#pragma once

#include <cstdint>

namespace proctor {

double SumExpShifted(const float* x, int64_t n, float shift);
double SumExpShiftedScalar(const float* x, int64_t n, float shift);

}  // namespace proctor
