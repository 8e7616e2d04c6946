// The seam between scoring and the engine: TeacherForcedLogits.
//
// An implementation runs `tokens` teacher-forced (the real one: the engine in chunks, one KV
// cache per sequence) and hands the logits over chunk by chunk: on_chunk(start_pos, logits),
// where `logits` is a float32 MatView [C, V] whose row r holds the logits at position
// start_pos + r (the distribution over token start_pos + r + 1). Chunks come in position order,
// back to back, and may run past the last scored position. Tests inject fakes, so every
// scorer is testable without weights.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>

#include "tensor/tensor.h"

namespace proctor {

using LogitsChunkFn = std::function<void(int64_t start_pos, const MatView& logits)>;
using TeacherForcedLogits = std::function<void(std::span<const int32_t> tokens,
                                               int64_t chunk_size, const LogitsChunkFn& on_chunk)>;

// The stepping form of the same forward, for running two models in lockstep (two-model KL):
// one LogitsStepper per sequence (it owns that sequence's cache); each Step() runs the next
// tokens of the sequence (positions continue from the previous call) and returns their logits,
// float32 [tokens.size(), V], valid until the next Step() on the same stepper.
class LogitsStepper {
 public:
  virtual ~LogitsStepper() = default;
  virtual MatView Step(std::span<const int32_t> tokens) = 0;
};
// Starts a sequence of at most max_positions tokens.
using StartSequenceFn = std::function<std::unique_ptr<LogitsStepper>(int64_t max_positions)>;

}  // namespace proctor
