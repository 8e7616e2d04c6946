// Driving a RuntimeModel over sequences: chunked prefill and greedy decoding (teacher-forced
// logits: model/teacher_forced.h).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "model/runtime_model.h"

namespace proctor {

// Index of the largest value; the lowest index wins ties. NaN never wins.
int32_t ArgmaxLowestIndex(std::span<const float> values);

// Runs `tokens` through the model in chunks of `chunk` positions (the cache advances by
// tokens.size()). Returns the final-normed hidden state of the last token [1, hidden].
Tensor PrefillLastHidden(const RuntimeModel& model, std::span<const int32_t> tokens, int64_t chunk,
                         ModelCache& cache);

struct GreedyOptions {
  int max_new_tokens = 16;
  int64_t chunk = 512;            // prefill chunk size (positions per ForwardHidden call)
  std::vector<int32_t> stop_ids;  // generation ends at the first of these (not emitted)
  // Called with the logits [vocab] that chose each new token (step 0 = after the prompt).
  std::function<void(int step, std::span<const float> logits)> on_step{};
  // Called with the tokens generated so far after each new one; true ends generation there (a
  // stop string appeared).
  std::function<bool(std::span<const int32_t> generated)> stop_after{};
  // Set (when given) to whether generation ended because the model's context was full.
  bool* reached_context = nullptr;
};

// Greedy decoding (argmax, lowest index on ties) after the prompt; returns the new tokens
// (a stop id ends generation and is not included). The prompt must not be empty, nor longer than
// the model's context (config max_position_embeddings, when known); generation ends when the
// context is full, as llama.cpp's server ends a completion. Logits holding NaN or +inf (NaN or
// infinite weights) are an error naming the step and the token, not an argmax of garbage.
std::vector<int32_t> GreedyGenerate(const RuntimeModel& model, std::span<const int32_t> prompt,
                                    const GreedyOptions& options);

}  // namespace proctor
