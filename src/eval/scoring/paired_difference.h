// Two candidates scored on the same sequences, compared sequence by sequence (`proctor
// kl-diff`): the mean of the per-sequence differences B - A, its paired standard error and
// 95% interval, and a seeded block bootstrap over sequences as a second estimate.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace proctor {

struct PairedDifference {
  int64_t sequences = 0;  // pairs where both values are known (not NaN)
  double mean_a = 0, mean_b = 0;
  double difference = 0;      // mean of (b - a)
  double standard_error = 0;  // sample standard deviation of (b - a) / sqrt(sequences)
  double low = 0, high = 0;   // difference -+ 1.96 standard errors
  double bootstrap_low = 0, bootstrap_high = 0;  // 2.5th and 97.5th percentiles (0 draws: 0)
  int bootstrap_draws = 0;
  // The interval excludes 0 (and, with a bootstrap, so does the bootstrap's).
  bool distinguishable = false;
};

// a[s] and b[s] are sequence s of each candidate (equal sizes); NaN pairs are left out.
// `draws` resamples of the sequences with replacement, drawn by Mulberry32(seed): each draw's
// mean difference; the percentiles are nearest-rank.
PairedDifference ComparePairedSequences(const std::vector<double>& a, const std::vector<double>& b,
                                        int draws, uint32_t seed);

// A table row's per-sequence mean KL against the row above it and against the table's floor
// (compare's teacher scored against its own dump; kv-curve's f32 cache), as the tables show it
// (docs/statistics.md): the paired difference row - above with its standard error, and a
// verdict: "at floor" when the paired 95% interval against the floor includes 0, else "worse" /
// "better" when the interval against the row above excludes 0, "same" when it does not; "-"
// (and known false) with fewer than 2 paired sequences or sequences of other counts.
struct RowAgainstAbove {
  bool known = false;
  double difference = 0, standard_error = 0;
  std::string verdict = "-";
};
RowAgainstAbove CompareRowWithAbove(const std::vector<double>& floor,
                                    const std::vector<double>& above,
                                    const std::vector<double>& row);
// "+9.42e-04 +- 1.8e-05" (with `plus_minus` between), or "-".
std::string RowAgainstAboveText(const RowAgainstAbove& r, const char* plus_minus);

}  // namespace proctor
