#include "eval/tasks/task_runner.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "eval/clients/scripted_client.h"
#include "eval/tasks/gsm8k.h"
#include "util/error.h"
#include "util/file.h"
#include "util/testing_files.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::vector<Gsm8kItem> Items(int count) {
  std::vector<Gsm8kItem> items;
  items.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    items.push_back({.question = fmt::format("Q{}", i), .answer_text = "", .answer = 7});
  }
  return items;
}

// Answers "#### 7" (correct) on every item but the ones in `wrong`; throws on call `fail_at`.
ScriptedClient Client(const std::set<std::string>& wrong, int fail_at = -1) {
  auto calls = std::make_shared<int>(0);
  return ScriptedClient(
      [=](const CompletionRequest& request) {
        if ((*calls)++ == fail_at) Fail("test", "interrupted");
        const std::string prompt = request.messages[0]["content"].get<std::string>();
        const bool is_wrong = std::any_of(wrong.begin(), wrong.end(), [&](const std::string& q) {
          return prompt.ends_with("Q: " + q + "\nA:");
        });
        return CompletionResult{.text = is_wrong ? "#### 8" : "#### 7"};
      },
      [](const ChoiceRequest&) { return ChoiceResult{}; });
}

TEST(TaskScore, AccuracyAndTheHarnessStandardError) {
  TaskScore score;
  score.n = 10;
  score.counts[static_cast<size_t>(ItemOutcome::kCorrect)] = 3;
  EXPECT_DOUBLE_EQ(score.accuracy(), 0.3);
  // lm-eval: sample stddev / sqrt(n) of the 0/1 outcomes = sqrt(p(1-p)/(n-1)).
  double mean = 0.3, sum = 0;
  for (int i = 0; i < 10; ++i) sum += ((i < 3 ? 1.0 : 0.0) - mean) * ((i < 3 ? 1.0 : 0.0) - mean);
  EXPECT_NEAR(score.standard_error(), std::sqrt(sum / 9) / std::sqrt(10.0), 1e-15);
  score.n = 1;
  EXPECT_EQ(score.standard_error(), 0.0);
}

TEST(RunTasks, OutputsKeepEveryItemAndResumeAsksOnlyTheRest) {
  const testing::TempDir tmp;
  const fs::path outputs = tmp.path() / "items.jsonl";
  const auto task = MakeGsm8kTask(Items(6), 0, 42, true);
  const TaskRunOptions options{
      .outputs = outputs, .resume = false, .run_settings = {{"model", "m"}}, .quiet = true};
  // The first run dies on its 4th request: 3 items are on disk.
  ScriptedClient dying = Client({"Q1"}, 3);
  EXPECT_THROW(RunTasks({task.get()}, dying, options), Error);
  std::string text = ReadFileToString(outputs);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 4);  // header + 3 items
  // A torn last line (the process died mid-write) is dropped on resume.
  std::ofstream(outputs, std::ios::app) << "{\"task\":\"gsm8k\",\"id\":\"4\",\"outc";
  TaskRunOptions resume = options;
  resume.resume = true;
  ScriptedClient rest = Client({"Q1"});
  const std::vector<TaskScore> scores = RunTasks({task.get()}, rest, resume);
  EXPECT_EQ(rest.completions.size(), 3u);
  ASSERT_EQ(scores.size(), 1u);
  EXPECT_EQ(scores[0].n, 6);
  EXPECT_EQ(scores[0].resumed, 3);
  EXPECT_EQ(scores[0].count(ItemOutcome::kCorrect), 5);
  EXPECT_EQ(scores[0].count(ItemOutcome::kWrong), 1);
  // Every line parses; each item appears once.
  text = ReadFileToString(outputs);
  std::istringstream lines(text);
  std::set<std::string> ids;
  int count = 0;
  for (std::string line; std::getline(lines, line); ++count) {
    const auto row = nlohmann::json::parse(line);
    if (count == 0) {
      EXPECT_EQ(row["run"], nlohmann::json({{"model", "m"}}));
      continue;
    }
    ids.insert(row["id"].get<std::string>());
    EXPECT_EQ(row["correct"], row["id"] != "1");
    EXPECT_EQ(row["extracted"], row["id"] == "1" ? "8" : "7");
  }
  EXPECT_EQ(count, 7);
  EXPECT_EQ(ids.size(), 6u);
  // A second resume asks nothing.
  ScriptedClient none = Client({});
  RunTasks({task.get()}, none, resume);
  EXPECT_TRUE(none.completions.empty());
}

TEST(RunTasks, RequestErrorsAreAskedAgainOnResume) {
  const testing::TempDir tmp;
  const fs::path outputs = tmp.path() / "items.jsonl";
  const auto task = MakeGsm8kTask(Items(3), 0, 42, true);
  TaskRunOptions options{.outputs = outputs, .run_settings = {{"x", 1}}, .quiet = true};
  ScriptedClient failing(
      [](const CompletionRequest&) {
        return CompletionResult{.status = ClientStatus::kRequestError, .error = "status 503"};
      },
      [](const ChoiceRequest&) { return ChoiceResult{}; });
  const auto first = RunTasks({task.get()}, failing, options);
  EXPECT_EQ(first[0].count(ItemOutcome::kRequestError), 3);
  options.resume = true;
  ScriptedClient working = Client({});
  const auto second = RunTasks({task.get()}, working, options);
  EXPECT_EQ(working.completions.size(), 3u);
  EXPECT_EQ(second[0].count(ItemOutcome::kCorrect), 3);
}

TEST(RunTasks, OutputsFileChecksComeBeforeAnyRequest) {
  const testing::TempDir tmp;
  const fs::path outputs = tmp.path() / "items.jsonl";
  std::ofstream(outputs) << "{\"proctor_eval_outputs\":1,\"run\":{\"model\":\"a\"}}\n";
  const auto task = MakeGsm8kTask(Items(2), 0, 42, true);
  ScriptedClient client = Client({});
  auto error_of = [&](const TaskRunOptions& options) -> std::string {
    try {
      RunTasks({task.get()}, client, options);
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_THAT(error_of({.outputs = outputs, .run_settings = {{"model", "a"}}, .quiet = true}),
              HasSubstr("exists: pass --resume"));
  EXPECT_THAT(
      error_of(
          {.outputs = outputs, .resume = true, .run_settings = {{"model", "b"}}, .quiet = true}),
      HasSubstr("belongs to another run"));
  std::ofstream(outputs) << "{\"something\": 1}\n";
  EXPECT_THAT(error_of({.outputs = outputs, .resume = true, .quiet = true}),
              HasSubstr("not an outputs file"));
  std::ofstream(outputs) << "{\"proctor_eval_outputs\":2,\"run\":{}}\n";
  EXPECT_THAT(error_of({.outputs = outputs, .resume = true, .quiet = true}),
              HasSubstr("outputs format version 2"));
  EXPECT_TRUE(client.completions.empty());
}

TEST(FormatTaskTable, RowsAndALegend) {
  TaskScore score;
  score.task = "gsm8k";
  score.n = 4;
  score.counts = {3, 0, 1, 0};
  const std::string table = FormatTaskTable({score});
  EXPECT_THAT(table, HasSubstr("gsm8k"));
  EXPECT_THAT(table, HasSubstr("75.00% ± 25.00"));
  EXPECT_THAT(table, HasSubstr("standard error"));
}

}  // namespace
}  // namespace proctor
