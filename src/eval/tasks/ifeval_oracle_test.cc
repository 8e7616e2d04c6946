// IFEval scoring against lm-evaluation-harness itself: its process_results (every instruction
// class, the strict and the loose score) on responses made to land on both sides of every
// verifier (tools/oracle/ifeval_cases.py), with nltk's Punkt on parameters nltk's PunktTrainer
// learned (the English punkt_tab cannot be downloaded here) and langdetect seeded with 0.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "eval/tasks/ifeval.h"
#include "text/langdetect.h"
#include "text/punkt.h"
#include "util/testing_files.h"
#include "util/testing_oracles.h"
#include "util/timing.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;

std::vector<bool> Bools(const nlohmann::json& j) { return j.get<std::vector<bool>>(); }

TEST(IfevalOracle, ScoresEqualLmEvalOnEveryInstruction) {
  if (const std::string problem = testing::OraclesProblem({"python"}); !problem.empty()) {
    GTEST_SKIP() << problem;
  }
  const std::string python = testing::Oracles("python").Path("python");
  const std::string tool = fmt::format("{}/tools/oracle/", PROCTOR_SOURCE_DIR);
  const fs::path data = testing::FixturesDir() / "ifeval" / "input_data.jsonl";
  const testing::TempDir tmp;
  // Punkt parameters learned from the prompts themselves and the project's docs.
  {
    std::ofstream prompts(tmp.path() / "prompts.txt");
    for (const IfevalItem& item : ReadIfeval(data)) prompts << item.prompt << "\n\n";
  }
  testing::RunOracleJson(fmt::format("{} {}lm_eval_ifeval.py train-punkt {} {}/docs/*.md --out {}",
                                     python, tool, (tmp.path() / "prompts.txt").string(),
                                     PROCTOR_SOURCE_DIR, (tmp.path() / "nltk").string()));
  const testing::CommandOutput cases_out =
      testing::RunCommand(fmt::format("python3 {}ifeval_cases.py {} --per-prompt 4 --seed 1 > {}",
                                      tool, data.string(), (tmp.path() / "cases.json").string()));
  ASSERT_EQ(cases_out.status, 0) << cases_out.output;
  const nlohmann::json theirs = testing::RunOracleJson(
      fmt::format("NLTK_DATA={} {} {}lm_eval_ifeval.py ifeval {}", (tmp.path() / "nltk").string(),
                  python, tool, (tmp.path() / "cases.json").string()));
  nlohmann::json cases;
  std::ifstream(tmp.path() / "cases.json") >> cases;
  ASSERT_EQ(theirs.size(), cases.size());
  ASSERT_GE(cases.size(), 2000u);

  IfevalResources resources;
  const text::PunktSentenceTokenizer punkt(
      text::ReadPunktTab(tmp.path() / "nltk" / "tokenizers" / "punkt_tab" / "english"));
  const std::string langdetect_dir =
      testing::RunCommand(python +
                          " -c 'import langdetect, os; print(os.path.dirname(langdetect.__file__), "
                          "end=\"\")'")
          .output;
  const text::LanguageDetector detector(langdetect_dir);
  const IfevalTools tools{.punkt = &punkt, .language_detector = &detector};

  // Per instruction id: {followed, not followed} as lm-eval's strict score says, and mismatches.
  std::map<std::string, std::array<int, 2>> sides;
  int compared = 0, skipped = 0, prompts_equal = 0;
  double checking_seconds = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const nlohmann::json& c = cases[i];
    std::vector<InstructionCheck> checks;
    bool random_letter = false;
    for (size_t k = 0; k < c["instruction_id_list"].size(); ++k) {
      const IfevalInstruction instruction{.id = c["instruction_id_list"][k].get<std::string>(),
                                          .kwargs = c["kwargs"][k]};
      // lm-eval checks a random letter where the data names '!' or '#' (see docs/task-evals.md).
      const std::string letter = instruction.kwargs.value("letter", std::string("a"));
      random_letter =
          random_letter || !(letter.size() == 1 && letter[0] >= 'a' && letter[0] <= 'z');
      checks.push_back(MakeInstructionCheck(instruction, tools));
    }
    if (random_letter) {
      ++skipped;
      continue;
    }
    const std::string response = c["response"].get<std::string>();
    const double start = MonotonicSeconds();
    const IfevalVerdict mine = CheckIfevalResponse(checks, response);
    checking_seconds += SecondsSince(start);
    const nlohmann::json& expected = theirs[i];
    EXPECT_EQ(mine.strict, Bools(expected["inst_level_strict_acc"]))
        << "case " << i << " " << c["instruction_id_list"].dump() << " " << c["kwargs"].dump()
        << "\nresponse: " << nlohmann::json(response).dump();
    EXPECT_EQ(mine.loose, Bools(expected["inst_level_loose_acc"]))
        << "case " << i << " " << c["instruction_id_list"].dump() << " " << c["kwargs"].dump()
        << "\nresponse: " << nlohmann::json(response).dump();
    EXPECT_EQ(mine.strict_all(), expected["prompt_level_strict_acc"].get<bool>()) << "case " << i;
    EXPECT_EQ(mine.loose_all(), expected["prompt_level_loose_acc"].get<bool>()) << "case " << i;
    prompts_equal += mine.strict == Bools(expected["inst_level_strict_acc"]) &&
                     mine.loose == Bools(expected["inst_level_loose_acc"]);
    ++compared;
    for (size_t k = 0; k < mine.strict.size(); ++k) {
      ++sides[c["instruction_id_list"][k].get<std::string>()]
             [expected["inst_level_strict_acc"][k].get<bool>() ? 0 : 1];
    }
  }
  // Every verifier was asked on responses that follow it and on responses that do not.
  EXPECT_EQ(sides.size(), IfevalInstructionIds().size());
  for (const auto& [id, counts] : sides) {
    EXPECT_GT(counts[0], 0) << id << " never followed";
    EXPECT_GT(counts[1], 0) << id << " never broken";
  }
  std::printf(
      "[ lm-eval ] ifeval: %d of %d responses scored alike (strict and loose, per "
      "instruction); %d with a '!'/'#' letter left out; proctor checked them in %.2f s\n",
      prompts_equal, compared, skipped, checking_seconds);
}

}  // namespace
}  // namespace proctor
