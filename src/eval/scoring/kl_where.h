// Where a candidate's KL lives (`proctor kl --where`, docs/statistics.md): the run's positions
// split by the teacher's confidence and by place in the context, the positions of largest KL,
// and the top-1 flips against the corpus token in both directions.
//
//   confidence buckets: the teacher's top-1 probability in [0, 0.25), [0.25, 0.5),
//     [0.5, 0.75), [0.75, 0.9), [0.9, 1];
//   position buckets: eighths of the scored positions per sequence (bucket b holds positions r
//     with floor(8 r / positions_per_seq) = b);
//   per bucket: positions, mean KL over them, and share = the bucket's KL sum over the run's;
//   worst: the `worst` positions of largest KL (ties: earlier sequence, then earlier position);
//   lost: the teacher's top token is the corpus's next token and the candidate's is not;
//   gained: the reverse (positions with a known next token only).
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "eval/scoring/kl_stats.h"

namespace proctor {

struct KlBucket {
  double low = 0, high = 0;  // confidence: the probability range; position: the first and last r
  int64_t positions = 0;
  double kl_mean = 0;   // 0 for an empty bucket
  double kl_share = 0;  // of the run's KL sum (0 when that sum is 0)
};

struct KlWorstPosition {
  int64_t sequence = 0, position = 0;
  double kl = 0;
  double teacher_top1_probability = 0;
  int32_t next_token = -1, teacher_argmax = -1, candidate_argmax = -1;
};

struct KlWhere {
  static constexpr std::array<double, 6> kConfidenceEdges = {0.0, 0.25, 0.5, 0.75, 0.9, 1.0};
  static constexpr int kPositionBuckets = 8;
  std::vector<KlBucket> by_confidence;  // 5 buckets
  std::vector<KlBucket> by_position;    // 8 buckets (some empty when a sequence has fewer
                                        // than 8 positions)
  std::vector<KlWorstPosition> worst;
  int64_t known_next = 0;  // positions with a known next token
  int64_t top1_lost = 0, top1_gained = 0;
};

// scores[s][r]: sequence s's position r, as the KL runs keep them.
KlWhere ComputeKlWhere(const std::vector<std::vector<PositionScore>>& scores, int worst);

// The "where" object of a kl result (docs/results-json.md).
nlohmann::ordered_json KlWhereToJson(const KlWhere& where);

}  // namespace proctor
