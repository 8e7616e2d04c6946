#include "eval/scoring/sample_indices.h"

#include <algorithm>
#include <numeric>

namespace proctor {

double Mulberry32::Next() {
  state_ += 0x6D2B79F5u;
  uint32_t t = state_;
  t = (t ^ (t >> 15)) * (t | 1u);
  t ^= t + (t ^ (t >> 7)) * (t | 61u);
  return static_cast<double>(t ^ (t >> 14)) / 4294967296.0;
}

std::vector<int64_t> ShuffledIndices(int64_t total, uint32_t seed) {
  std::vector<int64_t> indices(static_cast<size_t>(std::max<int64_t>(total, 0)));
  std::iota(indices.begin(), indices.end(), 0);
  Mulberry32 rng(seed);
  for (int64_t i = total - 1; i >= 1; --i) {
    const auto j = static_cast<int64_t>(rng.Next() * static_cast<double>(i + 1));
    std::swap(indices[i], indices[j]);
  }
  return indices;
}

std::vector<int64_t> SampleIndices(int64_t total, int64_t n, uint32_t seed) {
  std::vector<int64_t> indices = ShuffledIndices(total, seed);
  indices.resize(static_cast<size_t>(std::clamp<int64_t>(n, 0, std::max<int64_t>(total, 0))));
  std::sort(indices.begin(), indices.end());
  return indices;
}

}  // namespace proctor
