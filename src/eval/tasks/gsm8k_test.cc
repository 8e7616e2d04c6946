#include "eval/tasks/gsm8k.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "eval/clients/scripted_client.h"
#include "eval/scoring/sample_indices.h"

namespace proctor {
namespace {

std::vector<Gsm8kItem> Items(int count) {
  std::vector<Gsm8kItem> items;
  items.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    items.push_back({.question = fmt::format("What is {} + 1?", i),
                     .answer_text = fmt::format("#### {}", i + 1),
                     .answer = static_cast<double>(i + 1)});
  }
  return items;
}

TEST(Gsm8kPrompt, TheDocumentedExemplarBlockAndQuestion) {
  EXPECT_EQ(Gsm8kExemplars(),
            "Q: There are 15 trees in the grove. Grove workers will plant trees in the grove "
            "today. After they are done, there will be 21 trees. How many trees did the grove "
            "workers plant today?\n"
            "A: There were 15 trees and there are 21 trees after the planting, so the workers "
            "planted 21 - 15 = 6 trees.\n#### 6\n\n"
            "Q: Leah had 32 chocolates and her sister had 42. If they ate 35, how many pieces do "
            "they have left in total?\n"
            "A: Together they had 32 + 42 = 74 chocolates. After eating 35 they have 74 - 35 = "
            "39 left.\n#### 39\n\n"
            "Q: Shawn has five toys. For Christmas, he got two toys each from his mom and dad. "
            "How many toys does he have now?\n"
            "A: He got 2 + 2 = 4 more toys, so he has 5 + 4 = 9 toys now.\n#### 9\n\n");
  EXPECT_EQ(Gsm8kPrompt(Items(1)[0]), Gsm8kExemplars() + "Q: What is 0 + 1?\nA:");
}

TEST(Gsm8kTask, SamplesWithSampleIndices) {
  const auto task = MakeGsm8kTask(Items(1319), 50, 42, true);
  ASSERT_EQ(task->size(), 50);
  // FORMATS.md section 5: sampleIndices(1319, 50, 42) starts 2, 91, 134 and ends 1313.
  EXPECT_EQ(task->ItemId(0), "2");
  EXPECT_EQ(task->ItemId(1), "91");
  EXPECT_EQ(task->ItemId(2), "134");
  EXPECT_EQ(task->ItemId(49), "1313");
  EXPECT_EQ(MakeGsm8kTask(Items(5), 50, 42, true)->size(), 5);
  EXPECT_EQ(MakeGsm8kTask(Items(5), 0, 42, true)->size(), 5);
}

TEST(Gsm8kTask, ChatRequestsAndScriptedAnswersGiveTheExpectedAccuracy) {
  // Right on even items (in three answer styles), wrong on odd ones, one without a number.
  ScriptedClient client(
      [](const CompletionRequest& request) {
        const std::string content = request.messages[0]["content"].get<std::string>();
        const int i = std::stoi(content.substr(content.rfind("What is ") + 8));
        CompletionResult result;
        if (i == 5) {
          result.text = "I do not know.";
        } else if (i % 2 == 0) {
          const char* forms[] = {"So the sum is {}.\n#### {}", "<think>#### 0</think>\\boxed{{{}}}",
                                 "The answer is {}."};
          result.text = fmt::format(fmt::runtime(forms[i % 3]), i + 1, i + 1);
        } else {
          result.text = fmt::format("#### {}", i + 2);
        }
        return result;
      },
      [](const ChoiceRequest&) { return ChoiceResult{}; });
  const auto task = MakeGsm8kTask(Items(10), 0, 42, true);
  EXPECT_EQ(task->Note(), "");
  int outcomes[4] = {};
  for (int64_t i = 0; i < task->size(); ++i) {
    ++outcomes[static_cast<int>(task->Run(i, client).outcome)];
  }
  EXPECT_EQ(outcomes[static_cast<int>(ItemOutcome::kCorrect)], 5);
  EXPECT_EQ(outcomes[static_cast<int>(ItemOutcome::kWrong)], 4);
  EXPECT_EQ(outcomes[static_cast<int>(ItemOutcome::kUnscorable)], 1);
  ASSERT_EQ(client.completions.size(), 10u);
  const CompletionRequest& first = client.completions[0];
  EXPECT_TRUE(first.chat);
  EXPECT_FALSE(first.enable_thinking);
  EXPECT_EQ(first.max_tokens, 256);
  EXPECT_TRUE(first.stop.empty());
  ASSERT_EQ(first.messages.size(), 1u);
  EXPECT_EQ(first.messages[0]["role"], "user");
  EXPECT_EQ(first.messages[0]["content"], Gsm8kPrompt(Items(10)[0]));
}

TEST(Gsm8kTask, WithoutChatTheRawFallbackStopsAtTheNextQuestionAndSaysSo) {
  ScriptedClient client([](const CompletionRequest&) { return CompletionResult{.text = " 1"}; },
                        [](const ChoiceRequest&) { return ChoiceResult{}; }, false);
  const auto task = MakeGsm8kTask(Items(3), 0, 42, false);
  EXPECT_NE(task->Note().find("no chat template"), std::string::npos);
  const ItemRecord record = task->Run(0, client);
  EXPECT_EQ(record.outcome, ItemOutcome::kCorrect);
  EXPECT_EQ(record.extracted, "1");
  ASSERT_EQ(client.completions.size(), 1u);
  EXPECT_FALSE(client.completions[0].chat);
  EXPECT_EQ(client.completions[0].prompt, Gsm8kPrompt(Items(3)[0]));
  EXPECT_EQ(client.completions[0].stop, (std::vector<std::string>{"\nQ:"}));
}

}  // namespace
}  // namespace proctor
