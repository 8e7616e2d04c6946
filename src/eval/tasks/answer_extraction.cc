#include "eval/tasks/answer_extraction.h"

#include <cmath>
#include <cstdlib>

namespace proctor {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

struct NumberSpan {
  size_t begin = std::string_view::npos;  // npos: none
  size_t end = 0;
};

// The number that starts at or after `from`: `-?[0-9][0-9,]*(\.[0-9]+)?`. A trailing comma is
// punctuation, not part of the number.
NumberSpan NextNumber(std::string_view text, size_t from) {
  for (size_t i = from; i < text.size(); ++i) {
    if (!IsDigit(text[i])) continue;
    NumberSpan span;
    span.begin = (i > 0 && text[i - 1] == '-') ? i - 1 : i;
    size_t j = i;
    while (j < text.size() && (IsDigit(text[j]) || text[j] == ',')) ++j;
    while (text[j - 1] == ',') --j;
    if (j + 1 < text.size() && text[j] == '.' && IsDigit(text[j + 1])) {
      ++j;
      while (j < text.size() && IsDigit(text[j])) ++j;
    }
    span.end = j;
    return span;
  }
  return {};
}

double NumberValue(std::string_view text, NumberSpan span) {
  std::string digits;
  for (size_t i = span.begin; i < span.end; ++i) {
    if (text[i] != ',') digits += text[i];
  }
  return std::strtod(digits.c_str(), nullptr);
}

}  // namespace

std::optional<double> ParseAnswerNumber(std::string_view text) {
  const NumberSpan span = NextNumber(text, 0);
  if (span.begin == std::string_view::npos) return std::nullopt;
  return NumberValue(text, span);
}

std::string_view AnswerAfterThinking(std::string_view completion) {
  constexpr std::string_view kEnd = "</think>";
  const size_t at = completion.find(kEnd);
  return at == std::string_view::npos ? completion : completion.substr(at + kEnd.size());
}

NumericAnswer ExtractGsm8kAnswer(std::string_view completion) {
  const std::string_view text = AnswerAfterThinking(completion);
  if (const size_t hashes = text.find("####"); hashes != std::string_view::npos) {
    // The number must follow at once (spaces and a currency sign aside).
    size_t at = hashes + 4;
    while (at < text.size() && (text[at] == ' ' || text[at] == '$')) ++at;
    const NumberSpan span = NextNumber(text, at);
    if (span.begin == at) return {NumberValue(text, span), "####"};
  }
  constexpr std::string_view kBoxed = "\\boxed{";
  if (const size_t boxed = text.find(kBoxed); boxed != std::string_view::npos) {
    const size_t open = boxed + kBoxed.size();
    const size_t close = text.find('}', open);
    const std::string_view inside =
        text.substr(open, close == std::string_view::npos ? std::string_view::npos : close - open);
    if (const std::optional<double> value = ParseAnswerNumber(inside)) return {value, "boxed"};
  }
  NumberSpan last;
  for (NumberSpan span = NextNumber(text, 0); span.begin != std::string_view::npos;
       span = NextNumber(text, span.end)) {
    last = span;
  }
  if (last.begin == std::string_view::npos) return {std::nullopt, "none"};
  return {NumberValue(text, last), "last number"};
}

bool Gsm8kCorrect(double expected, double predicted) {
  return std::fabs(expected - predicted) < 1e-3;
}

}  // namespace proctor
