#include "eval/runners/logits_chunks.h"

#include <fmt/format.h>

#include <algorithm>

#include "util/error.h"
#include "util/timing.h"

namespace proctor {
namespace {

Progress::Options ProgressOptions(const LogitsChunkOptions& o) {
  return {.label = o.progress_label,
          .unit = "positions",
          .total = o.total_positions,
          .mode = o.quiet ? Progress::Mode::kQuiet : Progress::Mode::kAuto};
}

}  // namespace

void CheckChunkSize(int64_t chunk_size, const char* component) {
  if (chunk_size < 1) Fail(component, "--chunk must be >= 1, got {}", chunk_size);
}

LogitsChunkDriver::LogitsChunkDriver(std::vector<LogitsArm> arms, const LogitsChunkOptions& options)
    : arms_(std::move(arms)),
      options_(options),
      pool_(options.pool != nullptr ? options.pool : &ThreadPool::Global()),
      progress_(ProgressOptions(options)),
      arm_seconds_(arms_.size(), 0.0),
      arm_decode_seconds_(arms_.size(), 0.0) {
  CheckChunkSize(options.chunk_size, options.component);
  CHECK_MSG(!arms_.empty(), "a chunk driver needs at least one forward");
  for (const LogitsArm& arm : arms_) CHECK_MSG(arm.forward != nullptr, "arm {}", arm.name);
}

void LogitsChunkDriver::SetArmForward(size_t arm, TeacherForcedLogits forward) {
  CHECK_MSG(arm < arms_.size() && forward != nullptr, "arm {} of {}", arm, arms_.size());
  arms_[arm].forward = std::move(forward);
}

double LogitsChunkDriver::forward_seconds() const {
  double sum = 0;
  for (const double s : arm_seconds_) sum += s;
  return sum;
}

void LogitsChunkDriver::CheckLogits(const MatView& logits, size_t arm, int64_t start, int64_t rows,
                                    const std::string& where) {
  const char* component = options_.component;
  const std::string& name = arms_[arm].name;
  if (logits.type != DType::kF32) {
    Fail(component, "{}: {} gave {} logits; float32 expected", where, name, Name(logits.type));
  }
  if (logits.rows != rows || logits.cols < 1) {
    Fail(component, "{}: {} gave {} rows of {} logits for the {} tokens at positions [{}, {})",
         where, name, logits.rows, logits.cols, rows, start, start + rows);
  }
  if (vocab_ == 0) return;
  if (arm > 0 && logits.cols != vocab_) {
    Fail(component,
         "{}: {} gives {} logits per position, {} gives {}: the vocabularies differ (both sides "
         "must score the same tokens)",
         where, arms_[0].name, vocab_, name, logits.cols);
  }
  if (logits.cols != vocab_) {
    Fail(component, "{}: {} gave {} logits per position at position {}, {} before", where, name,
         logits.cols, start, vocab_);
  }
}

void LogitsChunkDriver::RunSequence(std::span<const int32_t> tokens, int64_t scored_end,
                                    const std::string& where, const ChunkFn& on_chunk) {
  const auto length = static_cast<int64_t>(tokens.size());
  std::vector<std::unique_ptr<LogitsStepper>> steppers;
  for (size_t a = 0; a < arms_.size(); ++a) {
    ScopedSeconds forward(&arm_seconds_[a]);
    steppers.push_back(arms_[a].forward(length));
  }
  std::vector<MatView> logits(arms_.size());
  for (int64_t start = 0, rows = 0; start < length; start += rows) {
    rows = std::min(options_.chunk_size, length - start);
    if (options_.decode_from >= 0) {
      rows = start >= options_.decode_from ? 1 : std::min(rows, options_.decode_from - start);
    }
    const auto chunk = tokens.subspan(static_cast<size_t>(start), static_cast<size_t>(rows));
    const bool decode_step = options_.decode_from >= 0 && start >= options_.decode_from;
    if (decode_step) ++decode_steps_run_;
    for (size_t a = 0; a < arms_.size(); ++a) {
      double seconds = 0;
      {
        ScopedSeconds forward(&seconds);
        logits[a] = steppers[a]->Step(chunk);
      }
      arm_seconds_[a] += seconds;
      if (decode_step) arm_decode_seconds_[a] += seconds;
      CheckLogits(logits[a], a, start, rows, where);
    }
    if (vocab_ == 0) {
      // Every arm agrees with the first (checked against the first arm's width).
      vocab_ = logits[0].cols;
      for (size_t a = 1; a < arms_.size(); ++a) CheckLogits(logits[a], a, start, rows, where);
      if (on_vocabulary_) on_vocabulary_(vocab_);
    }
    const int64_t scored = std::min(rows, scored_end - start);
    if (scored <= 0) continue;
    {
      ScopedSeconds in_callback(&callback_seconds_);
      on_chunk({.start = start, .rows = rows, .scored = scored, .logits = logits});
    }
    progress_.Advance(static_cast<uint64_t>(scored));
  }
}

}  // namespace proctor
