// The seam between scoring and the engine: TeacherForcedLogits.
//
// It starts one sequence and returns its LogitsStepper (model/teacher_forced.h): each Step(tokens)
// runs the sequence's next tokens and returns their float32 logits [tokens.size(), V] (row r is
// the distribution over the token after tokens[r]). Every evaluation drives it through the one
// chunk driver (eval/runners/logits_chunks.h), which decides the chunks and checks what comes back;
// the real implementation is the engine (eval/runners/eval_model.h: one KV cache per sequence),
// tests inject fakes, so every scorer is testable without weights.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "model/teacher_forced.h"

namespace proctor {

// Starts a sequence of at most max_positions tokens.
using TeacherForcedLogits = std::function<std::unique_ptr<LogitsStepper>(int64_t max_positions)>;

}  // namespace proctor
