// Seeded, reproducible pseudo-random streams for synthetic data (random-weight models, the demo
// teacher): SplitMix64 steps, and an FNV-1a hash of a name that seeds one stream per tensor so a
// tensor's values do not depend on the order tensors are built in.
#pragma once

#include <cstdint>
#include <string_view>

namespace proctor {

// Advances `state` and returns the next SplitMix64 output.
inline uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The next value of the stream, uniform in [-1, 1) (24 random bits).
inline float SplitMix64Uniform(uint64_t& state) {
  return static_cast<float>(SplitMix64(state) >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

// FNV-1a (64-bit) of `name`, its offset basis xor-ed with `seed`.
inline uint64_t HashName(std::string_view name, uint64_t seed) {
  uint64_t h = 1469598103934665603ull ^ seed;
  for (const char c : name) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  return h;
}

}  // namespace proctor
