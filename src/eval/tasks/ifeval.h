// IFEval (Google's instruction-following eval, as lm-evaluation-harness scores it): 541 prompts,
// each asked as one user turn (thinking off, 512 new tokens); the answer after any thinking is
// checked by every instruction verifier of the prompt, strictly and after lm-eval's loose
// clean-ups (docs/task-evals.md).
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "eval/tasks/ifeval_instructions.h"
#include "eval/tasks/task.h"

namespace proctor {

inline constexpr int kIfevalMaxTokens = 512;

// FILE: Google's input_data.jsonl, one {key, prompt, instruction_id_list, kwargs} per line.
// Error naming the file and line for a malformed row, an unknown instruction id, or kwargs a
// verifier cannot take (MakeInstructionCheck's rules).
std::vector<IfevalItem> ReadIfeval(const std::filesystem::path& file);

// What the verifiers need besides the text, found once per run.
struct IfevalResources {
  std::shared_ptr<const text::PunktSentenceTokenizer> punkt;
  std::string punkt_source;  // the punkt_tab directory, or why Punkt runs untrained
  bool punkt_trained = false;
  std::shared_ptr<const text::LanguageDetector> language_detector;
  std::string langdetect_source;  // the langdetect package directory
};

// Punkt's English parameters from `punkt_dir` (a punkt_tab/english directory) or, when empty,
// where nltk would look (FindPunktTab); without them Punkt runs with empty parameters (nltk's
// untrained PunktSentenceTokenizer) and the task's note says so. langdetect's data from
// `langdetect_dir` or FindLangdetectPackage(); Error naming the places searched when absent.
IfevalResources LoadIfevalResources(const std::filesystem::path& punkt_dir,
                                    const std::filesystem::path& langdetect_dir);

// The items: SampleIndices(total, n, seed) (n <= 0: all). Accuracy is the prompt-level strict
// score; the record's tallies carry "loose" (prompt level) and "instructions strict" /
// "instructions loose" (instruction level). A client that cannot chat gets the prompt as raw
// text (the task's Note() says so).
std::unique_ptr<Task> MakeIfevalTask(std::vector<IfevalItem> items, int64_t n, uint32_t seed,
                                     bool chat, IfevalResources resources);

}  // namespace proctor
