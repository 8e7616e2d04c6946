// Shards: I/N parsing with errors naming the flag, and the items each takes (contiguous, every
// item exactly once in order, balanced to within one), counted here by hand and by brute force;
// the merge's ordering of the parts and its description of a differing setting.
#include "eval/runners/shard.h"

#include <gtest/gtest.h>

#include <string>

#include "util/error.h"
#include "util/testing_files.h"

namespace proctor {
namespace {

TEST(Shard, ParsesIOfNAndRefusesNonsenseNamingTheFlag) {
  EXPECT_EQ(ParseShard("0/1", "--shard"), (Shard{.index = 0, .count = 1}));
  EXPECT_EQ(ParseShard("6/7", "--shard"), (Shard{.index = 6, .count = 7}));
  EXPECT_EQ((Shard{.index = 2, .count = 3}).Name(), "2/3");
  for (const std::string bad : {"3", "3/3", "-1/2", "1/0", "a/2", "1/2x", "/2", "1/", ""}) {
    try {
      ParseShard(bad, "--shard");
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--shard '" + bad + "'"), std::string::npos) << e.what();
    }
  }
}

TEST(Shard, SharesAreContiguousCompleteAndBalancedToWithinOne) {
  // 10 items over 3 shards: [0, 3), [3, 6), [6, 10).
  EXPECT_EQ(ShardItems({.index = 0, .count = 3}, 10).end, 3);
  EXPECT_EQ(ShardItems({.index = 1, .count = 3}, 10).first, 3);
  EXPECT_EQ(ShardItems({.index = 2, .count = 3}, 10).first, 6);
  EXPECT_EQ(ShardItems({.index = 2, .count = 3}, 10).end, 10);
  for (int64_t total : {0, 1, 2, 5, 10, 97}) {
    for (int64_t count : {1, 2, 3, 7, 13, 200}) {
      int64_t next = 0, smallest = total, largest = 0;
      for (int64_t i = 0; i < count; ++i) {
        const ItemRange r = ShardItems({.index = i, .count = count}, total);
        ASSERT_EQ(r.first, next) << total << " " << i << "/" << count;
        ASSERT_GE(r.size(), 0);
        next = r.end;
        smallest = std::min(smallest, r.size());
        largest = std::max(largest, r.size());
      }
      EXPECT_EQ(next, total) << total << " over " << count;
      EXPECT_LE(largest - smallest, 1) << total << " over " << count;
    }
  }
}

TEST(Shard, PartsAreOrderedByShardAndEveryShardIsThereOnce) {
  const auto part = [](int64_t i, int64_t n, const char* name) {
    return ShardPart{.shard = {.index = i, .count = n}, .name = name};
  };
  EXPECT_EQ(OrderShardParts({part(2, 3, "c"), part(0, 3, "a"), part(1, 3, "b")}),
            (std::vector<size_t>{1, 2, 0}));
  EXPECT_NE(testing::ErrorOf([&] {
              OrderShardParts({part(0, 3, "a"), part(2, 3, "c")});
            }).find("shard(s) 1/3 missing: 2 of 3 given"),
            std::string::npos);
  EXPECT_NE(testing::ErrorOf([&] {
              OrderShardParts({part(0, 2, "a"), part(1, 2, "b"), part(1, 2, "b2")});
            }).find("shard 1/2 is given twice: 'b' and 'b2'"),
            std::string::npos);
  EXPECT_NE(testing::ErrorOf([&] {
              OrderShardParts({part(0, 2, "a"), part(1, 3, "b")});
            }).find("'b' is shard 1/3 but 'a' is shard 0/2"),
            std::string::npos);
}

TEST(Shard, FirstDifferingKeyNamesTheKeyAndBothValues) {
  const nlohmann::json a = {{"x", 1}, {"y", "s"}};
  EXPECT_EQ(FirstDifferingKey(a, a), "");
  EXPECT_EQ(FirstDifferingKey(a, {{"x", 1}, {"y", "t"}}), "y: \"s\" vs \"t\"");
  EXPECT_EQ(FirstDifferingKey(a, {{"x", 1}}), "y: \"s\" vs (absent)");
  EXPECT_EQ(FirstDifferingKey({{"x", 1}}, a), "y: (absent) vs \"s\"");
}

}  // namespace
}  // namespace proctor
