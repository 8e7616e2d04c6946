#include "eval/scoring/kl_where.h"

#include <algorithm>
#include <cmath>

namespace proctor {
namespace {

size_t ConfidenceBucket(double p) {
  const auto& edges = KlWhere::kConfidenceEdges;
  for (size_t b = 0; b + 2 < edges.size(); ++b) {
    if (p < edges[b + 1]) return b;
  }
  return edges.size() - 2;  // [0.9, 1], rounding above 1 included
}

// Sums per bucket turned into means and shares of `total`.
void Finish(std::vector<KlBucket>& buckets, const std::vector<double>& sums, double total) {
  for (size_t b = 0; b < buckets.size(); ++b) {
    if (buckets[b].positions > 0) {
      buckets[b].kl_mean = sums[b] / static_cast<double>(buckets[b].positions);
    }
    if (total > 0) buckets[b].kl_share = sums[b] / total;
  }
}

// Larger KL first; ties by sequence, then position (a strict total order: deterministic).
bool WorseThan(const KlWorstPosition& a, const KlWorstPosition& b) {
  if (a.kl != b.kl) return a.kl > b.kl;
  if (a.sequence != b.sequence) return a.sequence < b.sequence;
  return a.position < b.position;
}

}  // namespace

KlWhere ComputeKlWhere(const std::vector<std::vector<PositionScore>>& scores, int worst) {
  KlWhere where;
  const auto& edges = KlWhere::kConfidenceEdges;
  where.by_confidence.resize(edges.size() - 1);
  for (size_t b = 0; b < where.by_confidence.size(); ++b) {
    where.by_confidence[b].low = edges[b];
    where.by_confidence[b].high = edges[b + 1];
  }
  const size_t per_seq = scores.empty() ? 0 : scores.front().size();
  where.by_position.resize(KlWhere::kPositionBuckets);
  for (size_t b = 0; b < where.by_position.size(); ++b) {
    // The positions r with floor(8 r / per_seq) == b: ceil(b per_seq / 8) .. ceil((b+1) ...) - 1.
    const size_t buckets = where.by_position.size();
    const size_t first = (b * per_seq + buckets - 1) / buckets;
    const size_t past_last = ((b + 1) * per_seq + buckets - 1) / buckets;
    where.by_position[b].low = static_cast<double>(first);
    where.by_position[b].high = static_cast<double>(past_last) - 1;
  }
  std::vector<double> confidence_sums(where.by_confidence.size(), 0.0);
  std::vector<double> position_sums(where.by_position.size(), 0.0);
  double total = 0;
  // The worst positions so far: cut back to `keep` whenever it doubles (bounded memory).
  const size_t keep = static_cast<size_t>(std::max(worst, 0));
  std::vector<KlWorstPosition> candidates;
  const auto cut = [&] {
    if (candidates.size() <= keep) return;
    std::nth_element(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(keep),
                     candidates.end(), WorseThan);
    candidates.resize(keep);
  };
  for (size_t s = 0; s < scores.size(); ++s) {
    const size_t n = scores[s].size();
    for (size_t r = 0; r < n; ++r) {
      const PositionScore& score = scores[s][r];
      total += score.kl;
      if (!std::isnan(score.teacher_top1_probability)) {
        const size_t b = ConfidenceBucket(score.teacher_top1_probability);
        where.by_confidence[b].positions++;
        confidence_sums[b] += score.kl;
      }
      const size_t b = r * where.by_position.size() / n;
      where.by_position[b].positions++;
      position_sums[b] += score.kl;
      if (score.next_token >= 0) {
        where.known_next++;
        const bool teacher_right = score.teacher_argmax == score.next_token;
        const bool candidate_right = score.candidate_argmax == score.next_token;
        where.top1_lost += teacher_right && !candidate_right;
        where.top1_gained += candidate_right && !teacher_right;
      }
      if (keep > 0) {
        candidates.push_back({.sequence = static_cast<int64_t>(s),
                              .position = static_cast<int64_t>(r),
                              .kl = score.kl,
                              .teacher_top1_probability = score.teacher_top1_probability,
                              .next_token = score.next_token,
                              .teacher_argmax = score.teacher_argmax,
                              .candidate_argmax = score.candidate_argmax});
        if (candidates.size() >= 2 * keep + 64) cut();
      }
    }
  }
  Finish(where.by_confidence, confidence_sums, total);
  Finish(where.by_position, position_sums, total);
  cut();
  std::sort(candidates.begin(), candidates.end(), WorseThan);
  where.worst = std::move(candidates);
  return where;
}

nlohmann::ordered_json KlWhereToJson(const KlWhere& where) {
  const auto buckets = [](const std::vector<KlBucket>& list, const char* low, const char* high) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const KlBucket& b : list) {
      out.push_back({{low, b.low},
                     {high, b.high},
                     {"positions", b.positions},
                     {"kl_mean", b.kl_mean},
                     {"kl_share", b.kl_share}});
    }
    return out;
  };
  nlohmann::ordered_json worst = nlohmann::ordered_json::array();
  for (const KlWorstPosition& w : where.worst) {
    worst.push_back({{"sequence", w.sequence},
                     {"position", w.position},
                     {"kl", w.kl},
                     {"teacher_top1_probability", w.teacher_top1_probability},
                     {"next_token", w.next_token},
                     {"teacher_argmax", w.teacher_argmax},
                     {"candidate_argmax", w.candidate_argmax}});
  }
  return {{"by_confidence", buckets(where.by_confidence, "probability_from", "probability_to")},
          {"by_position", buckets(where.by_position, "first_position", "last_position")},
          {"worst", worst},
          {"known_next_token_positions", where.known_next},
          {"top1_lost", where.top1_lost},
          {"top1_gained", where.top1_gained}};
}

}  // namespace proctor
