// Reading a task's answer out of a model's completion (docs/task-evals.md).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace proctor {

// The first number in `text` (`-?[0-9][0-9,]*(\.[0-9]+)?`, commas stripped): "$1,250.50" ->
// 1250.5. Nullopt when there is none.
std::optional<double> ParseAnswerNumber(std::string_view text);

// The text a model answered with: everything after the first "</think>" (thinking removed), or
// all of it when it has none.
std::string_view AnswerAfterThinking(std::string_view completion);

struct NumericAnswer {
  std::optional<double> value;  // nullopt: no number at all (unscorable)
  std::string rule;             // "####", "boxed", "last number" or "none"
};

// GSM8K: on AnswerAfterThinking(completion), the number right after the first "####" (spaces and
// '$' between are allowed), else the first number inside the first "\boxed{...}", else the last
// number of the text.
NumericAnswer ExtractGsm8kAnswer(std::string_view completion);

// |expected - predicted| < 1e-3.
bool Gsm8kCorrect(double expected, double predicted);

}  // namespace proctor
