#include "eval/scoring/paired_difference.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "eval/scoring/sample_indices.h"
#include "util/error.h"

namespace proctor {

PairedDifference ComparePairedSequences(const std::vector<double>& a, const std::vector<double>& b,
                                        int draws, uint32_t seed) {
  CHECK(a.size() == b.size());
  std::vector<double> d;
  PairedDifference out;
  for (size_t s = 0; s < a.size(); ++s) {
    if (std::isnan(a[s]) || std::isnan(b[s])) continue;
    d.push_back(b[s] - a[s]);
    out.mean_a += a[s];
    out.mean_b += b[s];
  }
  out.sequences = static_cast<int64_t>(d.size());
  if (d.empty()) return out;
  const double n = static_cast<double>(d.size());
  out.mean_a /= n;
  out.mean_b /= n;
  double sum = 0;
  for (const double x : d) sum += x;
  out.difference = sum / n;
  if (d.size() >= 2) {
    double squares = 0;
    for (const double x : d) squares += (x - out.difference) * (x - out.difference);
    out.standard_error = std::sqrt(squares / (n - 1)) / std::sqrt(n);
  }
  out.low = out.difference - 1.96 * out.standard_error;
  out.high = out.difference + 1.96 * out.standard_error;
  out.distinguishable = out.low > 0 || out.high < 0;
  if (draws > 0) {
    Mulberry32 random(seed);
    std::vector<double> means;
    means.reserve(static_cast<size_t>(draws));
    for (int k = 0; k < draws; ++k) {
      double total = 0;
      for (size_t i = 0; i < d.size(); ++i) {
        total += d[static_cast<size_t>(random.Next() * n)];
      }
      means.push_back(total / n);
    }
    std::sort(means.begin(), means.end());
    const auto rank = [&](double q) {  // nearest rank
      const auto r = static_cast<size_t>(std::ceil(q * static_cast<double>(draws)));
      return means[std::min(means.size(), std::max<size_t>(r, 1)) - 1];
    };
    out.bootstrap_low = rank(0.025);
    out.bootstrap_high = rank(0.975);
    out.bootstrap_draws = draws;
    out.distinguishable = out.distinguishable && (out.bootstrap_low > 0 || out.bootstrap_high < 0);
  }
  return out;
}

RowAgainstAbove CompareRowWithAbove(const std::vector<double>& floor,
                                    const std::vector<double>& above,
                                    const std::vector<double>& row) {
  if (row.size() != above.size() || row.size() != floor.size()) return {};
  const PairedDifference step = ComparePairedSequences(above, row, 0, 0);
  if (step.sequences < 2) return {};
  const PairedDifference from_floor = ComparePairedSequences(floor, row, 0, 0);
  const char* verdict = !from_floor.distinguishable ? "at floor"
                        : !step.distinguishable     ? "same"
                        : step.difference > 0       ? "worse"
                                                    : "better";
  return {.known = true,
          .difference = step.difference,
          .standard_error = step.standard_error,
          .verdict = verdict};
}

std::string RowAgainstAboveText(const RowAgainstAbove& r, const char* plus_minus) {
  if (!r.known) return "-";
  return fmt::format("{:+.2e} {} {:.1e}", r.difference, plus_minus, r.standard_error);
}

}  // namespace proctor
