// Per-position KL scores and their aggregation over a run (FORMATS.md sections 2-3;
// docs/statistics.md explains how to read each number).
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

namespace proctor {

// One scored position.
struct PositionScore {
  double kl = 0;       // KL(teacher || candidate) truncated to the teacher's top-k (the seed's)
  double tail_kl = 0;  // kl plus the "everything outside top-k" bin: a lower bound on full KL
  double mass = 0;     // teacher probability inside its top-k (captured mass)
  bool top1 = false;   // full-vocabulary argmax of the candidate == the teacher's top index
  // -log q(next token) under the candidate (NaN when the next token is not known).
  double candidate_nll = std::numeric_limits<double>::quiet_NaN();
  // -log p(next token) under the teacher (NaN when unknown or outside the teacher's top-k).
  double teacher_nll = std::numeric_limits<double>::quiet_NaN();
  int32_t next_token = -1;        // the corpus token this position predicts (-1: unknown)
  int32_t candidate_argmax = -1;  // full vocabulary, lowest index on ties
  int32_t teacher_argmax = -1;    // the teacher's top index
  // The teacher's probability of its top token (its confidence; NaN when not scored).
  double teacher_top1_probability = std::numeric_limits<double>::quiet_NaN();
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
  // Mean NLL of the corpus' next tokens over the positions where it is known (NaN when none);
  // exp() of it is a perplexity. The teacher's only counts positions whose token is in its
  // top-k (teacher_nll_positions of them) in saved-teacher mode.
  double candidate_mean_nll = std::numeric_limits<double>::quiet_NaN();
  double teacher_mean_nll = std::numeric_limits<double>::quiet_NaN();
  int64_t teacher_nll_positions = 0;
  double elapsed_seconds = 0;
  double positions_per_second = 0;
};

KlRunStats AggregateKlRun(const std::vector<std::vector<PositionScore>>& per_sequence,
                          double elapsed_seconds);

}  // namespace proctor
