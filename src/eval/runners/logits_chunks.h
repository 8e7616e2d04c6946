// The one chunk loop every evaluation runs on (saved-teacher KL, two-model KL, llama.cpp .kld KL,
// teacher dumps, .kld dumps, perplexity, raw logits).
//
// A LogitsChunkDriver drives one or more forwards ("arms": the candidate; the reference and the
// candidate of two-model KL) over sequences in chunks of chunk_size positions, all arms in
// lockstep, one new LogitsStepper per arm and sequence. For every chunk it checks what each arm
// returned (float32, exactly one row per token of the chunk, the same vocabulary as every earlier
// chunk and every other arm), then hands the rows that lie before the sequence's scored end to
// the runner's callback. It owns the run's progress line, the thread pool the runners score on,
// and the timing split: the time inside the forwards (per arm) and the time inside the callbacks.
// Runners keep only their own logic: what a chunk's rows are scored against or written to.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "eval/runners/teacher_forced.h"
#include "tensor/tensor.h"
#include "util/progress.h"
#include "util/thread_pool.h"

namespace proctor {

struct LogitsArm {
  std::string name;             // "candidate 'spec'", "teacher 'spec'": what errors call it
  TeacherForcedLogits forward;  // must be set
};

// One chunk of one sequence, as the callback sees it.
struct LogitsChunk {
  int64_t start = 0;   // the sequence position of row 0
  int64_t rows = 0;    // rows of every arm's logits (the chunk's tokens)
  int64_t scored = 0;  // rows [0, scored) lie before the scored end (1 <= scored <= rows)
  std::span<const MatView> logits;  // one f32 [rows, vocab] view per arm, valid in the call

  const MatView& operator[](size_t arm) const { return logits[arm]; }
};

struct LogitsChunkOptions {
  const char* component = "kl";  // errors are "[component] ..."
  int64_t chunk_size = 512;      // positions per forward step (>= 1)
  // >= 0: the decode path. Chunks end exactly at this position and every later position is a
  // forward step of its own (one token, as a server decodes after the prompt).
  int64_t decode_from = -1;
  std::string progress_label{};  // the progress line's label ("kl", "dump", "ppl", ...)
  uint64_t total_positions = 0;  // scored positions the run will hand over (progress total)
  ThreadPool* pool = nullptr;    // what runners score on; null: ThreadPool::Global()
  bool quiet = false;            // no progress line
};

// Error("[component] --chunk must be >= 1, got N") unless chunk_size >= 1 (runners that create
// outputs check it before creating anything; the driver checks it too).
void CheckChunkSize(int64_t chunk_size, const char* component);

class LogitsChunkDriver {
 public:
  using ChunkFn = std::function<void(const LogitsChunk&)>;

  // Error("[component] ...") for a chunk size below 1 or no arms.
  LogitsChunkDriver(std::vector<LogitsArm> arms, const LogitsChunkOptions& options);

  // Called once, with the logits width, when the first chunk has come back and before it is
  // handed over: where runners check the vocabulary against a dump, corpus or file.
  void OnVocabulary(std::function<void(int64_t vocab)> check) { on_vocabulary_ = std::move(check); }

  // Runs `tokens` (one sequence) through every arm in chunks and calls on_chunk for each chunk
  // with rows before `scored_end` (positions [0, scored_end) are scored; later rows are run but
  // not handed over). `where` names the sequence in errors ("sequence 3 of corpus '...'").
  void RunSequence(std::span<const int32_t> tokens, int64_t scored_end, const std::string& where,
                   const ChunkFn& on_chunk);

  // For the sequences run from now on: where the decode path begins (LogitsChunkOptions::
  // decode_from), and arm `arm`'s forward (e.g. a cache that converts at that point). Prompts of
  // their own lengths set both before each sequence.
  void SetDecodeFrom(int64_t decode_from) { options_.decode_from = decode_from; }
  void SetArmForward(size_t arm, TeacherForcedLogits forward);

  // Ends the progress line.
  void Finish() { progress_.Finish(); }

  ThreadPool& pool() const { return *pool_; }
  int64_t vocab() const { return vocab_; }  // 0 until the first chunk
  double forward_seconds() const;           // every arm's forward
  double arm_forward_seconds(size_t arm) const { return arm_seconds_[arm]; }
  // The decode path (decode_from >= 0): the part of an arm's forward time spent in the
  // one-token steps, and how many such steps each arm ran.
  double arm_decode_seconds(size_t arm) const { return arm_decode_seconds_[arm]; }
  int64_t decode_steps_run() const { return decode_steps_run_; }
  double callback_seconds() const { return callback_seconds_; }

 private:
  void CheckLogits(const MatView& logits, size_t arm, int64_t start, int64_t rows,
                   const std::string& where);

  std::vector<LogitsArm> arms_;
  LogitsChunkOptions options_;
  ThreadPool* pool_;
  Progress progress_;
  std::function<void(int64_t)> on_vocabulary_;
  int64_t vocab_ = 0;
  std::vector<double> arm_seconds_;
  std::vector<double> arm_decode_seconds_;
  int64_t decode_steps_run_ = 0;
  double callback_seconds_ = 0;
};

}  // namespace proctor
