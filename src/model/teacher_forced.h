// The engine's side of the teacher-forced logits seam (eval/runners/teacher_forced.h): one
// sequence's logits, chunk by chunk, pulled by the caller. LogitsStepper is the interface scorers
// consume (tests implement it with fakes); EngineLogitsStepper runs a RuntimeModel with one KV
// cache.
#pragma once

#include <cstdint>
#include <span>

#include "model/runtime_model.h"
#include "tensor/tensor.h"

namespace proctor {

// One sequence: each Step(tokens) runs the next tokens (positions continue from the previous
// call) and returns their logits, float32 [tokens.size(), vocab]: row r holds the distribution
// over the token after tokens[r]. The view is valid until the next Step().
class LogitsStepper {
 public:
  virtual ~LogitsStepper() = default;
  virtual MatView Step(std::span<const int32_t> tokens) = 0;
};

// The engine: ForwardHidden with the sequence's cache, then the LM head over the new rows.
// `model` must outlive the stepper.
class EngineLogitsStepper final : public LogitsStepper {
 public:
  EngineLogitsStepper(const RuntimeModel& model, int64_t max_positions);
  MatView Step(std::span<const int32_t> tokens) override;

 private:
  const RuntimeModel& model_;
  ModelCache cache_;
  Tensor logits_;  // [rows of the last step, vocab]
};

// Every teacher-forced logit [tokens.size(), vocab] of one sequence, run in chunks of `chunk`
// (a convenience for tests and short prompts: it holds all T x V logits).
Tensor AllTeacherForcedLogits(const RuntimeModel& model, std::span<const int32_t> tokens,
                              int64_t chunk);

}  // namespace proctor
