#include "util/python_random.h"

#include <bit>
#include <cmath>
#include <numbers>

namespace proctor {
namespace {

constexpr int kM = 397;
constexpr uint32_t kMatrixA = 0x9908b0dfU;
constexpr uint32_t kUpperMask = 0x80000000U;
constexpr uint32_t kLowerMask = 0x7fffffffU;

}  // namespace

PythonRandom::PythonRandom(uint32_t seed) {
  // init_genrand(19650218) then init_by_array({seed}): random.seed(n) with the key of n's 32-bit
  // words (one word, also for 0).
  mt_[0] = 19650218U;
  for (int i = 1; i < kN; ++i) {
    mt_[i] = 1812433253U * (mt_[i - 1] ^ (mt_[i - 1] >> 30)) + static_cast<uint32_t>(i);
  }
  const uint32_t key[1] = {seed};
  constexpr int kKeyLength = 1;
  int i = 1;
  int j = 0;
  for (int k = kN; k > 0; --k) {
    mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1664525U)) + key[j] +
             static_cast<uint32_t>(j);
    ++i;
    ++j;
    if (i >= kN) {
      mt_[0] = mt_[kN - 1];
      i = 1;
    }
    if (j >= kKeyLength) j = 0;
  }
  for (int k = kN - 1; k > 0; --k) {
    mt_[i] =
        (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1566083941U)) - static_cast<uint32_t>(i);
    ++i;
    if (i >= kN) {
      mt_[0] = mt_[kN - 1];
      i = 1;
    }
  }
  mt_[0] = 0x80000000U;
  index_ = kN;
}

uint32_t PythonRandom::NextUint32() {
  if (index_ >= kN) {
    auto twist = [&](int a, int b, int c) {
      const uint32_t y = (mt_[a] & kUpperMask) | (mt_[b] & kLowerMask);
      mt_[a] = mt_[c] ^ (y >> 1) ^ ((y & 1U) ? kMatrixA : 0U);
    };
    int k = 0;
    for (; k < kN - kM; ++k) twist(k, k + 1, k + kM);
    for (; k < kN - 1; ++k) twist(k, k + 1, k + (kM - kN));
    twist(kN - 1, 0, kM - 1);
    index_ = 0;
  }
  uint32_t y = mt_[index_++];
  y ^= (y >> 11);
  y ^= (y << 7) & 0x9d2c5680U;
  y ^= (y << 15) & 0xefc60000U;
  y ^= (y >> 18);
  return y;
}

double PythonRandom::Random() {
  const uint32_t a = NextUint32() >> 5;
  const uint32_t b = NextUint32() >> 6;
  return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
}

uint32_t PythonRandom::GetRandBits(int k) { return NextUint32() >> (32 - k); }

uint32_t PythonRandom::RandBelow(uint32_t n) {
  const int k = std::bit_width(n);
  uint32_t r = GetRandBits(k);
  while (r >= n) r = GetRandBits(k);
  return r;
}

double PythonRandom::Gauss(double mu, double sigma) {
  double z = 0;
  if (gauss_next_) {
    z = *gauss_next_;
    gauss_next_.reset();
  } else {
    const double x2pi = Random() * (2.0 * std::numbers::pi);
    const double g2rad = std::sqrt(-2.0 * std::log(1.0 - Random()));
    z = std::cos(x2pi) * g2rad;
    gauss_next_ = std::sin(x2pi) * g2rad;
  }
  return mu + z * sigma;
}

}  // namespace proctor
