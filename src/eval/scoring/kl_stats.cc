#include "eval/scoring/kl_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace proctor {

double NearestRank(std::vector<double> values, double pct) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double n = static_cast<double>(values.size());
  const size_t rank = static_cast<size_t>(std::floor(pct / 100.0 * n));
  return values[std::min(values.size() - 1, rank)];
}

DistributionSummary Summarize(const std::vector<std::vector<double>>& per_sequence) {
  DistributionSummary out;
  std::vector<double> means;
  std::vector<double> pooled;
  for (const auto& seq : per_sequence) {
    if (seq.empty()) continue;
    double sum = 0;
    for (double v : seq) sum += v;
    means.push_back(sum / static_cast<double>(seq.size()));
    pooled.insert(pooled.end(), seq.begin(), seq.end());
  }
  if (pooled.empty()) return out;
  double total = 0;
  for (double m : means) total += m;
  out.mean = total / static_cast<double>(means.size());
  if (means.size() >= 2) {
    double squares = 0;
    for (double m : means) squares += (m - out.mean) * (m - out.mean);
    const double n = static_cast<double>(means.size());
    out.standard_error = std::sqrt(squares / (n - 1)) / std::sqrt(n);
  }
  out.median = NearestRank(pooled, 50);
  out.p95 = NearestRank(pooled, 95);
  out.p99 = NearestRank(pooled, 99);
  out.max = *std::max_element(pooled.begin(), pooled.end());
  return out;
}

KlRunStats AggregateKlRun(const std::vector<std::vector<PositionScore>>& per_sequence,
                          double elapsed_seconds) {
  KlRunStats stats;
  std::vector<std::vector<double>> kl(per_sequence.size());
  std::vector<std::vector<double>> tail(per_sequence.size());
  int64_t hits = 0;
  double mass_sum = 0;
  double candidate_nll_sum = 0, teacher_nll_sum = 0;
  int64_t candidate_nll_count = 0;
  double min_mass = std::numeric_limits<double>::infinity();
  for (size_t s = 0; s < per_sequence.size(); ++s) {
    if (!per_sequence[s].empty()) ++stats.sequences;
    for (const PositionScore& p : per_sequence[s]) {
      kl[s].push_back(p.kl);
      tail[s].push_back(p.tail_kl);
      hits += p.top1 ? 1 : 0;
      mass_sum += p.mass;
      min_mass = std::min(min_mass, p.mass);
      ++stats.positions;
      if (!std::isnan(p.candidate_nll)) {
        candidate_nll_sum += p.candidate_nll;
        ++candidate_nll_count;
      }
      if (!std::isnan(p.teacher_nll)) {
        teacher_nll_sum += p.teacher_nll;
        ++stats.teacher_nll_positions;
      }
    }
  }
  stats.kl = Summarize(kl);
  stats.tail_kl = Summarize(tail);
  stats.elapsed_seconds = elapsed_seconds;
  if (candidate_nll_count > 0) {
    stats.candidate_mean_nll = candidate_nll_sum / static_cast<double>(candidate_nll_count);
  }
  if (stats.teacher_nll_positions > 0) {
    stats.teacher_mean_nll = teacher_nll_sum / static_cast<double>(stats.teacher_nll_positions);
  }
  if (stats.positions > 0) {
    const double n = static_cast<double>(stats.positions);
    stats.top1_agreement = static_cast<double>(hits) / n;
    stats.mean_mass = mass_sum / n;
    stats.min_mass = min_mass;
    stats.positions_per_second = elapsed_seconds > 0 ? n / elapsed_seconds : 0;
  }
  return stats;
}

}  // namespace proctor
