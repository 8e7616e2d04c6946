#include "eval/tasks/task_eval.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "util/testing_files.h"

namespace proctor {
namespace {

using ::testing::HasSubstr;

TEST(ParseTaskSelection, SuitesExpandInOrderWithoutDuplicates) {
  const TaskSelection s = ParseTaskSelection("hashhop,capability,,mmlu");
  EXPECT_EQ(s.tasks,
            (std::vector<std::string>{"hashhop", "gsm8k", "mmlu", "ifeval", "bfcl", "humaneval"}));
  ASSERT_EQ(s.suites.size(), 1u);
  EXPECT_EQ(s.suites[0].name, "capability");
  EXPECT_TRUE(s.suites[0].not_run.empty());
  EXPECT_EQ(ParseTaskSelection("smoketest").tasks, (std::vector<std::string>{"gsm8k"}));
  EXPECT_THAT(testing::ErrorOf([] { ParseTaskSelection("mmlu,ifevall"); }),
              HasSubstr("unknown task 'ifevall'"));
  EXPECT_THAT(testing::ErrorOf([] { ParseTaskSelection("mmlu,ifevall"); }),
              HasSubstr("suites: capability, smoketest"));
  EXPECT_THAT(testing::ErrorOf([] { ParseTaskSelection(","); }), HasSubstr("no task named"));
}

TaskScore Score(const std::string& task, int64_t n, int64_t correct) {
  TaskScore s;
  s.task = task;
  s.n = n;
  s.counts[static_cast<size_t>(ItemOutcome::kCorrect)] = correct;
  s.counts[static_cast<size_t>(ItemOutcome::kWrong)] = n - correct;
  return s;
}

TEST(ScoreSuites, CapabilityIsTheMeanOfWhatRanAndSkippedTasksAreNotZeros) {
  const TaskSelection s = ParseTaskSelection("capability,smoketest");
  // bfcl, humaneval and hashhop did not run (no score): they are left out, not counted as 0.
  const std::vector<SuiteScore> suites =
      ScoreSuites(s.suites, {Score("gsm8k", 10, 5), Score("mmlu", 4, 1)});
  ASSERT_EQ(suites.size(), 2u);
  EXPECT_DOUBLE_EQ(suites[0].score, (50.0 + 25.0) / 2);
  EXPECT_EQ(suites[0].tasks_run, (std::vector<std::string>{"gsm8k", "mmlu"}));
  EXPECT_EQ(suites[0].not_run,
            (std::vector<std::string>{"ifeval", "bfcl", "humaneval", "hashhop"}));
  EXPECT_TRUE(std::isnan(suites[1].score));  // smoketest has no score of its own
  const std::string line = FormatSuiteScores(suites, 2'500'000);
  EXPECT_THAT(line, HasSubstr("capability: 37.50 (the unweighted mean of gsm8k, mmlu; not run: "
                              "ifeval, bfcl, humaneval, hashhop) · weights on disk 2.5 MB"));
  EXPECT_EQ(line.find("smoketest"), std::string::npos);
}

}  // namespace
}  // namespace proctor
