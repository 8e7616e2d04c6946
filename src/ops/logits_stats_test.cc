// The SIMD logits kernels against their scalar references on odd sizes and tails, plus
// hand-worked values and the top-k tie rule.
#include "ops/logits_stats.h"

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

namespace proctor::ops {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
const int64_t kSizes[] = {1, 2, 3, 7, 15, 16, 17, 31, 33, 511, 512, 513, 1000, 1025, 32001, 151936};

std::vector<float> RandomRow(int64_t n, uint32_t seed, float scale = 8.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-scale, scale);
  std::vector<float> row(static_cast<size_t>(n));
  for (auto& v : row) v = uniform(rng);
  return row;
}

void ExpectSameStats(const std::vector<float>& row, const char* what) {
  const int64_t n = static_cast<int64_t>(row.size());
  const RowStats simd = ComputeRowStats(row.data(), n);
  const RowStats ref = ComputeRowStatsScalar(row.data(), n);
  ASSERT_EQ(simd.has_nan, ref.has_nan) << what << " n=" << n;
  if (ref.has_nan) return;
  EXPECT_EQ(simd.max, ref.max) << what << " n=" << n;
  EXPECT_EQ(simd.argmax, ref.argmax) << what << " n=" << n;
  EXPECT_NEAR(simd.log_sum_exp_shifted, ref.log_sum_exp_shifted,
              2e-6 * std::max(1.0f, std::fabs(ref.log_sum_exp_shifted)))
      << what << " n=" << n;
}

TEST(RowStats, HandWorked) {
  const float x[] = {0.0f, std::log(3.0f), -kInf};
  const RowStats s = ComputeRowStats(x, 3);
  EXPECT_EQ(s.argmax, 1);
  EXPECT_EQ(s.max, std::log(3.0f));
  EXPECT_NEAR(s.log_sum_exp_shifted, std::log(4.0 / 3.0), 1e-7);
  EXPECT_FALSE(s.has_nan);
}

// Runs fn once per SIMD target this machine supports (AVX-512, AVX2, SSE4, ...), so every
// compiled kernel variant is compared with the scalar reference, not only the best one.
template <typename Fn>
void ForEachTarget(Fn fn) {
  for (const int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(hwy::TargetName(target));
    fn();
  }
  hwy::SetSupportedTargetsForTest(0);
}

TEST(RowStats, SimdMatchesScalarOnOddSizesOnEveryTarget) {
  ForEachTarget([] {
    for (const int64_t n : kSizes) {
      ExpectSameStats(RandomRow(n, static_cast<uint32_t>(n)), "random");
    }
  });
}

TEST(RowStats, TiesAtTheMaxPickTheLowestIndexEverywhere) {
  for (const int64_t n : kSizes) {
    for (const int64_t first : {int64_t{0}, n / 3, n - 1}) {
      auto row = RandomRow(n, 7);
      for (int64_t i = first; i < n; i += std::max<int64_t>(1, n / 5)) row[i] = 100.0f;
      const RowStats s = ComputeRowStats(row.data(), n);
      EXPECT_EQ(s.argmax, first) << "n=" << n;
      ExpectSameStats(row, "ties");
    }
  }
}

TEST(RowStats, MinusInfinityEntriesAddNothing) {
  for (const int64_t n : kSizes) {
    auto row = RandomRow(n, 11);
    for (int64_t i = 0; i < n; i += 3) row[i] = -kInf;
    if (n % 3 == 1) continue;  // all -inf for n == 1
    ExpectSameStats(row, "-inf");
  }
}

void NanChecks();

TEST(RowStats, NanIsReportedInBodyAndTail) {
  ForEachTarget([] { NanChecks(); });
}

void NanChecks() {
  for (const int64_t n : kSizes) {
    for (const int64_t where : {int64_t{0}, n / 2, n - 1}) {
      auto row = RandomRow(n, 3);
      row[where] = std::numeric_limits<float>::quiet_NaN();
      EXPECT_TRUE(ComputeRowStats(row.data(), n).has_nan) << "n=" << n << " at " << where;
      EXPECT_TRUE(ComputeRowStatsScalar(row.data(), n).has_nan);
    }
  }
}

void TopKTermsAgainstScalar();

