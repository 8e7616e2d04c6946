// SumExpShifted (Highway, float64 lanes) against its scalar reference on odd sizes and tails,
// with -inf and very negative terms.
#include "ops/sum_exp.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace proctor {
namespace {

TEST(SumExp, SimdMatchesTheScalarReferenceOnOddSizesAndTails) {
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> value(-40.0f, 6.0f);
  for (const int64_t n : {0, 1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 31, 33, 100, 1023, 151936}) {
    std::vector<float> x(static_cast<size_t>(n));
    for (auto& v : x) v = value(rng);
    if (n > 3) x[2] = -std::numeric_limits<float>::infinity();
    if (n > 5) x[n - 1] = -800.0f;  // exp underflows to 0 in float64 too
    const float shift = n > 0 ? *std::max_element(x.begin(), x.end()) : 0.0f;
    const double want = SumExpShiftedScalar(x.data(), n, shift);
    const double got = SumExpShifted(x.data(), n, shift);
    // Summation order differs (lanes vs left to right): ~sqrt(n) ulps apart.
    EXPECT_NEAR(got, want, 1e-12 * std::max(1.0, want)) << "n " << n;
    if (n > 0) {
      EXPECT_GE(want, 1.0);  // the max term is exp(0) = 1
    }
  }
}

TEST(SumExp, EqualLogitsSumToTheirCountExactly) {
  for (const int64_t n : {1, 7, 512, 151936}) {
    const std::vector<float> x(static_cast<size_t>(n), -2.5f);
    EXPECT_EQ(SumExpShifted(x.data(), n, -2.5f), static_cast<double>(n));
    EXPECT_EQ(SumExpShiftedScalar(x.data(), n, -2.5f), static_cast<double>(n));
  }
}

}  // namespace
}  // namespace proctor
