// MMLU, 5-shot, scored by the next-token choice among " A", " B", " C", " D" (docs/task-evals.md).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "eval/tasks/task.h"
#include "eval/tasks/task_data.h"

namespace proctor {

// The raw prompt (no chat template): "The following are multiple choice questions (with answers)
// about SUBJECT.\n\n" (underscores as spaces), the subject's first 5 dev items as
// "QUESTION\nA. ..\nB. ..\nC. ..\nD. ..\nAnswer: X\n\n" (question trimmed), then the test item in
// the same form ending in "Answer:".
std::string MmluPrompt(const MmluSubject& subject, const MmluItem& item);
// The part of MmluPrompt that every item of a subject shares (the header and the 5 shots).
std::string MmluFewShotPrefix(const MmluSubject& subject);

struct MmluPick {
  int subject = 0;   // index into the subjects
  int64_t item = 0;  // index into its test items
};

// The items scored for `n` (n <= 0 or >= all: every item, in subject order): per subject
// SampleIndices(subject size, k, seed) with k = max(1, floor(n / subjects)), subjects in order,
// then the first n.
std::vector<MmluPick> SampleMmlu(const std::vector<MmluSubject>& subjects, int64_t n,
                                 uint32_t seed);

std::unique_ptr<Task> MakeMmluTask(std::vector<MmluSubject> subjects, int64_t n, uint32_t seed);

}  // namespace proctor
