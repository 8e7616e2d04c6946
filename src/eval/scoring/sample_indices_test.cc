// The goldens of FORMATS.md section 5 (computed by the reference implementation, not by this
// code).
#include "eval/scoring/sample_indices.h"

#include <gtest/gtest.h>

namespace proctor {
namespace {

TEST(SampleIndices, MatchesTheFormatsGolden) {
  const std::vector<int64_t> golden = {
      2,   91,  134, 174, 202, 214, 231, 237, 256,  258,  281,  306,  311,  316,  334,  341, 342,
      369, 381, 386, 395, 461, 548, 565, 591, 594,  621,  650,  657,  714,  721,  736,  761, 766,
      797, 807, 812, 858, 868, 930, 935, 957, 1077, 1098, 1140, 1150, 1182, 1255, 1305, 1313};
  EXPECT_EQ(SampleIndices(1319, 50, 42), golden);
  EXPECT_EQ(SampleIndices(5, 50, 42), (std::vector<int64_t>{0, 1, 2, 3, 4}));
}

TEST(SampleIndices, ShuffleIsAPermutation) {
  std::vector<int64_t> p = ShuffledIndices(100, 123);
  std::sort(p.begin(), p.end());
  for (int64_t i = 0; i < 100; ++i) EXPECT_EQ(p[i], i);
  EXPECT_TRUE(ShuffledIndices(0, 1).empty());
}

}  // namespace
}  // namespace proctor
