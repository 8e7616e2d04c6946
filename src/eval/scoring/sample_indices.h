// The project's deterministic generator (FORMATS.md section 5): mulberry32 and the
// Fisher-Yates sampling of eval items / shuffling of corpus rows built on it.
#pragma once

#include <cstdint>
#include <vector>

namespace proctor {

// mulberry32: state s (uint32); each draw s += 0x6D2B79F5, then the usual mixing to a double
// in [0, 1) (a 32-bit value / 2^32).
class Mulberry32 {
 public:
  explicit Mulberry32(uint32_t seed) : state_(seed) {}
  double Next();

 private:
  uint32_t state_;
};

// A permutation of [0, total): Fisher-Yates from i = total-1 down to 1, swapping i with
// j = floor(rand * (i + 1)).
std::vector<int64_t> ShuffledIndices(int64_t total, uint32_t seed);

// sampleIndices: the first min(n, total) of ShuffledIndices(total, seed), sorted ascending.
std::vector<int64_t> SampleIndices(int64_t total, int64_t n, uint32_t seed = 42);

}  // namespace proctor
