// SelectTopK (radix select) against SelectTopKScalar (nth_element + sort) and against an
// independent oracle (a full std::stable_sort by float `>`, which keeps ties in index order),
// on random rows, heavy ties, infinities, denormals, signed zeros, k = 1, k = n and odd sizes.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "ops/logits_stats.h"

namespace proctor::ops {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// The oracle: every index stably sorted by value, largest first; the first k.
std::vector<int32_t> StableSortTopK(const std::vector<float>& row, int64_t k) {
  std::vector<int32_t> all(row.size());
  std::iota(all.begin(), all.end(), 0);
  std::stable_sort(all.begin(), all.end(), [&](int32_t a, int32_t b) { return row[a] > row[b]; });
  all.resize(static_cast<size_t>(k));
  return all;
}

// Checks SelectTopK == SelectTopKScalar == the oracle for row and k.
void ExpectAllAgree(const std::vector<float>& row, int64_t k, const std::string& what) {
  const int64_t n = static_cast<int64_t>(row.size());
  std::vector<int32_t> fast(static_cast<size_t>(k), -1), scalar(static_cast<size_t>(k), -1);
  SelectTopK(row.data(), n, k, fast.data());
  SelectTopKScalar(row.data(), n, k, scalar.data());
  const auto oracle = StableSortTopK(row, k);
  ASSERT_EQ(scalar, oracle) << what << " n=" << n << " k=" << k << " (reference vs oracle)";
  ASSERT_EQ(fast, oracle) << what << " n=" << n << " k=" << k;
}

std::vector<float> NormalRow(int64_t n, uint32_t seed, float sigma) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, sigma);
  std::vector<float> row(static_cast<size_t>(n));
  for (auto& v : row) v = normal(rng);
  return row;
}

std::vector<int64_t> KsFor(int64_t n) {
  std::vector<int64_t> ks = {1, 2, 3, n / 2 + 1, n - 1, n};
  if (n > 2048) ks.push_back(2048);
  if (n > 257) ks.push_back(257);
  ks.erase(std::remove_if(ks.begin(), ks.end(), [n](int64_t k) { return k < 1 || k > n; }),
           ks.end());
  return ks;
}

const int64_t kSizes[] = {1, 2, 3, 7, 17, 255, 512, 513, 1001, 32001};

TEST(SelectTopKRadix, HandWorkedTiesAndSignedZeros) {
  // -0 == +0 for float `>`, so zeros tie and the lower index comes first, whatever the sign.
  const float x[] = {-0.0f, 0.0f, -1.0f, 0.0f, -0.0f, 2.0f, -kInf, 2.0f};
  int32_t idx[7];
  SelectTopK(x, 8, 7, idx);
  EXPECT_EQ(std::vector<int32_t>(idx, idx + 7), (std::vector<int32_t>{5, 7, 0, 1, 3, 4, 2}));
  const float y[] = {1, 3, 3, 2, 3, -kInf, 2};
  SelectTopK(y, 7, 5, idx);
  EXPECT_EQ(std::vector<int32_t>(idx, idx + 5), (std::vector<int32_t>{1, 2, 4, 3, 6}));
}

TEST(SelectTopKRadix, RandomRowsAtEveryK) {
  for (const int64_t n : kSizes) {
    for (const float sigma : {0.01f, 3.0f, 1000.0f}) {
      const auto row = NormalRow(n, static_cast<uint32_t>(n) * 7 + 1, sigma);
      for (const int64_t k : KsFor(n))
        ExpectAllAgree(row, k, "normal sigma " + std::to_string(sigma));
    }
  }
}

TEST(SelectTopKRadix, HeavyTiesAndAllEqual) {
  for (const int64_t n : kSizes) {
    std::mt19937 rng(static_cast<uint32_t>(n));
    std::uniform_int_distribution<int> level(-3, 3);
    std::vector<float> row(static_cast<size_t>(n));
    for (auto& v : row) v = static_cast<float>(level(rng)) * 0.5f;  // seven values
    for (const int64_t k : KsFor(n)) ExpectAllAgree(row, k, "seven levels");
    std::fill(row.begin(), row.end(), 1.25f);
    for (const int64_t k : KsFor(n)) ExpectAllAgree(row, k, "all equal");
    // Ties that share the top key bits but differ in the low ones (the deeper levels).
    for (size_t i = 0; i < row.size(); ++i) {
      row[i] = std::bit_cast<float>(0x3F800000u + static_cast<uint32_t>(rng() % 5));
    }
    for (const int64_t k : KsFor(n)) ExpectAllAgree(row, k, "last-bit ties");
  }
}

TEST(SelectTopKRadix, InfinitiesDenormalsAndSignedZeros) {
  const float denorm = std::numeric_limits<float>::denorm_min();
  const float specials[] = {-kInf,
                            kInf,
                            0.0f,
                            -0.0f,
                            denorm,
                            -denorm,
                            3 * denorm,
                            -3 * denorm,
                            std::numeric_limits<float>::min(),
                            -std::numeric_limits<float>::min(),
                            std::numeric_limits<float>::max(),
                            -std::numeric_limits<float>::max(),
                            1.0f,
                            -1.0f};
  for (const int64_t n : kSizes) {
    std::mt19937 rng(static_cast<uint32_t>(n) + 99);
    std::vector<float> row(static_cast<size_t>(n));
    for (auto& v : row) v = specials[rng() % std::size(specials)];
    for (const int64_t k : KsFor(n)) ExpectAllAgree(row, k, "specials");
    for (auto& v : row) v = (rng() & 1) ? 0.0f : -0.0f;
    for (const int64_t k : KsFor(n)) ExpectAllAgree(row, k, "signed zeros");
    for (auto& v : row) v = -kInf;
    row[row.size() / 2] = -0.0f;
    for (const int64_t k : KsFor(n)) ExpectAllAgree(row, k, "-inf with one zero");
  }
}

TEST(SelectTopKRadix, RealVocabularySizes) {
  for (const int64_t n : {int64_t{32000}, int64_t{151936}, int64_t{262144}}) {
    auto row = NormalRow(n, 5, 2.5f);
    for (int64_t i = 0; i < n; i += 9) row[i] = std::round(row[i] * 4) / 4;  // some ties
    ExpectAllAgree(row, 2048, "vocabulary");
  }
}

TEST(SelectTopKRadix, RepeatedCallsReuseScratchCorrectly) {
  // A big row then a small one and back (the per-thread buffers are resized, not reallocated).
  const auto big = NormalRow(32001, 1, 2.0f);
  const auto small = NormalRow(33, 2, 2.0f);
  for (int round = 0; round < 3; ++round) {
    ExpectAllAgree(big, 2048, "big");
    ExpectAllAgree(small, 5, "small");
  }
}

}  // namespace
}  // namespace proctor::ops
