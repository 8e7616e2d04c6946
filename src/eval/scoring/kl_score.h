// Scoring one chunk of candidate logits (FORMATS.md section 2): per position KL, tail-aware KL,
// captured mass, top-1 and the next token's NLL, rows across the pool. Against a saved teacher's
// top-k records (ScoreChunk) or against a resident teacher's full logits rows
// (ScoreFullVocabularyChunk: the whole vocabulary is "K", so the KL is the full KL).
#pragma once

#include <cstdint>
#include <string>

#include "eval/formats/ref_logits.h"
#include "eval/scoring/kl_stats.h"
#include "tensor/tensor.h"
#include "util/thread_pool.h"

namespace proctor {

// Scores `count` rows of candidate logits (F32 [>= count, V]) against records [0, count) of
// `records`, across the pool (each row on one thread: results do not depend on the thread
// count); `where` prefixes errors (file, sequence). A teacher index outside [0, V) is an error
// saying the dump was made with a different tokenizer; NaN or +inf candidate logits are errors.
// next_tokens (optional, [count]): the corpus token each row predicts, for the NLL fields of
// PositionScore (a token outside [0, V) is an error).
void ScoreChunk(const ReferenceRecords& records, const MatView& logits, int64_t count,
                const std::string& where, ThreadPool& pool, PositionScore* out,
                const int32_t* next_tokens = nullptr);

// Scores `count` rows of candidate logits against the teacher's full logits rows (both F32
// [>= count, V], same V): KL over the whole vocabulary (p_j = softmax(teacher)_j, q_j =
// softmax(candidate)_j; terms with p_j = 0 in float32 skipped), tail_kl = kl (nothing lies
// outside K), mass = 1, top1 = argmax(candidate) == argmax(teacher) (lowest index on ties),
// teacher_nll always known. Rows are shifted by their max before the sums, so two identical
// rows score exactly 0. NaN or +inf logits in either row are errors naming `where` and the
// position (first_position + row).
void ScoreFullVocabularyChunk(const MatView& teacher, const MatView& candidate, int64_t count,
                              int64_t first_position, const std::string& where, ThreadPool& pool,
                              PositionScore* out, const int32_t* next_tokens = nullptr);

}  // namespace proctor
