// Scoring one chunk of candidate logits against the matching reference records (FORMATS.md
// section 2): per position KL, tail-aware KL, captured mass and top-1, rows across the pool.
#pragma once

#include <cstdint>
#include <string>

#include "eval/kl_stats.h"
#include "eval/ref_logits.h"
#include "tensor/tensor.h"
#include "util/thread_pool.h"

namespace proctor {

// Scores `count` rows of candidate logits (F32 [>= count, V]) against records [0, count) of
// `records`, across the pool (each row on one thread: results do not depend on the thread
// count); `where` prefixes errors (file, sequence). A teacher index outside [0, V) is an error
// saying the dump was made with a different tokenizer; NaN or +inf candidate logits are errors.
void ScoreChunk(const ReferenceRecords& records, const MatView& logits, int64_t count,
                const std::string& where, ThreadPool& pool, PositionScore* out);

}  // namespace proctor
