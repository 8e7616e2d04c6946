// The multiple-choice tasks against lm-evaluation-harness itself
// (tools/oracle/lm_eval_mc_requests.py: its task configs, process_docs and doc_to_* functions
// and construct_requests over the same files): every item's (context, continuation) requests
// and its gold index, byte for byte, for all five tasks.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "eval/clients/engine_client.h"
#include "eval/runners/eval_model.h"
#include "eval/tasks/multiple_choice.h"
#include "util/testing_files.h"
#include "util/testing_oracles.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;

std::vector<McItem> Read(const std::string& task, const fs::path& dir) {
  if (task == "hellaswag") return ReadHellaswag(dir / "hellaswag" / "hellaswag_val_1000.jsonl");
  if (task == "arc-easy") return ReadArc(dir / "arc" / "ARC-Easy-Test.jsonl");
  if (task == "arc-challenge") return ReadArc(dir / "arc" / "ARC-Challenge-Test.jsonl");
  if (task == "piqa") return ReadPiqa(dir / "piqa" / "dev.jsonl", dir / "piqa" / "dev-labels.lst");
  return ReadWinogrande(dir / "winogrande" / "dev.jsonl");
}

class McOracle : public ::testing::TestWithParam<std::string> {};

TEST_P(McOracle, RequestsEqualLmEvaluationHarnesssOwn) {
  const std::string task = GetParam();
  const fs::path dir = testing::FixturesDir();
  if (!fs::exists(dir / "arc") || !fs::exists(dir / "hellaswag")) {
    GTEST_SKIP() << "fixtures absent under " << dir;
  }
  if (const std::string problem = testing::OraclesProblem({"python"}); !problem.empty()) {
    GTEST_SKIP() << "oracle unavailable: " << problem;
  }
  const std::vector<McItem> mine = Read(task, dir);
  const testing::CommandOutput out = testing::RunCommand(fmt::format(
      "{} {}/tools/oracle/lm_eval_mc_requests.py {} {} all 2>/dev/null",
      testing::Oracles("python").Path("python"), PROCTOR_SOURCE_DIR, dir.string(), task));
  ASSERT_EQ(out.status, 0) << out.output.substr(0, 2000);
  const nlohmann::json theirs = nlohmann::json::parse(out.output);
  ASSERT_EQ(theirs.size(), mine.size());
  size_t same = 0;
  for (size_t i = 0; i < mine.size(); ++i) {
    const nlohmann::json& t = theirs[i];
    const nlohmann::json& gold = t["gold"];
    const int their_gold = gold.is_string() ? std::stoi(gold.get<std::string>()) : gold.get<int>();
    bool equal = their_gold == mine[i].gold && t["requests"].size() == mine[i].requests.size();
    for (size_t c = 0; equal && c < mine[i].requests.size(); ++c) {
      equal = t["requests"][c][0] == mine[i].requests[c].context &&
              t["requests"][c][1] == mine[i].requests[c].continuation;
    }
    if (!equal) {
      ADD_FAILURE() << task << " item " << i << " (" << mine[i].id << "): lm-eval " << t.dump()
                    << "\nproctor context '" << mine[i].requests[0].context << "' continuation '"
                    << mine[i].requests[0].continuation << "' gold " << mine[i].gold;
    }
    same += equal ? 1 : 0;
  }
  std::printf("[ lm-eval ] %s: %zu of %zu items' requests identical\n", task.c_str(), same,
              mine.size());
}

// lm-eval's own scoring (process_results: acc, and acc_norm by characters) on the real
// stories260K's log-likelihoods from proctor's engine equals proctor's per item (the first 40
// items of each task).
TEST_P(McOracle, ScoringOnAFixedModelsLoglikelihoodsEqualsLmEvaluationHarnesss) {
  const std::string task = GetParam();
  const fs::path dir = testing::FixturesDir();
  const fs::path gguf = dir / "stories260K" / "stories260K.gguf";
  if (!fs::exists(dir / "arc") || !fs::exists(gguf)) GTEST_SKIP() << "fixtures absent";
  if (const std::string problem = testing::OraclesProblem({"python"}); !problem.empty()) {
    GTEST_SKIP() << "oracle unavailable: " << problem;
  }
  std::vector<McItem> items = Read(task, dir);
  items.resize(40);
  EngineClient client(EvalModel::Open(gguf.string()), {}, 512);
  const auto scored = MakeMultipleChoiceTask(task, items, 0, 42, task != "winogrande");
  nlohmann::json loglikelihoods = nlohmann::json::array();
  std::vector<ItemRecord> records;
  std::string indices;
  for (int64_t i = 0; i < 40; ++i) {
    const McItem& item = items[static_cast<size_t>(i)];
    loglikelihoods.push_back(client.Loglikelihoods(item.requests).logprobs);
    records.push_back(scored->Run(i, client));
    indices += fmt::format(" {}", i);
  }
  ASSERT_EQ(scored->ItemId(0), items[0].id);  // n = 0: every item, in order
  const testing::TempDir tmp;
  std::ofstream(tmp.path() / "lls.json") << loglikelihoods.dump();
  const testing::CommandOutput out = testing::RunCommand(
      fmt::format("{} {}/tools/oracle/lm_eval_mc_requests.py {} {}{} --scores {} 2>/dev/null",
                  testing::Oracles("python").Path("python"), PROCTOR_SOURCE_DIR, dir.string(), task,
                  indices, (tmp.path() / "lls.json").string()));
  ASSERT_EQ(out.status, 0) << out.output.substr(0, 2000);
  const nlohmann::json theirs = nlohmann::json::parse(out.output);
  ASSERT_EQ(theirs.size(), 40u);
  int same = 0, correct = 0;
  for (size_t i = 0; i < 40; ++i) {
    const nlohmann::json& s = theirs[i]["scores"];
    const bool acc = records[i].outcome == ItemOutcome::kCorrect;
    bool equal = s["acc"].get<double>() == (acc ? 1.0 : 0.0);
    if (s.contains("acc_norm")) {
      equal = equal && records[i].correct_norm.has_value() &&
              s["acc_norm"].get<double>() == (*records[i].correct_norm ? 1.0 : 0.0);
    } else {
      equal = equal && !records[i].correct_norm.has_value();
    }
    EXPECT_TRUE(equal) << task << " item " << i << ": lm-eval " << s.dump() << ", proctor acc "
                       << acc;
    same += equal ? 1 : 0;
    correct += acc ? 1 : 0;
  }
  std::printf("[ lm-eval ] %s scoring: %d of 40 items agree (%d correct)\n", task.c_str(), same,
              correct);
}

INSTANTIATE_TEST_SUITE_P(Tasks, McOracle,
                         ::testing::Values("hellaswag", "arc-easy", "arc-challenge", "piqa",
                                           "winogrande"),
                         [](const auto& param_info) {
                           std::string name = param_info.param;
                           for (char& c : name) c = c == '-' ? '_' : c;
                           return name;
                         });

}  // namespace
}  // namespace proctor
