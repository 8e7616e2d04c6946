#include "eval/tasks/ifeval.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "eval/clients/scripted_client.h"
#include "eval/tasks/task_runner.h"
#include "text/langdetect.h"
#include "text/punkt.h"
#include "util/testing_files.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

IfevalResources NoLanguageResources() {
  IfevalResources resources;
  resources.punkt = std::make_shared<text::PunktSentenceTokenizer>(text::PunktParameters{});
  resources.punkt_source = "untrained (test)";
  return resources;
}

// Two prompts: key 1 asks for no commas and a title; key 2 for lowercase-free quoting.
std::vector<IfevalItem> Items() {
  return {{.key = 1,
           .prompt = "Write a title.",
           .instructions = {{.id = "punctuation:no_comma", .kwargs = nlohmann::json::object()},
                            {.id = "detectable_format:title", .kwargs = nlohmann::json::object()}}},
          {.key = 2,
           .prompt = "Quote it.",
           .instructions = {{.id = "startend:quotation", .kwargs = nlohmann::json::object()}}}};
}

TEST(ReadIfeval, TheFixtureAndItsErrors) {
  const fs::path fixture = testing::FixturesDir() / "ifeval" / "input_data.jsonl";
  if (!fs::exists(fixture)) GTEST_SKIP() << "no " << fixture;
  const std::vector<IfevalItem> items = ReadIfeval(fixture);
  ASSERT_EQ(items.size(), 541u);
  EXPECT_EQ(items[0].key, 1000);
  size_t instructions = 0;
  for (const IfevalItem& item : items) instructions += item.instructions.size();
  EXPECT_EQ(instructions, 834u);  // lm-eval's inst_level denominators

  const testing::TempDir tmp;
  auto read = [&](const std::string& line) {
    std::ofstream(tmp.path() / "bad.jsonl")
        << R"({"key": 1, "prompt": "p", "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]})"
        << "\n"
        << line << "\n";
    return testing::ErrorOf([&] { ReadIfeval(tmp.path() / "bad.jsonl"); });
  };
  EXPECT_THAT(read(R"({"key": 2, "prompt": "p", "instruction_id_list": ["x:y"], "kwargs": [{}]})"),
              AllOf(HasSubstr("bad.jsonl:2"), HasSubstr("unknown instruction id 'x:y'")));
  EXPECT_THAT(
      read(
          R"({"key": 2, "prompt": "p", "instruction_id_list": ["punctuation:no_comma"], "kwargs": []})"),
      AllOf(HasSubstr("bad.jsonl:2"), HasSubstr("as long as instruction_id_list")));
  EXPECT_THAT(
      read(
          R"({"key": 2, "prompt": "p", "instruction_id_list": ["keywords:frequency"], "kwargs": [{"keyword": "a"}]})"),
      AllOf(HasSubstr("bad.jsonl:2"), HasSubstr("needs kwarg 'frequency'")));
  EXPECT_THAT(read(R"({"prompt": "p"})"), HasSubstr("no integer 'key'"));
}

TEST(IfevalTask, AsksOneChatTurnAndScoresStrictAndLoose) {
  // Key 1: a title but a comma in a middle line (fails strictly and loosely); key 2: quoted after
  // a first line
  // (fails strictly, passes loosely once the first line is dropped).
  ScriptedClient client(
      [](const CompletionRequest& request) {
        const std::string prompt = request.messages[0]["content"].get<std::string>();
        CompletionResult result;
        result.text = prompt == "Write a title."
                          ? "<think>ignored, yes</think><<Title>>\nA, B.\nEnd."
                          : "Here it is:\n\"Quoted.\"";
        return result;
      },
      nullptr);
  const auto task = MakeIfevalTask(Items(), 0, 42, true, NoLanguageResources());
  ASSERT_EQ(task->size(), 2);
  const ItemRecord first = task->Run(0, client);
  ASSERT_EQ(client.completions.size(), 1u);
  EXPECT_TRUE(client.completions[0].chat);
  EXPECT_FALSE(client.completions[0].enable_thinking);
  EXPECT_EQ(client.completions[0].max_tokens, kIfevalMaxTokens);
  EXPECT_EQ(first.id, "1");
  EXPECT_EQ(first.expected, "punctuation:no_comma,detectable_format:title");
  EXPECT_EQ(first.outcome, ItemOutcome::kWrong);
  EXPECT_EQ(first.extracted, "strict 01 loose 01");  // the comma in the thinking does not count
  const ItemRecord second = task->Run(1, client);
  EXPECT_EQ(second.outcome, ItemOutcome::kWrong);
  EXPECT_EQ(second.extracted, "strict 0 loose 1");

  // Through the runner: accuracy = prompt-level strict, the tallies summed, and kept on resume.
  const testing::TempDir tmp;
  TaskRunOptions options{.outputs = tmp.path() / "out.jsonl"};
  std::vector<TaskScore> scores = RunTasks({task.get()}, client, options);
  ASSERT_EQ(scores.size(), 1u);
  EXPECT_EQ(scores[0].accuracy(), 0.0);
  const Tallies expected = {
      {"loose", {1, 2}}, {"instructions strict", {1, 3}}, {"instructions loose", {2, 3}}};
  EXPECT_EQ(scores[0].tallies, expected);
  EXPECT_THAT(FormatTaskTable(scores), HasSubstr("instructions loose   66.67%        2 of 3"));
  EXPECT_EQ(TaskScoreToJson(scores[0])["tallies"]["loose"]["hits"], 1);
  options.resume = true;
  const size_t asked = client.completions.size();
  scores = RunTasks({task.get()}, client, options);
  EXPECT_EQ(client.completions.size(), asked);  // nothing asked again
  EXPECT_EQ(scores[0].resumed, 2);
  EXPECT_EQ(scores[0].tallies, expected);
}

TEST(IfevalTask, RawTextWithoutChatAndANoteForUntrainedPunkt) {
  ScriptedClient client([](const CompletionRequest&) { return CompletionResult{.text = "x"}; },
                        nullptr, /*can_chat=*/false);
  const auto task = MakeIfevalTask(Items(), 0, 42, false, NoLanguageResources());
  task->Run(0, client);
  EXPECT_FALSE(client.completions[0].chat);
  EXPECT_EQ(client.completions[0].prompt, "Write a title.");
  EXPECT_THAT(task->Note(), HasSubstr("raw text"));
  EXPECT_THAT(task->Note(), HasSubstr("untrained Punkt"));
  EXPECT_EQ(task->Settings()["punkt_trained"], false);
}

TEST(LoadIfevalResources, FindsDebiansLangdetectAndNamesWhatIsMissing) {
  const IfevalResources found = LoadIfevalResources({}, {});
  ASSERT_TRUE(found.language_detector);
  EXPECT_EQ(found.language_detector->languages().size(), 55u);
  EXPECT_EQ(found.language_detector->Detect("Das ist ein kurzer Text auf Deutsch."), "de");
  const testing::TempDir tmp;
  EXPECT_THAT(testing::ErrorOf([&] { LoadIfevalResources({}, tmp.path()); }),
              AllOf(HasSubstr(tmp.path().string()), HasSubstr("language profiles")));
  EXPECT_THAT(testing::ErrorOf([&] { LoadIfevalResources(tmp.path(), {}); }),
              HasSubstr("abbrev_types.txt"));
}

}  // namespace
}  // namespace proctor
