// `proctor kl-diff A.json B.json`: two `proctor kl --json` results of one dump, paired sequence by
// sequence: KL, top-1 agreement and NLL differences B - A with paired standard errors, 95%
// intervals, a bootstrap, and whether the candidates are distinguishable (docs/statistics.md).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "eval/scoring/paired_difference.h"

namespace proctor {

struct KlDiffMetric {
  std::string name;  // "kl", "top1", "nll"
  PairedDifference paired;
};

struct KlDiffResult {
  std::string candidate_a, candidate_b;
  std::string reference;  // the dump
  std::vector<KlDiffMetric> metrics;
};

// Error("[kl-diff] ...") naming both files when either is not a `proctor kl` result with
// per-sequence values, or when they were not scored on the same dump, corpus and positions.
KlDiffResult CompareKlResults(const std::filesystem::path& a, const std::filesystem::path& b,
                              int bootstrap_draws, uint32_t seed);

std::string FormatKlDiff(const KlDiffResult& result);
nlohmann::ordered_json KlDiffToJson(const KlDiffResult& result);

}  // namespace proctor
