// Aggregation of per-position scores, worked by hand (FORMATS.md section 3).
#include "eval/scoring/kl_stats.h"

#include <gtest/gtest.h>

#include <cmath>

namespace proctor {
namespace {

TEST(NearestRank, UpperMiddleAndClampedTop) {
  const std::vector<double> v = {10, 9, 8, 7, 6, 5, 4, 3, 2, 1};
  EXPECT_EQ(NearestRank(v, 50), 6);   // floor(0.5 * 10) = 5 -> 6 (upper middle)
  EXPECT_EQ(NearestRank(v, 95), 10);  // floor(9.5) = 9
  EXPECT_EQ(NearestRank(v, 99), 10);
  EXPECT_EQ(NearestRank({3, 1, 2}, 50), 2);
  EXPECT_EQ(NearestRank({}, 50), 0);
}

TEST(Summarize, MeanOfSequenceMeansAndItsStandardError) {
  const DistributionSummary s = Summarize({{1, 2, 3}, {10}, {}});
  EXPECT_DOUBLE_EQ(s.mean, 6.0);  // (2 + 10) / 2, not the pooled 4
  // Sample std of {2, 10} is sqrt(32); over sqrt(2) sequences: 4.
  EXPECT_DOUBLE_EQ(s.standard_error, 4.0);
  EXPECT_EQ(s.median, 3);  // pooled {1,2,3,10}: index 2
  EXPECT_EQ(s.max, 10);
  const DistributionSummary empty = Summarize({});
  EXPECT_EQ(empty.mean, 0);
  EXPECT_EQ(empty.max, 0);
  EXPECT_EQ(Summarize({{5, 7}}).standard_error, 0);  // one sequence: no error bar
}

TEST(AggregateKlRun, TopOneMassAndThroughput) {
  std::vector<std::vector<PositionScore>> scores = {
      {{.kl = 0.1, .tail_kl = 0.2, .mass = 0.9, .top1 = true},
       {.kl = 0.3, .tail_kl = 0.4, .mass = 0.5, .top1 = false}},
      {{.kl = 0.2, .tail_kl = 0.2, .mass = 1.0, .top1 = true}}};
  const KlRunStats s = AggregateKlRun(scores, 2.0);
  EXPECT_EQ(s.positions, 3);
  EXPECT_EQ(s.sequences, 2);
  EXPECT_DOUBLE_EQ(s.top1_agreement, 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(s.mean_mass, 2.4 / 3.0);
  EXPECT_EQ(s.min_mass, 0.5);
  EXPECT_DOUBLE_EQ(s.kl.mean, 0.2);  // (0.2 + 0.2) / 2
  EXPECT_DOUBLE_EQ(s.positions_per_second, 1.5);
  const KlRunStats none = AggregateKlRun({}, 1.0);
  EXPECT_EQ(none.top1_agreement, 0);
  EXPECT_EQ(none.mean_mass, 0);
}

}  // namespace
}  // namespace proctor