TEST(TopKTerms, SimdMatchesScalarOnOddSizesOnEveryTarget) {
  ForEachTarget([] { TopKTermsAgainstScalar(); });
}

void TopKTermsAgainstScalar() {
  const int64_t vocab = 5003;
  for (const int64_t k : {1, 3, 15, 16, 17, 100, 511, 513, 2048, 2049, 5003}) {
    std::mt19937 rng(static_cast<uint32_t>(k));
    auto teacher_row = RandomRow(vocab, 100 + static_cast<uint32_t>(k), 6.0f);
    auto candidate = teacher_row;
    std::uniform_real_distribution<float> noise(-1, 1);
    for (auto& v : candidate) v += noise(rng);
    std::vector<int32_t> idx(static_cast<size_t>(k));
    SelectTopK(teacher_row.data(), vocab, k, idx.data());
    const RowStats t_stats = ComputeRowStatsScalar(teacher_row.data(), vocab);
    std::vector<float> t(static_cast<size_t>(k));
    for (int64_t j = 0; j < k; ++j) t[j] = teacher_row[idx[j]] - t_stats.max;
    if (k > 4) t[k - 1] = -kInf;  // a teacher probability of exactly 0 contributes no KL term
    const float T = t_stats.log_sum_exp_shifted;
    const RowStats c_stats = ComputeRowStats(candidate.data(), vocab);
    const TopKTerms simd = ComputeTopKTerms(t.data(), idx.data(), k, T, candidate.data(), c_stats);
    const TopKTerms ref =
        ComputeTopKTermsScalar(t.data(), idx.data(), k, T, candidate.data(), c_stats);
    EXPECT_NEAR(simd.kl, ref.kl, 1e-6 + 1e-5 * std::fabs(ref.kl)) << "k=" << k;
    EXPECT_NEAR(simd.teacher_mass, ref.teacher_mass, 1e-6) << "k=" << k;
    EXPECT_NEAR(simd.candidate_mass, ref.candidate_mass, 1e-6) << "k=" << k;
    if (k == vocab) {
      EXPECT_NEAR(ref.candidate_mass, 1.0, 1e-5);
    }
  }
}

TEST(TopKTerms, HandWorkedTwoTokenDistribution) {
  // Teacher p = (3/4, 1/4) over a vocabulary of 2, candidate q = (1/2, 1/2).
  const float t[] = {std::log(3.0f), 0.0f};
  const int32_t idx[] = {0, 1};
  const float T = std::log(4.0f);
  const float c[] = {0.0f, 0.0f};
  const RowStats c_stats = ComputeRowStats(c, 2);
  const TopKTerms terms = ComputeTopKTerms(t, idx, 2, T, c, c_stats);
  const double expected = 0.75 * std::log(1.5) + 0.25 * std::log(0.5);
  EXPECT_NEAR(terms.kl, expected, 1e-6);
  EXPECT_NEAR(terms.teacher_mass, 1.0, 1e-6);
  EXPECT_NEAR(terms.candidate_mass, 1.0, 1e-6);
}

TEST(SelectTopK, DescendingWithTiesInIndexOrder) {
  const float x[] = {1, 3, 3, 2, 3, -kInf, 2};
  int32_t idx[5];
  SelectTopK(x, 7, 5, idx);
  EXPECT_EQ(std::vector<int32_t>(idx, idx + 5), (std::vector<int32_t>{1, 2, 4, 3, 6}));
}

TEST(SelectTopK, MatchesAFullStableSort) {
  for (const int64_t n : {int64_t{1}, int64_t{17}, int64_t{1000}, int64_t{32001}}) {
    auto row = RandomRow(n, 5);
    for (int64_t i = 0; i < n; i += 7) row[i] = std::round(row[i]);  // plenty of ties
    std::vector<int32_t> all(static_cast<size_t>(n));
    std::iota(all.begin(), all.end(), 0);
    std::stable_sort(all.begin(), all.end(), [&](int32_t a, int32_t b) { return row[a] > row[b]; });
    const int64_t k = std::min<int64_t>(n, 256);
    std::vector<int32_t> idx(static_cast<size_t>(k));
    SelectTopK(row.data(), n, k, idx.data());
    EXPECT_EQ(idx, std::vector<int32_t>(all.begin(), all.begin() + k)) << "n=" << n;
  }
}

}  // namespace
}  // namespace proctor::ops
