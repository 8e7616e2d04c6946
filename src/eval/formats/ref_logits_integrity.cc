#include "eval/formats/ref_logits_integrity.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "util/error.h"
#include "util/progress.h"

namespace proctor {

double HalfF16Spacing(float v) {
  const double a = std::fabs(static_cast<double>(v));
  if (!(a >= std::ldexp(1.0, -14))) return std::ldexp(1.0, -25);  // subnormal range (or NaN)
  int e = 0;
  std::frexp(a, &e);  // a in [2^(e-1), 2^e): fp16 spacing 2^(e-11)
  return std::ldexp(1.0, e - 12);
}

void CheckReferenceRecord(const ReferenceRecords& records, int64_t r, const std::string& file,
                          int64_t record, std::vector<uint8_t>* seen) {
  const int64_t k = records.top_k;
  const int32_t* idx = records.Indices(r);
  const float* logits = records.Logits(r);
  // Distinct, non-negative indices: marked in `seen`, then unmarked (O(k), no sort); indices
  // too large to mark (no real vocabulary has them) are checked by sorting a copy instead.
  constexpr int32_t kMarkable = 1 << 24;
  int32_t largest = 0;
  for (int64_t j = 0; j < k; ++j) {
    if (idx[j] < 0) {
      Fail("ref-logits", "'{}' record {}: vocabulary index {} is negative", file, record, idx[j]);
    }
    largest = std::max(largest, idx[j]);
  }
  if (largest >= kMarkable) {
    std::vector<int32_t> sorted(idx, idx + k);
    std::sort(sorted.begin(), sorted.end());
    const auto dup = std::adjacent_find(sorted.begin(), sorted.end());
    if (dup != sorted.end()) {
      Fail("ref-logits", "'{}' record {}: vocabulary index {} appears twice", file, record, *dup);
    }
  } else {
    if (static_cast<size_t>(largest) >= seen->size())
      seen->resize(static_cast<size_t>(largest) + 1, 0);
    int64_t marked = 0;
    for (; marked < k && (*seen)[static_cast<size_t>(idx[marked])] == 0; ++marked) {
      (*seen)[static_cast<size_t>(idx[marked])] = 1;
    }
    for (int64_t m = 0; m < marked; ++m) (*seen)[static_cast<size_t>(idx[m])] = 0;
    if (marked < k) {
      Fail("ref-logits", "'{}' record {}: vocabulary index {} appears twice", file, record,
           idx[marked]);
    }
  }
  for (int64_t j = 0; j < k; ++j) {
    if (std::isnan(logits[j]))
      Fail("ref-logits", "'{}' record {}: logit {} is NaN", file, record, j);
    if (j > 0 && logits[j] > logits[j - 1]) {
      Fail("ref-logits",
           "'{}' record {}: logits increase at {} ({} then {}); they must be non-increasing", file,
           record, j, logits[j - 1], logits[j]);
    }
  }
  const float lse = records.logsumexp[static_cast<size_t>(r)];
  const double tolerance = HalfF16Spacing(logits[0]) + 1e-6 * std::fabs(lse);
  if (!std::isfinite(lse) || !std::isfinite(logits[0]) || lse < logits[0] - tolerance) {
    Fail("ref-logits", "'{}' record {}: logsumexp {} is {} the top logit {}", file, record, lse,
         std::isfinite(lse) && std::isfinite(logits[0]) ? "below" : "not finite, or neither is",
         logits[0]);
  }
}

IntegrityReport CheckReferenceLogitsIntegrity(const ReferenceLogitsDump& dump, Progress* progress) {
  IntegrityReport report;
  constexpr int64_t kBlock = 256;  // records per read
  ReferenceRecords records;
  std::vector<uint8_t> seen;
  for (int64_t s = 0; s < dump.n_seqs(); ++s) {
    const std::vector<int32_t> tokens = dump.Tokens(s);
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (tokens[i] < 0) {
        Fail("ref-logits", "'{}': sequence {} token {} is {} (token ids are >= 0)",
             dump.TokensPath().string(), s, i, tokens[i]);
      }
    }
    const std::string file = dump.SequencePath(s).string();
    for (int64_t lo = 0; lo < dump.positions(); lo += kBlock) {
      const int64_t hi = std::min(dump.positions(), lo + kBlock);
      dump.ReadRecords(s, lo, hi, &records);
      for (int64_t r = 0; r < records.count; ++r) {
        CheckReferenceRecord(records, r, file, lo + r, &seen);
        ++report.records_checked;
      }
      if (progress != nullptr) progress->Advance(static_cast<uint64_t>(hi - lo));
    }
    ++report.sequences_checked;
  }
  return report;
}

}  // namespace proctor
