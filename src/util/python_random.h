// CPython's random.Random (3.11): MT19937 seeded as random.seed(int) seeds it, with random(),
// getrandbits(k), choice's _randbelow and gauss() drawing exactly the numbers Python draws, so a
// port of a seeded Python algorithm (langdetect) reproduces its choices.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

namespace proctor {

class PythonRandom {
 public:
  // random.seed(seed) for a non-negative integer below 2^32.
  explicit PythonRandom(uint32_t seed);

  uint32_t NextUint32();           // genrand_uint32
  double Random();                 // random(): 53 bits in [0, 1)
  uint32_t GetRandBits(int k);     // getrandbits(k), 1 <= k <= 32
  uint32_t RandBelow(uint32_t n);  // _randbelow(n), n >= 1: what choice() indexes with
  double Gauss(double mu, double sigma);

 private:
  static constexpr int kN = 624;
  std::array<uint32_t, kN> mt_{};
  int index_ = kN;
  std::optional<double> gauss_next_;
};

}  // namespace proctor
