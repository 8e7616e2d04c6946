// The one chunk driver: how a sequence is cut into chunks and handed over, the scored end, the
// vocabulary hook, lockstep arms, and the checks on what a forward returns.
#include "eval/runners/logits_chunks.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "eval/runners/testing_forward.h"
#include "eval/testing_dumps.h"

namespace proctor {
namespace {

using testing::ErrorOf;

// Logits row p = {p, p + 1, ..., p + vocab - 1} for position p (any sequence).
struct Ramp {
  int64_t vocab;
  std::vector<float> rows = std::vector<float>(static_cast<size_t>(64 * vocab));
  explicit Ramp(int64_t v) : vocab(v) {
    for (int64_t p = 0; p < 64; ++p) {
      std::iota(rows.begin() + p * vocab, rows.begin() + (p + 1) * vocab, static_cast<float>(p));
    }
  }
  TeacherForcedLogits Forward() const {
    return testing::FakeForward([this](int64_t, int64_t start, std::span<const int32_t> t) {
      return testing::LogitsRows(rows, 64, vocab, vocab, 0, start, static_cast<int64_t>(t.size()));
    });
  }
};

TEST(LogitsChunkDriver, ChunksCoverTheSequenceAndOnlyScoredRowsAreHandedOver) {
  const Ramp ramp(5);
  LogitsChunkDriver driver({{"model", ramp.Forward()}}, {.chunk_size = 4, .quiet = true});
  int vocabulary_calls = 0;
  driver.OnVocabulary([&](int64_t vocab) {
    ++vocabulary_calls;
    EXPECT_EQ(vocab, 5);
  });
  const std::vector<int32_t> tokens(10, 1);
  std::vector<std::pair<int64_t, int64_t>> seen;  // (start, scored)
  driver.RunSequence(tokens, 9, "seq", [&](const LogitsChunk& chunk) {
    seen.emplace_back(chunk.start, chunk.scored);
    EXPECT_EQ(chunk.logits.size(), 1u);
    EXPECT_EQ(chunk[0].rows, chunk.rows);
    EXPECT_EQ(chunk[0].RowAs<float>(0)[0], static_cast<float>(chunk.start));
  });
  // Chunks [0,4) [4,8) [8,10): the last has one scored row (position 8; 9 is not scored).
  EXPECT_EQ(seen, (std::vector<std::pair<int64_t, int64_t>>{{0, 4}, {4, 4}, {8, 1}}));
  // A scored end inside an earlier chunk: later chunks still run, but are not handed over.
  seen.clear();
  driver.RunSequence(tokens, 3, "seq",
                     [&](const LogitsChunk& c) { seen.emplace_back(c.start, c.scored); });
  EXPECT_EQ(seen, (std::vector<std::pair<int64_t, int64_t>>{{0, 3}}));
  driver.Finish();
  EXPECT_EQ(vocabulary_calls, 1);
  EXPECT_EQ(driver.vocab(), 5);
  EXPECT_GE(driver.forward_seconds(), 0.0);
}

TEST(LogitsChunkDriver, ArmsRunInLockstepAndMustShareTheVocabulary) {
  const Ramp a(5), b(5), wide(6);
  LogitsChunkDriver driver({{"reference 'a'", a.Forward()}, {"candidate 'b'", b.Forward()}},
                           {.chunk_size = 3, .quiet = true});
  const std::vector<int32_t> tokens(7, 2);
  int chunks = 0;
  driver.RunSequence(tokens, 6, "seq", [&](const LogitsChunk& chunk) {
    ASSERT_EQ(chunk.logits.size(), 2u);
    EXPECT_EQ(chunk[0].RowAs<float>(0)[0], chunk[1].RowAs<float>(0)[0]);
    ++chunks;
  });
  EXPECT_EQ(chunks, 2);  // [0, 3) and [3, 6); [6, 7) holds only the unscored last position
  EXPECT_GE(driver.arm_forward_seconds(1), 0.0);
  LogitsChunkDriver mismatch({{"reference 'a'", a.Forward()}, {"candidate 'w'", wide.Forward()}},
                             {.chunk_size = 3, .quiet = true});
  const std::string error =
      ErrorOf([&] { mismatch.RunSequence(tokens, 6, "sequence 0", [](const LogitsChunk&) {}); });
  EXPECT_NE(error.find("sequence 0: reference 'a' gives 5 logits per position, candidate 'w' "
                       "gives 6: the vocabularies differ"),
            std::string::npos)
      << error;
}

TEST(LogitsChunkDriver, ABadChunkSizeIsRefusedWithTheComponent) {
  const Ramp ramp(4);
  EXPECT_NE(ErrorOf([&] {
              LogitsChunkDriver({{"m", ramp.Forward()}}, {.component = "ppl", .chunk_size = 0});
            }).find("[ppl] --chunk must be >= 1, got 0"),
            std::string::npos);
}

}  // namespace
}  // namespace proctor
