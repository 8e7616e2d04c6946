#include "eval/kl_score.h"

#include <algorithm>
#include <cmath>

#include "ops/logits_stats.h"
#include "util/error.h"

namespace proctor {
namespace {

constexpr const char* kComponent = "kl";
// Q (the candidate's probability outside the teacher's top-k) is floored here when rounding
// makes it 0 or negative while the teacher's P is still positive.
constexpr double kMinTailProbability = 1e-30;

PositionScore ScoreOne(const ReferenceRecords& records, int64_t r, const float* c, int64_t vocab,
                       const std::string& where) {
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
  const ops::RowStats stats = ops::ComputeRowStats(c, vocab);
  if (stats.has_nan || !std::isfinite(stats.max)) {
    Fail(kComponent, "{} position {}: the candidate's logits have {}", where, position,
         stats.has_nan ? std::string("a NaN") : fmt::format("maximum {}", stats.max));
  }
  const ops::TopKTerms terms = ops::ComputeTopKTerms(records.Logits(r), idx, k, T, c, stats);
  PositionScore score;
  score.kl = terms.kl;
  score.mass = terms.teacher_mass;
  const double P = 1.0 - terms.teacher_mass;
  const double Q = std::max(1.0 - terms.candidate_mass, kMinTailProbability);
  score.tail_kl = terms.kl + (P > 0 ? P * (std::log(P) - std::log(Q)) : 0.0);
  score.top1 = stats.argmax == idx[0];
  return score;
}

}  // namespace

void ScoreChunk(const ReferenceRecords& records, const MatView& logits, int64_t count,
                const std::string& where, ThreadPool& pool, PositionScore* out) {
  CHECK(count <= records.count && count <= logits.rows);
  CHECK(logits.type == DType::kF32);
  pool.ParallelFor(static_cast<size_t>(count), [&](size_t begin, size_t end, int) {
    for (size_t r = begin; r < end; ++r) {
      out[r] = ScoreOne(records, static_cast<int64_t>(r), logits.RowAs<float>(static_cast<int64_t>(r)),
                        logits.cols, where);
    }
  });
}

}  // namespace proctor
