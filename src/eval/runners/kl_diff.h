// `proctor kl-diff A.json B.json`: two `proctor kl --json` results of one dump, paired sequence by
// sequence: KL, top-1 agreement and NLL differences B - A with paired standard errors, 95%
// intervals, a bootstrap, and whether the candidates are distinguishable (docs/statistics.md).
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "eval/scoring/paired_difference.h"

namespace proctor {

// kl-diff's defaults, which compare's tables use too.
inline constexpr int kDefaultBootstrapDraws = 1000;
inline constexpr uint32_t kDefaultBootstrapSeed = 42;

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

// The metrics of two `kl` results objects known to be of one dump and the same positions (a
// study's rows): KL, top-1 and NLL, paired by sequence. `a_name` and `b_name` name them in the
// Error when either lacks a per-sequence list (a result of an older proctor).
std::vector<KlDiffMetric> PairKlMetrics(const nlohmann::json& a, const nlohmann::json& b,
                                        const std::string& a_name, const std::string& b_name,
                                        int bootstrap_draws, uint32_t seed);

std::string FormatKlDiff(const KlDiffResult& result);
nlohmann::ordered_json KlDiffToJson(const KlDiffResult& result);
// `metrics` of KlDiffToJson: {name: {sequences, mean_a, mean_b, difference, ...}}.
nlohmann::ordered_json KlDiffMetricsToJson(const std::vector<KlDiffMetric>& metrics);

}  // namespace proctor
