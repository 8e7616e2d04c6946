#include "eval/scoring/paired_outcomes.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "util/testing_files.h"
#include "util/testing_oracles.h"

namespace proctor {
namespace {

TEST(McNemarExactP, SmallCasesByHand) {
  EXPECT_EQ(McNemarExactP(0, 0), 1.0);
  EXPECT_EQ(McNemarExactP(3, 3), 1.0);
  // b=0, c=5: 2 * (1/2)^5 = 0.0625.
  EXPECT_DOUBLE_EQ(McNemarExactP(0, 5), 0.0625);
  EXPECT_DOUBLE_EQ(McNemarExactP(5, 0), 0.0625);
  // b=1, c=4: 2 * (1 + 5) / 32 = 0.375.
  EXPECT_DOUBLE_EQ(McNemarExactP(1, 4), 0.375);
}

// scipy.stats.binomtest(b, b + c, 0.5).pvalue (two-sided) is McNemar's exact test.
TEST(McNemarExactP, EqualsScipysBinomialTest) {
  if (const std::string problem = testing::OraclesProblem({"python"}); !problem.empty()) {
    GTEST_SKIP() << "oracle unavailable: " << problem;
  }
  const std::vector<std::pair<int64_t, int64_t>> cases = {
      {0, 1}, {2, 9}, {10, 10}, {13, 27}, {40, 61}, {150, 210}, {700, 655}, {3000, 3120}};
  std::string list;
  for (const auto& [b, c] : cases) list += fmt::format("({},{}),", b, c);
  const testing::CommandOutput out = testing::RunCommand(fmt::format(
      "{} -c 'import json, scipy.stats as s; print(json.dumps([s.binomtest(b, b + c, 0.5)"
      ".pvalue for b, c in [{}]]))'",
      testing::Oracles("python").Path("python"), list));
  ASSERT_EQ(out.status, 0) << out.output;
  const auto theirs = nlohmann::json::parse(out.output).get<std::vector<double>>();
  ASSERT_EQ(theirs.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const double mine = McNemarExactP(cases[i].first, cases[i].second);
    EXPECT_NEAR(mine, theirs[i], 1e-12 + 1e-9 * theirs[i])
        << cases[i].first << " vs " << cases[i].second;
  }
}

TEST(ComparePaired, CountsDifferenceAndItsStandardError) {
  // A: 1 1 0 0 1 0; B: 1 0 1 1 1 0 -> both 2, only A 1, only B 2, neither 1.
  const std::vector<bool> a = {true, true, false, false, true, false};
  const std::vector<bool> b = {true, false, true, true, true, false};
  const PairedOutcomes p = ComparePaired(a, b);
  EXPECT_EQ(p.n, 6);
  EXPECT_EQ(p.both_correct, 2);
  EXPECT_EQ(p.only_a, 1);
  EXPECT_EQ(p.only_b, 2);
  EXPECT_EQ(p.both_wrong, 1);
  EXPECT_DOUBLE_EQ(p.accuracy_a, 0.5);
  EXPECT_DOUBLE_EQ(p.accuracy_b, 4.0 / 6);
  EXPECT_DOUBLE_EQ(p.difference, 1.0 / 6);
  // d = 0 -1 1 1 0 0: mean 1/6; sample variance by hand.
  const double d[] = {0, -1, 1, 1, 0, 0};
  double ss = 0;
  for (const double x : d) ss += (x - 1.0 / 6) * (x - 1.0 / 6);
  EXPECT_NEAR(p.difference_standard_error, std::sqrt(ss / 5) / std::sqrt(6.0), 1e-15);
  EXPECT_DOUBLE_EQ(p.mcnemar_p, McNemarExactP(1, 2));
}

}  // namespace
}  // namespace proctor
