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

IntegrityReport CheckReferenceLogitsIntegrity(const ReferenceLogitsDump& dump, Progress* progress) {
  IntegrityReport report;
  const int64_t k = dump.top_k();
  constexpr int64_t kBlock = 256;  // records per read
  ReferenceRecords records;
  std::vector<int32_t> sorted(static_cast<size_t>(k));
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
        const int64_t rec = lo + r;
        const int32_t* idx = records.Indices(r);
        const float* logits = records.Logits(r);
        std::copy(idx, idx + k, sorted.begin());
        std::sort(sorted.begin(), sorted.end());
        if (sorted.front() < 0) {
          Fail("ref-logits", "'{}' record {}: vocabulary index {} is negative", file, rec,
               sorted.front());
        }
        const auto dup = std::adjacent_find(sorted.begin(), sorted.end());
        if (dup != sorted.end()) {
          Fail("ref-logits", "'{}' record {}: vocabulary index {} appears twice", file, rec, *dup);
        }
        for (int64_t j = 0; j < k; ++j) {
          if (std::isnan(logits[j])) {
            Fail("ref-logits", "'{}' record {}: logit {} is NaN", file, rec, j);
          }
          if (j > 0 && logits[j] > logits[j - 1]) {
            Fail("ref-logits",
                 "'{}' record {}: logits increase at {} ({} then {}); they must be "
                 "non-increasing",
                 file, rec, j, logits[j - 1], logits[j]);
          }
        }
        const float lse = records.logsumexp[r];
        const double tolerance = HalfF16Spacing(logits[0]) + 1e-6 * std::fabs(lse);
        if (!std::isfinite(lse) || lse < logits[0] - tolerance) {
          Fail("ref-logits", "'{}' record {}: logsumexp {} is {} the top logit {}", file, rec, lse,
               std::isfinite(lse) ? "below" : "not finite; the top logit is", logits[0]);
        }
        ++report.records_checked;
      }
      if (progress != nullptr) progress->Advance(static_cast<uint64_t>(hi - lo));
    }
    ++report.sequences_checked;
  }
  return report;
}

}  // namespace proctor
