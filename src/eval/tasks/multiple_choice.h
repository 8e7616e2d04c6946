// Multiple-choice log-likelihood tasks as lm-evaluation-harness defines them (0-shot): each
// choice is a (context, continuation) pair; acc picks the largest log-likelihood, acc_norm the
// largest per character of the choice (docs/task-evals.md). hellaswag, arc-easy, arc-challenge
// and piqa share one context across choices (evaluated once); winogrande varies the context
// (the option fills the blank) and scores the shared rest of the sentence ("partial scoring").
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "eval/tasks/task.h"

namespace proctor {

struct McItem {
  std::string id;
  std::vector<LoglikelihoodRequest> requests;  // one per choice
  std::vector<std::string> choices;            // the choice texts (acc_norm divides by length)
  int gold = 0;
};

// HellaSwag (rowanz jsonl): context = preprocess(activity_label + ": " + ctx_a + " " +
// capitalize(ctx_b)), choices = preprocess(ending); preprocess strips, turns " [title]" into
// ". ", drops "[...]" and collapses double spaces (lm-eval's hellaswag utils).
std::vector<McItem> ReadHellaswag(const std::filesystem::path& file);
// ARC (AI2's jsonl): "Question: STEM\nAnswer:" and each choice text.
std::vector<McItem> ReadArc(const std::filesystem::path& file);
// PIQA (dev.jsonl + dev-labels.lst): "Question: GOAL\nAnswer:" and sol1, sol2.
std::vector<McItem> ReadPiqa(const std::filesystem::path& jsonl,
                             const std::filesystem::path& labels);
// WinoGrande (dev.jsonl): contexts = the sentence up to "_" with each option, continuation =
// " " + the rest after "_" (stripped).
std::vector<McItem> ReadWinogrande(const std::filesystem::path& file);

// Python's str.capitalize: the first code point title-cased, the rest lowercased.
std::string PythonCapitalize(const std::string& text);

// `normalized`: also report acc_norm (not for winogrande, whose choices share the scored text).
// Items: SampleIndices(total, n, seed) (n <= 0: all).
std::unique_ptr<Task> MakeMultipleChoiceTask(std::string name, std::vector<McItem> items, int64_t n,
                                             uint32_t seed, bool normalized);

}  // namespace proctor
