#include "eval/scoring/paired_difference.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>

#include "util/testing_files.h"

namespace proctor {
namespace {

TEST(ComparePairedSequences, SmallCaseByHand) {
  // d = 1, 2, 3, 6: mean 3, sample sd sqrt(14/3), SE sqrt(14/3)/2.
  const PairedDifference p = ComparePairedSequences({1, 1, 1, 1}, {2, 3, 4, 7}, 0, 42);
  EXPECT_EQ(p.sequences, 4);
  EXPECT_DOUBLE_EQ(p.mean_a, 1);
  EXPECT_DOUBLE_EQ(p.mean_b, 4);
  EXPECT_DOUBLE_EQ(p.difference, 3);
  EXPECT_NEAR(p.standard_error, std::sqrt(14.0 / 3) / 2, 1e-15);
  EXPECT_NEAR(p.low, 3 - 1.96 * std::sqrt(14.0 / 3) / 2, 1e-15);
  EXPECT_TRUE(p.distinguishable);
  EXPECT_EQ(p.bootstrap_draws, 0);
}

TEST(ComparePairedSequences, IdenticalCandidatesHaveZeroErrorAndNaNPairsAreLeftOut) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> a = {0.3, 0.1, nan, 0.7};
  const PairedDifference same = ComparePairedSequences(a, a, 200, 7);
  EXPECT_EQ(same.sequences, 3);
  EXPECT_EQ(same.difference, 0.0);
  EXPECT_EQ(same.standard_error, 0.0);
  EXPECT_EQ(same.bootstrap_low, 0.0);
  EXPECT_EQ(same.bootstrap_high, 0.0);
  EXPECT_FALSE(same.distinguishable);
}

TEST(ComparePairedSequences, TheBootstrapIsSeeded) {
  std::mt19937 rng(3);
  std::normal_distribution<double> noise(0.0, 1.0);
  std::vector<double> a(50), b(50);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = noise(rng);
    b[i] = a[i] + 0.05 + 0.5 * noise(rng);
  }
  const PairedDifference x = ComparePairedSequences(a, b, 500, 42);
  const PairedDifference y = ComparePairedSequences(a, b, 500, 42);
  const PairedDifference z = ComparePairedSequences(a, b, 500, 43);
  EXPECT_EQ(x.bootstrap_low, y.bootstrap_low);
  EXPECT_EQ(x.bootstrap_high, y.bootstrap_high);
  EXPECT_NE(x.bootstrap_low, z.bootstrap_low);
  EXPECT_LT(x.bootstrap_low, x.difference);
  EXPECT_GT(x.bootstrap_high, x.difference);
  // The bootstrap's interval is about as wide as the normal one.
  EXPECT_NEAR(x.bootstrap_high - x.bootstrap_low, x.high - x.low, 0.35 * (x.high - x.low));
}

// numpy (Debian's python3-numpy) recomputes the difference and its standard error.
TEST(ComparePairedSequences, EqualsNumpysRecomputation) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> u(0.0, 2.0);
  std::vector<double> a(37), b(37);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = u(rng);
    b[i] = u(rng) * 1.1;
  }
  const PairedDifference p = ComparePairedSequences(a, b, 0, 0);
  const testing::CommandOutput out = testing::RunCommand(fmt::format(
      "/usr/bin/python3 -c 'import json, numpy as np; a = np.array({}); b = np.array({}); "
      "d = b - a; print(json.dumps([d.mean(), d.std(ddof=1) / np.sqrt(len(d))]))'",
      nlohmann::json(a).dump(), nlohmann::json(b).dump()));
  ASSERT_EQ(out.status, 0) << out.output;
  const auto theirs = nlohmann::json::parse(out.output).get<std::vector<double>>();
  EXPECT_NEAR(p.difference, theirs[0], 1e-12 * std::fabs(theirs[0]));
  EXPECT_NEAR(p.standard_error, theirs[1], 1e-9 * theirs[1]);
}

// The tables' verdicts, on sequences worked by hand (floor 0; the differences' spread decides).
TEST(RowAgainstAbove, VerdictsAsTheTablesShowThem) {
  const std::vector<double> floor = {0, 0, 0, 0};
  const std::vector<double> small = {1.0, 1.1, 0.9, 1.0};  // clearly above the floor
  const std::vector<double> more = {2.0, 2.1, 1.9, 2.05};  // clearly above `small`
  const std::vector<double> noisy = {1.5, 0.6, 1.4, 0.6};  // mean 1.025, spread too wide
  const std::vector<double> tiny = {1e-9, -1e-9, 2e-9, -2e-9};

  RowAgainstAbove r = CompareRowWithAbove(floor, small, more);
  EXPECT_TRUE(r.known);
  EXPECT_EQ(r.verdict, "worse");
  EXPECT_DOUBLE_EQ(r.difference, (1.0 + 1.0 + 1.0 + 1.05) / 4);
  EXPECT_EQ(CompareRowWithAbove(floor, more, small).verdict, "better");
  EXPECT_EQ(CompareRowWithAbove(floor, small, noisy).verdict, "same");
  EXPECT_EQ(CompareRowWithAbove(floor, floor, tiny).verdict, "at floor");
  // Too few sequences, or rows of other lengths: no verdict.
  EXPECT_EQ(CompareRowWithAbove({0}, {1}, {2}).verdict, "-");
  EXPECT_FALSE(CompareRowWithAbove(floor, small, {1, 2}).known);
  EXPECT_EQ(RowAgainstAboveText(CompareRowWithAbove({0}, {1}, {2}), "+-"), "-");
  EXPECT_EQ(RowAgainstAboveText(r, "+-"),
            fmt::format("{:+.2e} +- {:.1e}", r.difference, r.standard_error));
}

}  // namespace
}  // namespace proctor
