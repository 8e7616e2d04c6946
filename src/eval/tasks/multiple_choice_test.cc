#include "eval/tasks/multiple_choice.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "eval/clients/scripted_client.h"
#include "util/testing_files.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

TEST(PythonCapitalize, FirstTitleCasedRestLowered) {
  EXPECT_EQ(PythonCapitalize("a few WOMEN"), "A few women");
  EXPECT_EQ(PythonCapitalize("éCOLE"), "École");
  EXPECT_EQ(PythonCapitalize("ǆemal"), "ǅemal");  // title case, not upper case
  EXPECT_EQ(PythonCapitalize(""), "");
}

McItem Item(const std::string& id, int gold, std::vector<std::string> choices) {
  McItem item;
  item.id = id;
  for (const std::string& c : choices) item.requests.push_back({"Q: " + id, " " + c});
  item.choices = std::move(choices);
  item.gold = gold;
  return item;
}

// Scripted log-likelihoods: acc takes the largest, acc_norm the largest per character.
TEST(MultipleChoiceTask, AccAndAccNormFromScriptedLoglikelihoods) {
  std::vector<McItem> items = {
      Item("0", 0, {"aa", "bbbbbbbb"}),  // -4 vs -6: acc picks 0; per char -2 vs -0.75: norm 1
      Item("1", 1, {"aa", "bbbbbbbb"}),  // same scores: acc wrong, norm right
      Item("2", 1, {"x", "y"}),          // tie: lowest index wins both
      Item("3", 0, {"x", "y"}),          // the client fails
  };
  ScriptedClient client([](const CompletionRequest&) { return CompletionResult{}; },
                        [](const ChoiceRequest&) { return ChoiceResult{}; }, true,
                        [](const std::vector<LoglikelihoodRequest>& requests) {
                          LoglikelihoodResult r;
                          if (requests[0].context == "Q: 3") {
                            r.status = ClientStatus::kRequestError;
                            r.error = "down";
                            return r;
                          }
                          if (requests[0].context == "Q: 2") {
                            r.logprobs = {-1, -1};
                          } else {
                            r.logprobs = {-4, -6};
                          }
                          r.greedy.assign(r.logprobs.size(), false);
                          return r;
                        });
  const auto task = MakeMultipleChoiceTask("t", items, 0, 42, true);
  ASSERT_EQ(task->size(), 4);
  std::map<std::string, ItemRecord> records;
  for (int64_t i = 0; i < task->size(); ++i) records[task->ItemId(i)] = task->Run(i, client);
  EXPECT_EQ(records["0"].outcome, ItemOutcome::kCorrect);
  EXPECT_EQ(records["0"].correct_norm, false);
  EXPECT_EQ(records["1"].outcome, ItemOutcome::kWrong);
  EXPECT_EQ(records["1"].correct_norm, true);
  EXPECT_EQ(records["1"].completion, "aa");
  EXPECT_EQ(records["2"].outcome, ItemOutcome::kWrong);
  EXPECT_EQ(records["2"].correct_norm, false);
  EXPECT_EQ(records["3"].outcome, ItemOutcome::kRequestError);
  EXPECT_FALSE(records["3"].correct_norm.has_value());
  // Each item's choices go to the client together (one shared context).
  ASSERT_EQ(client.loglikelihood_batches.size(), 4u);
  EXPECT_EQ(client.loglikelihood_batches[0].size(), 2u);
  // Without normalisation (winogrande) no acc_norm.
  const auto plain = MakeMultipleChoiceTask("w", items, 0, 42, false);
  EXPECT_FALSE(plain->Run(0, client).correct_norm.has_value());
}

TEST(MultipleChoiceData, MalformedFilesNameTheFileAndItem) {
  const testing::TempDir tmp;
  const fs::path file = tmp.path() / "x.jsonl";
  std::ofstream(file) << "{\"qID\": \"a\", \"sentence\": \"no blank\", \"option1\": \"x\", "
                         "\"option2\": \"y\", \"answer\": \"1\"}\n";
  EXPECT_THAT(testing::ErrorOf([&] { ReadWinogrande(file); }),
              HasSubstr("x.jsonl: item 1: the sentence has no '_'"));
  std::ofstream(file) << "{\"id\": \"q\", \"question\": {\"stem\": \"s\", \"choices\": [{\"text\": "
                         "\"t\", \"label\": \"A\"}]}, \"answerKey\": \"B\"}\n";
  EXPECT_THAT(testing::ErrorOf([&] { ReadArc(file); }),
              HasSubstr("x.jsonl: item 1: answerKey 'B' is no choice's label"));
  std::ofstream(file) << "{\"goal\": \"g\", \"sol1\": \"a\", \"sol2\": \"b\"}\n";
  std::ofstream(tmp.path() / "labels.lst") << "0\n1\n";
  EXPECT_THAT(testing::ErrorOf([&] { ReadPiqa(file, tmp.path() / "labels.lst"); }),
              HasSubstr("has 2 labels for the 1 items"));
  std::ofstream(file) << "{\"ind\": 1, \"activity_label\": \"a\", \"ctx_a\": \"b\", \"ctx_b\": "
                         "\"c\", \"endings\": [\"x\"], \"label\": 4}\n";
  EXPECT_THAT(testing::ErrorOf([&] { ReadHellaswag(file); }),
              HasSubstr("item 1: label 4 is not an ending's index"));
  std::ofstream(file) << "{broken\n";
  EXPECT_THAT(testing::ErrorOf([&] { ReadHellaswag(file); }), HasSubstr("x.jsonl:1: not a JSON"));
}

}  // namespace
}  // namespace proctor
