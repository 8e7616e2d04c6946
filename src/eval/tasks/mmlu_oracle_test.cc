// MMLU prompts against lm-evaluation-harness itself (tools/oracle/lm_eval_mmlu_prompts.py: its
// mmlu_<subject> task configs, ConfigurableTask and first_n few-shot sampler over the same CSV
// files): one sampled item of every subject, byte for byte.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "eval/tasks/mmlu.h"
#include "util/testing_files.h"
#include "util/testing_oracles.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;

TEST(MmluOracle, PromptsEqualLmEvaluationHarnesssOwn) {
  const fs::path dir = testing::FixturesDir() / "mmlu";
  if (!fs::exists(dir)) GTEST_SKIP() << "fixture absent: " << dir;
  if (const std::string problem = testing::OraclesProblem({"python"}); !problem.empty()) {
    GTEST_SKIP() << "oracle unavailable: " << problem;
  }
  const std::vector<MmluSubject> subjects = ReadMmlu(dir);
  const std::vector<MmluPick> picks = SampleMmlu(subjects, 57, 42);
  ASSERT_EQ(picks.size(), 57u);
  std::string args;
  for (const MmluPick& pick : picks) {
    args += fmt::format(" {}:{}", subjects[static_cast<size_t>(pick.subject)].name, pick.item);
  }
  const testing::CommandOutput out = testing::RunCommand(fmt::format(
      "{} {}/tools/oracle/lm_eval_mmlu_prompts.py {}{} 2>/dev/null",
      testing::Oracles("python").Path("python"), PROCTOR_SOURCE_DIR, dir.string(), args));
  ASSERT_EQ(out.status, 0) << out.output;
  const nlohmann::json theirs = nlohmann::json::parse(out.output);
  ASSERT_EQ(theirs.size(), picks.size());
  int same = 0;
  for (const MmluPick& pick : picks) {
    const MmluSubject& subject = subjects[static_cast<size_t>(pick.subject)];
    const std::string id = fmt::format("{}/{}", subject.name, pick.item);
    ASSERT_TRUE(theirs.contains(id)) << id;
    const std::string mine = MmluPrompt(subject, subject.test[static_cast<size_t>(pick.item)]);
    EXPECT_EQ(mine, theirs[id].get<std::string>()) << id;
    same += mine == theirs[id].get<std::string>() ? 1 : 0;
  }
  std::printf("[ lm-eval ] mmlu: %d of %zu prompts byte-identical\n", same, picks.size());
}

}  // namespace
}  // namespace proctor
