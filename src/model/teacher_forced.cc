#include "model/teacher_forced.h"

#include <algorithm>

#include "util/error.h"

namespace proctor {

EngineLogitsStepper::EngineLogitsStepper(const RuntimeModel& model, int64_t max_positions)
    : model_(model), cache_(model.MakeCache(max_positions)) {}

MatView EngineLogitsStepper::Step(std::span<const int32_t> tokens) {
  Tensor hidden = model_.ForwardHidden(tokens, cache_);  // [T, hidden]
  if (logits_.rows() != hidden.rows()) logits_ = Tensor::F32(hidden.rows(), model_.vocab_size());
  model_.LogitsFromHidden(hidden.View(), logits_.MutF32());  // [T, vocab]
  return logits_.View();
}

Tensor AllTeacherForcedLogits(const RuntimeModel& model, std::span<const int32_t> tokens,
                              int64_t chunk) {
  if (chunk <= 0) Fail("model", "chunk size must be positive (seen {})", chunk);
  const auto n = static_cast<int64_t>(tokens.size());
  Tensor out = Tensor::F32(n, model.vocab_size());  // [T, vocab]
  EngineLogitsStepper sequence(model, n);
  for (int64_t begin = 0; begin < n; begin += chunk) {
    const int64_t end = std::min(n, begin + chunk);
    const MatView logits =
        sequence.Step(tokens.subspan(static_cast<size_t>(begin), static_cast<size_t>(end - begin)));
    for (int64_t r = 0; r < logits.rows; ++r) {
      std::copy_n(logits.RowAs<float>(r), logits.cols, out.RowF32(begin + r));
    }
  }
  return out;
}

}  // namespace proctor
