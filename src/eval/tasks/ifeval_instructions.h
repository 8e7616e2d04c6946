// IFEval's instruction verifiers, each the check_following of lm-evaluation-harness's
// lm_eval/tasks/ifeval/instructions.py (Google's reference, with lm-eval's changes), on UTF-8 text
// with Python's string and regex semantics (docs/task-evals.md, "ifeval").
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace proctor {
namespace text {
class PunktSentenceTokenizer;
class LanguageDetector;
}  // namespace text

// What three kinds of verifier need beyond the response: nltk's Punkt sentence splitter with
// English parameters (number_sentences; capital_word_frequency through nltk.word_tokenize) and
// langdetect (response_language, english_capital, english_lowercase). Not owned.
struct IfevalTools {
  const text::PunktSentenceTokenizer* punkt = nullptr;
  const text::LanguageDetector* language_detector = nullptr;
};

// One instruction of a prompt: its id ("keywords:frequency") and its kwargs as the data file
// gives them ({"keyword": "...", "frequency": 3, "relation": "at least"}).
struct IfevalInstruction {
  std::string id;
  nlohmann::json kwargs;
};

struct IfevalItem {
  int64_t key = 0;
  std::string prompt;
  std::vector<IfevalInstruction> instructions;
};

// The 25 instruction ids of lm-eval's INSTRUCTION_DICT, in its order.
const std::vector<std::string>& IfevalInstructionIds();

// Whether a response follows one instruction. lm-eval counts an empty (all-whitespace) response
// as not following before it asks the verifier; that rule is CheckIfevalResponse's.
using InstructionCheck = std::function<bool(std::string_view response)>;

// The verifier of `instruction`. Error("[ifeval] ...") naming the id and the kwarg
// when the id is unknown or a kwarg it needs is missing, empty, zero or of the wrong type (where
// lm-eval would draw a random value instead), or is a pattern that does not compile.
// `tools` must outlive the check. A check built without the tool its id needs validates the
// kwargs all the same and fails (Error) only when it is run.
InstructionCheck MakeInstructionCheck(const IfevalInstruction& instruction,
                                      const IfevalTools& tools);

// The eight variants the loose score tries: the response, it without "*", without its first
// line, its last line, both, and those three without "*" (lm-eval's order).
std::vector<std::string> LooseResponseVariants(std::string_view response);

// Per instruction: strict = the response follows it; loose = one of LooseResponseVariants does.
// A variant that is empty after stripping whitespace never follows. Invalid UTF-8 in the response
// is read as U+FFFD first.
struct IfevalVerdict {
  std::vector<bool> strict;
  std::vector<bool> loose;
  bool strict_all() const;
  bool loose_all() const;
};
IfevalVerdict CheckIfevalResponse(const std::vector<InstructionCheck>& checks,
                                  std::string_view response);

}  // namespace proctor
