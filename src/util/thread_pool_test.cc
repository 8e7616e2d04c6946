#include "util/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <numeric>
#include <stdexcept>
#include <thread>
#include <vector>

#include "util/error.h"

namespace proctor {
namespace {

TEST(ThreadPoolTest, CoversEveryIndexExactlyOnce) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    for (size_t n : {0u, 1u, 2u, 7u, 100u, 1001u}) {
      std::vector<std::atomic<int>> hits(n);
      pool.ParallelFor(n, [&](size_t b, size_t e, int) {
        for (size_t i = b; i < e; ++i) hits[i]++;
      });
      for (size_t i = 0; i < n; ++i)
        ASSERT_EQ(hits[i].load(), 1) << threads << " " << n << " " << i;
    }
  }
}

TEST(ThreadPoolTest, PartitionsAreStaticAndGrainAligned) {
  size_t b, e;
  PartitionRange(100, 16, 2, 0, &b, &e);
  EXPECT_EQ(b, 0u);
  EXPECT_EQ(e, 48u);  // 7 blocks of 16: 3 go to the first part
  PartitionRange(100, 16, 2, 1, &b, &e);
  EXPECT_EQ(b, 48u);
  EXPECT_EQ(e, 100u);
}

TEST(ThreadPoolTest, ReductionIsBitIdenticalRunToRun) {
  ThreadPool pool(3);
  std::vector<float> values(100003);
  for (size_t i = 0; i < values.size(); ++i) values[i] = 1.0f / static_cast<float>(i + 1);
  auto sum = [&] {
    return ParallelReduce(
        pool, values.size(), 0.0f,
        [&](size_t b, size_t e) {
          return std::accumulate(values.begin() + b, values.begin() + e, 0.0f);
        },
        [](float a, float c) { return a + c; });
  };
  const float first = sum();
  for (int i = 0; i < 20; ++i) ASSERT_EQ(sum(), first);
}

TEST(ThreadPoolTest, RethrowsWorkerExceptions) {
  ThreadPool pool(2);
  EXPECT_THROW(pool.ParallelFor(10,
                                [](size_t b, size_t, int) {
                                  if (b >= 5) throw Error("test", "boom");
                                }),
               Error);
  // The pool still works afterwards.
  std::atomic<int> count{0};
  pool.ParallelFor(10, [&](size_t b, size_t e, int) { count += static_cast<int>(e - b); });
  EXPECT_EQ(count.load(), 10);
}

// Hand-offs spin before they sleep: jobs back to back (the workers still polling), jobs after a
// pause longer than the spin (the workers asleep), and a caller that finishes its partition
// long before a worker (the caller asleep) all complete every index once, with every worker's
// writes visible to the caller afterwards.
TEST(ThreadPoolTest, SpinningAndSleepingHandOffsBothComplete) {
  ThreadPool pool(3);
  std::vector<int> hits(300);
  for (int round = 0; round < 200; ++round) {
    if (round % 50 == 49) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    pool.ParallelFor(hits.size(), [&](size_t b, size_t e, int thread) {
      if (round % 40 == 7 && thread == 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      for (size_t i = b; i < e; ++i) ++hits[i];  // plain writes: published by the hand-off
    });
  }
  for (size_t i = 0; i < hits.size(); ++i) ASSERT_EQ(hits[i], 200) << i;
}

}  // namespace
}  // namespace proctor
