// Two runs of a task on the same items, compared item by item: the accuracy difference with its
// paired standard error, and McNemar's exact test of whether the runs differ (`proctor runs
// compare`, docs/task-evals.md).
#pragma once

#include <cstdint>
#include <vector>

namespace proctor {

struct PairedOutcomes {
  int64_t n = 0;  // items both runs scored
  int64_t both_correct = 0;
  int64_t only_a = 0;  // correct in A, not in B
  int64_t only_b = 0;  // correct in B, not in A
  int64_t both_wrong = 0;
  double accuracy_a = 0;
  double accuracy_b = 0;
  double difference = 0;  // accuracy_b - accuracy_a
  // Sample standard deviation of the per-item differences (B - A in {-1, 0, 1}) over sqrt(n);
  // 0 when n < 2.
  double difference_standard_error = 0;
  double mcnemar_p = 1;  // McNemarExactP(only_a, only_b)
};

// a_correct[i] and b_correct[i] are the same item's outcomes (equal sizes).
PairedOutcomes ComparePaired(const std::vector<bool>& a_correct,
                             const std::vector<bool>& b_correct);

// McNemar's exact test: the two-sided binomial test of b successes in b + c trials at 1/2,
// min(1, 2 P(X <= min(b, c))); 1 when b + c is 0.
double McNemarExactP(int64_t b, int64_t c);

}  // namespace proctor
