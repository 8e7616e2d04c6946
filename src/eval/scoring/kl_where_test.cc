// Where the KL lives, on scores small enough to work out by hand: bucket edges, shares, the
// worst positions' order and ties, top-1 flips against the corpus token.
#include "eval/scoring/kl_where.h"

#include <gtest/gtest.h>

namespace proctor {
namespace {

PositionScore Score(double kl, double p_top, int32_t next, int32_t teacher, int32_t candidate) {
  PositionScore s;
  s.kl = kl;
  s.teacher_top1_probability = p_top;
  s.next_token = next;
  s.teacher_argmax = teacher;
  s.candidate_argmax = candidate;
  s.top1 = teacher == candidate;
  return s;
}

TEST(KlWhere, BucketsSharesWorstAndFlipsByHand) {
  // Two sequences of four positions; KL sum 10.
  const std::vector<std::vector<PositionScore>> scores = {
      {Score(1.0, 0.10, 5, 5, 6),    // [0, 0.25); teacher right, candidate wrong: lost
       Score(2.0, 0.25, 7, 8, 7),    // [0.25, 0.5) (an edge belongs above); gained
       Score(0.5, 0.90, 1, 1, 1),    // [0.9, 1]
       Score(0.5, 1.00, -1, 2, 3)},  // [0.9, 1]; next token unknown: no flip counted
      {Score(3.0, 0.60, 4, 4, 4),    // [0.5, 0.75)
       Score(2.0, 0.80, 9, 9, 3),    // [0.75, 0.9); lost
       Score(0.5, 0.95, 0, 0, 0),    // [0.9, 1]
       Score(0.5, 0.50, 2, 3, 4)}};  // [0.5, 0.75); neither right
  const KlWhere where = ComputeKlWhere(scores, 3);

  ASSERT_EQ(where.by_confidence.size(), 5u);
  const int64_t positions[] = {1, 1, 2, 1, 3};
  const double sums[] = {1.0, 2.0, 3.5, 2.0, 1.5};
  for (size_t b = 0; b < 5; ++b) {
    SCOPED_TRACE(b);
    EXPECT_EQ(where.by_confidence[b].positions, positions[b]);
    EXPECT_DOUBLE_EQ(where.by_confidence[b].kl_mean, sums[b] / positions[b]);
    EXPECT_DOUBLE_EQ(where.by_confidence[b].kl_share, sums[b] / 10.0);
  }
  EXPECT_EQ(where.by_confidence[1].low, 0.25);
  EXPECT_EQ(where.by_confidence[4].high, 1.0);

  // Four positions per sequence in eighths: r = 0, 1, 2, 3 land in buckets 0, 2, 4, 6.
  ASSERT_EQ(where.by_position.size(), 8u);
  const double position_sums[] = {4.0, 0, 4.0, 0, 1.0, 0, 1.0, 0};
  for (size_t b = 0; b < 8; ++b) {
    SCOPED_TRACE(b);
    EXPECT_EQ(where.by_position[b].positions, b % 2 == 0 ? 2 : 0);
    EXPECT_DOUBLE_EQ(where.by_position[b].kl_share, position_sums[b] / 10.0);
  }
  EXPECT_EQ(where.by_position[2].low, 1);
  EXPECT_EQ(where.by_position[2].high, 1);
  EXPECT_GT(where.by_position[1].low, where.by_position[1].high);  // empty

  // KL 3 first, then the two KL-2 positions by sequence.
  ASSERT_EQ(where.worst.size(), 3u);
  EXPECT_EQ(where.worst[0].sequence, 1);
  EXPECT_EQ(where.worst[0].position, 0);
  EXPECT_EQ(where.worst[1].sequence, 0);
  EXPECT_EQ(where.worst[1].position, 1);
  EXPECT_EQ(where.worst[2].sequence, 1);
  EXPECT_EQ(where.worst[2].position, 1);
  EXPECT_EQ(where.worst[2].candidate_argmax, 3);

  EXPECT_EQ(where.known_next, 7);
  EXPECT_EQ(where.top1_lost, 2);
  EXPECT_EQ(where.top1_gained, 1);
}

TEST(KlWhere, TheWorstListIsBoundedAndExactForManyPositions) {
  // 1000 positions with KL = position index mod 97: the worst eleven are the ten positions of
  // KL 96 (96 + 97 j, j = 0..9) in order of position, then the first of KL 95.
  std::vector<std::vector<PositionScore>> scores(1);
  for (int i = 0; i < 1000; ++i) scores[0].push_back(Score(i % 97, 0.5, 0, 0, 0));
  const KlWhere where = ComputeKlWhere(scores, 11);
  ASSERT_EQ(where.worst.size(), 11u);
  for (int64_t j = 0; j < 10; ++j) EXPECT_EQ(where.worst[j].position, 96 + 97 * j) << j;
  EXPECT_EQ(where.worst[10].position, 95);
  EXPECT_TRUE(ComputeKlWhere(scores, 0).worst.empty());
  EXPECT_EQ(ComputeKlWhere({}, 5).worst.size(), 0u);
}

}  // namespace
}  // namespace proctor
