// GSM8K: 3 fixed worked exemplars and the question as one user turn, greedy, 256 new tokens, the
// numeric answer extracted and compared (docs/task-evals.md).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "eval/tasks/task.h"
#include "eval/tasks/task_data.h"

namespace proctor {

// The three exemplars, each "Q: QUESTION\nA: WORKED ANSWER ending in #### N\n\n".
const std::string& Gsm8kExemplars();
// The user turn (chat) or the raw prompt (no chat template): Gsm8kExemplars() + "Q: " +
// question + "\nA:".
std::string Gsm8kPrompt(const Gsm8kItem& item);

inline constexpr int kGsm8kMaxTokens = 256;
// Raw-text prompts end at the next exemplar the model starts writing.
inline constexpr const char* kGsm8kRawStop = "\nQ:";

// The items: SampleIndices(total, n, seed) (n <= 0: all). A client that cannot chat gets the
// same text as a raw prompt with the stop "\nQ:" (the task's Note() says so).
std::unique_ptr<Task> MakeGsm8kTask(std::vector<Gsm8kItem> items, int64_t n, uint32_t seed,
                                    bool chat);

}  // namespace proctor
