// Per-position KL scores and their aggregation over a run (FORMATS.md sections 2-3;
// docs/statistics.md explains how to read each number).
#pragma once

#include <cstdint>
#include <vector>

namespace proctor {

// One scored position.
struct PositionScore {
  double kl = 0;       // KL(teacher || candidate) truncated to the teacher's top-k (the seed's)
  double tail_kl = 0;  // kl plus the "everything outside top-k" bin: a lower bound on full KL
  double mass = 0;     // teacher probability inside its top-k (captured mass)
  bool top1 = false;   // full-vocabulary argmax of the candidate == the teacher's top index
};

// Mean of per-sequence means, its standard error, and pooled nearest-rank percentiles.
struct DistributionSummary {
  double mean = 0;            // mean over sequences of each sequence's mean
  double standard_error = 0;  // sample std. dev. of the per-sequence means / sqrt(#sequences)
  double median = 0;          // pooled over all positions, nearest rank (upper middle)
  double p95 = 0;
  double p99 = 0;
  double max = 0;
};

// Nearest rank: sort ascending, v[min(n-1, floor(pct/100 * n))]; 0 for empty input.
double NearestRank(std::vector<double> values, double pct);
// Sequences with no positions are skipped; no positions at all gives all zeros.
DistributionSummary Summarize(const std::vector<std::vector<double>>& per_sequence);

struct KlRunStats {
  DistributionSummary kl;
  DistributionSummary tail_kl;
  double top1_agreement = 0;  // hits / positions
  double mean_mass = 0;       // sum(mass) / positions
  double min_mass = 0;
  int64_t positions = 0;
  int64_t sequences = 0;
  double elapsed_seconds = 0;
  double positions_per_second = 0;
};

KlRunStats AggregateKlRun(const std::vector<std::vector<PositionScore>>& per_sequence,
                          double elapsed_seconds);

}  // namespace proctor
