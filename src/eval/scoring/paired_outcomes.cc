#include "eval/scoring/paired_outcomes.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"

namespace proctor {

double McNemarExactP(int64_t b, int64_t c) {
  CHECK(b >= 0 && c >= 0);
  const int64_t m = b + c;
  if (m == 0) return 1.0;
  const int64_t k = std::min(b, c);
  // P(X <= k) for X ~ Binomial(m, 1/2), summed in log space (m may be in the thousands).
  const long double log_half_m = static_cast<long double>(m) * std::log(0.5L);
  const long double log_m_fact = std::lgamma(static_cast<long double>(m) + 1);
  long double max_log = -INFINITY;
  std::vector<long double> terms;
  terms.reserve(static_cast<size_t>(k) + 1);
  for (int64_t i = 0; i <= k; ++i) {
    const long double term = log_m_fact - std::lgamma(static_cast<long double>(i) + 1) -
                             std::lgamma(static_cast<long double>(m - i) + 1) + log_half_m;
    terms.push_back(term);
    max_log = std::max(max_log, term);
  }
  long double sum = 0;
  for (const long double term : terms) sum += std::exp(term - max_log);
  const long double tail = std::exp(max_log) * sum;
  return static_cast<double>(std::min(1.0L, 2.0L * tail));
}

PairedOutcomes ComparePaired(const std::vector<bool>& a_correct,
                             const std::vector<bool>& b_correct) {
  CHECK(a_correct.size() == b_correct.size());
  PairedOutcomes out;
  out.n = static_cast<int64_t>(a_correct.size());
  for (size_t i = 0; i < a_correct.size(); ++i) {
    if (a_correct[i] && b_correct[i]) ++out.both_correct;
    if (a_correct[i] && !b_correct[i]) ++out.only_a;
    if (!a_correct[i] && b_correct[i]) ++out.only_b;
    if (!a_correct[i] && !b_correct[i]) ++out.both_wrong;
  }
  if (out.n == 0) return out;
  const double n = static_cast<double>(out.n);
  out.accuracy_a = static_cast<double>(out.both_correct + out.only_a) / n;
  out.accuracy_b = static_cast<double>(out.both_correct + out.only_b) / n;
  out.difference = static_cast<double>(out.only_b - out.only_a) / n;
  if (out.n >= 2) {
    // Differences are +1 (only_b times), -1 (only_a times), 0 otherwise.
    const double d = out.difference;
    const double sum_sq = static_cast<double>(out.only_b) * (1 - d) * (1 - d) +
                          static_cast<double>(out.only_a) * (-1 - d) * (-1 - d) +
                          static_cast<double>(out.both_correct + out.both_wrong) * d * d;
    out.difference_standard_error = std::sqrt(sum_sq / (n - 1)) / std::sqrt(n);
  }
  out.mcnemar_p = McNemarExactP(out.only_a, out.only_b);
  return out;
}

}  // namespace proctor
