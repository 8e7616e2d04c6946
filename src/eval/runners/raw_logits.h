// `proctor logits`: teacher-forced logits written as raw little-endian float32, for debugging and
// for comparing with other engines and oracles. A prompt gives [T, V]; a corpus gives
// [N, ctx_len, V] for its first N sequences, each with its own cache (as kl and dump run them).
// Written chunk by chunk through the chunk driver into a temporary file renamed into place when
// complete.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "model/runtime_model.h"

namespace proctor {

struct RawLogitsOptions {
  std::string model{};                 // model spec (eval/runners/eval_model.h)
  std::vector<int32_t> prompt{};       // one sequence, or
  std::filesystem::path corpus_dir{};  // the sequences of a corpus
  int64_t max_seqs = 0;                // with a corpus: the first N sequences; 0 = all
  std::filesystem::path out{};
  int64_t chunk_size = 512;
  int64_t decode_from = -1;  // >= 0: positions from here on one per step (LogitsChunkOptions)
  RuntimeOptions runtime{};
  bool quiet = false;
};

struct RawLogitsResult {
  int64_t sequences = 0, positions = 0, vocab = 0;  // the file is [sequences, positions, vocab]
};

// Error("[logits] ...") when neither or both of prompt and corpus are given, or the prompt is
// empty; the model's and corpus' own errors.
RawLogitsResult WriteRawLogits(const RawLogitsOptions& options);

}  // namespace proctor
