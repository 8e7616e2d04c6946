#include "eval/scoring/kl_score.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "ops/logits_stats.h"
#include "ops/sum_exp.h"
#include "util/error.h"

namespace proctor {
namespace {

constexpr const char* kComponent = "kl";
// Q (the candidate's probability outside the teacher's top-k) is floored here when rounding
// makes it 0 or negative while the teacher's P is still positive.
constexpr double kMinTailProbability = 1e-30;
// 1 - (the candidate's mass on the teacher's top-k) is exact to ~1e-7 only (the row's logsumexp
// is f32-accurate); below this it is summed directly over the rest of the vocabulary instead.
constexpr double kDirectTailBelow = 1e-4;

// The candidate's probability outside the teacher's top-k, summed over those entries in float64
// (ops/sum_exp.h): relative accuracy ~1e-15 however close to 1 the top-k mass is.
double CandidateTailMass(const float* c, int64_t vocab, const int32_t* idx, int64_t k, float max) {
  thread_local std::vector<float> outside;
  outside.assign(c, c + vocab);
  for (int64_t j = 0; j < k; ++j) outside[static_cast<size_t>(idx[j])] = -INFINITY;
  return SumExpShifted(outside.data(), vocab, max) / SumExpShifted(c, vocab, max);
}

ops::RowStats CheckedRowStats(const float* row, int64_t vocab, const char* whose,
                              const std::string& where, int64_t position) {
  const ops::RowStats stats = ops::ComputeRowStats(row, vocab);
  if (stats.has_nan || !std::isfinite(stats.max)) {
    Fail(kComponent, "{} position {}: the {}'s logits have {}", where, position, whose,
         stats.has_nan ? std::string("a NaN") : fmt::format("maximum {}", stats.max));
  }
  return stats;
}

// -log softmax(row)[token] from the row's stats, in double.
double Nll(const float* row, const ops::RowStats& stats, int32_t token) {
  return -((static_cast<double>(row[token]) - stats.max) - stats.log_sum_exp_shifted);
}

void CheckNextToken(int32_t token, int64_t vocab, const std::string& where, int64_t position) {
  if (token < 0 || token >= vocab) {
    Fail(kComponent,
         "{} position {}: the next corpus token {} is outside the candidate's vocabulary of {}: "
         "the tokens were made with a different tokenizer",
         where, position, token, vocab);
  }
}

PositionScore ScoreOne(const ReferenceRecords& records, int64_t r, const float* c, int64_t vocab,
                       const std::string& where, const int32_t* next_tokens) {
  const int64_t k = records.top_k;
  const int32_t* idx = records.Indices(r);
  const int64_t position = records.first + r;
  for (int64_t j = 0; j < k; ++j) {
    if (idx[j] < 0 || idx[j] >= vocab) {
      Fail(kComponent,
           "{} position {}: teacher index {} is outside the candidate's vocabulary of {}: the "
           "dump was made with a different tokenizer",
           where, position, idx[j], vocab);
    }
  }
  const float T = records.logsumexp[r];
  if (!std::isfinite(T)) {
    Fail(kComponent, "{} position {}: the record's logsumexp is {} (must be finite)", where,
         position, T);
  }
  const ops::RowStats stats = CheckedRowStats(c, vocab, "candidate", where, position);
  const ops::TopKTerms terms = ops::ComputeTopKTerms(records.Logits(r), idx, k, T, c, stats);
  PositionScore score;
  score.kl = terms.kl;
  score.mass = terms.teacher_mass;
  // The record's indices are distinct and inside the vocabulary (checked on reading), so k ==
  // vocab leaves the "outside top-k" bin empty: its P is only fp16 rounding of the stored logits.
  const double P = k < vocab ? 1.0 - terms.teacher_mass : 0.0;
  double Q = 1.0 - terms.candidate_mass;
  if (P > 0 && Q < kDirectTailBelow) Q = CandidateTailMass(c, vocab, idx, k, stats.max);
  Q = std::max(Q, kMinTailProbability);
  score.tail_kl = terms.kl + (P > 0 ? P * (std::log(P) - std::log(Q)) : 0.0);
  score.top1 = stats.argmax == idx[0];
  score.candidate_argmax = static_cast<int32_t>(stats.argmax);
  score.teacher_argmax = idx[0];
  score.teacher_top1_probability = std::exp(static_cast<double>(records.Logits(r)[0]) - T);
  if (next_tokens != nullptr) {
    const int32_t token = next_tokens[r];
    CheckNextToken(token, vocab, where, position);
    score.next_token = token;
    score.candidate_nll = Nll(c, stats, token);
    const int32_t* hit = std::find(idx, idx + k, token);
    if (hit != idx + k) {
      score.teacher_nll = -(static_cast<double>(records.Logits(r)[hit - idx]) - T);
    }
  }
  return score;
}

}  // namespace

void ScoreChunk(const ReferenceRecords& records, const MatView& logits, int64_t count,
                const std::string& where, ThreadPool& pool, PositionScore* out,
                const int32_t* next_tokens) {
  CHECK(count <= records.count && count <= logits.rows);
  CHECK(logits.type == DType::kF32);
  pool.ParallelFor(static_cast<size_t>(count), [&](size_t begin, size_t end, int) {
    for (size_t r = begin; r < end; ++r) {
      out[r] =
          ScoreOne(records, static_cast<int64_t>(r), logits.RowAs<float>(static_cast<int64_t>(r)),
                   logits.cols, where, next_tokens);
    }
  });
}

void ScoreFullVocabularyChunk(const MatView& teacher, const MatView& candidate, int64_t count,
                              int64_t first_position, const std::string& where, ThreadPool& pool,
                              PositionScore* out, const int32_t* next_tokens) {
  CHECK(teacher.type == DType::kF32 && candidate.type == DType::kF32);
  CHECK(count <= teacher.rows && count <= candidate.rows);
  if (teacher.cols != candidate.cols) {
    Fail(kComponent, "{}: the teacher's logits have {} columns, the candidate's {}", where,
         teacher.cols, candidate.cols);
  }
  const int64_t vocab = teacher.cols;
  pool.ParallelFor(static_cast<size_t>(count), [&](size_t begin, size_t end, int) {
    std::vector<float> shifted(static_cast<size_t>(vocab));  // [vocab] teacher row - its max
    std::vector<float> shifted_c(static_cast<size_t>(vocab));
    std::vector<int32_t> indices(static_cast<size_t>(vocab));
    std::iota(indices.begin(), indices.end(), 0);
    for (size_t r = begin; r < end; ++r) {
      const int64_t row = static_cast<int64_t>(r);
      const int64_t position = first_position + row;
      const float* t = teacher.RowAs<float>(row);
      const float* c = candidate.RowAs<float>(row);
      const ops::RowStats t_stats = CheckedRowStats(t, vocab, "teacher", where, position);
      const ops::RowStats c_stats = CheckedRowStats(c, vocab, "candidate", where, position);
      // Both rows shifted by their own max (as ComputeTopKTerms shifts the candidate), so
      // identical rows give identical log p and log q.
      for (int64_t j = 0; j < vocab; ++j) {
        shifted[j] = t[j] - t_stats.max;
        shifted_c[j] = c[j] - c_stats.max;
      }
      ops::RowStats c_shifted_stats = c_stats;
      c_shifted_stats.max = 0;
      const ops::TopKTerms terms =
          ops::ComputeTopKTerms(shifted.data(), indices.data(), vocab, t_stats.log_sum_exp_shifted,
                                shifted_c.data(), c_shifted_stats);
      PositionScore score;
      score.kl = terms.kl;
      score.tail_kl = terms.kl;
      score.mass = 1.0;
      score.top1 = c_stats.argmax == t_stats.argmax;
      score.candidate_argmax = static_cast<int32_t>(c_stats.argmax);
      score.teacher_argmax = static_cast<int32_t>(t_stats.argmax);
      score.teacher_top1_probability = std::exp(-t_stats.log_sum_exp_shifted);
      if (next_tokens != nullptr) {
        const int32_t token = next_tokens[r];
        CheckNextToken(token, vocab, where, position);
        score.next_token = token;
        score.candidate_nll = Nll(c, c_stats, token);
        score.teacher_nll = Nll(t, t_stats, token);
      }
      out[r] = score;
    }
  });
}

}  // namespace proctor
