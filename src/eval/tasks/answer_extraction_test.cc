#include "eval/tasks/answer_extraction.h"

#include <gtest/gtest.h>

namespace proctor {
namespace {

struct Case {
  const char* completion;
  std::optional<double> value;
  const char* rule;
};

TEST(ExtractGsm8kAnswer, TheDocumentedRulesInOrder) {
  const Case cases[] = {
      {"6 + 12 = 18 eggs.\n#### 18", 18, "####"},
      {"#### 1,000 dollars, not 5", 1000, "####"},
      {"it is \\boxed{42} and then 7", 42, "boxed"},
      {"\\boxed{-3.5}", -3.5, "boxed"},
      {"She earns 3 + 4 = 7, so $1,250.50 in total.", 1250.5, "last number"},
      {"The answer is 18.", 18, "last number"},
      {"Numbers 1, 2, 3,", 3, "last number"},
      {"no number at all", std::nullopt, "none"},
      {"#### none here, but 12 later", 12, "last number"},
      {"\\boxed{x} then 9", 9, "last number"},
      // Thinking is removed: only the text after the first </think> counts.
      {"<think>#### 99 maybe</think>So #### 5", 5, "####"},
      {"<think>7</think>no digits", std::nullopt, "none"},
      {"", std::nullopt, "none"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.completion);
    const NumericAnswer answer = ExtractGsm8kAnswer(c.completion);
    EXPECT_EQ(answer.value, c.value);
    EXPECT_EQ(answer.rule, c.rule);
  }
}

TEST(Gsm8kCorrect, WithinOneThousandth) {
  EXPECT_TRUE(Gsm8kCorrect(18, 18));
  EXPECT_TRUE(Gsm8kCorrect(0.5, 0.5009));
  EXPECT_FALSE(Gsm8kCorrect(0.5, 0.501));
  EXPECT_FALSE(Gsm8kCorrect(18, -18));
}

TEST(ParseAnswerNumber, FirstNumberCommasStripped) {
  EXPECT_EQ(ParseAnswerNumber(" $1,250.50 total"), 1250.5);
  EXPECT_EQ(ParseAnswerNumber("-7 and 8"), -7);
  EXPECT_EQ(ParseAnswerNumber("x. 3.x"), 3);
  EXPECT_EQ(ParseAnswerNumber("none"), std::nullopt);
}

}  // namespace
}  // namespace proctor
