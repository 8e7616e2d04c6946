// fp16/bf16 conversions against an independent oracle: the CPU's own F16C instructions
// (vcvtph2ps / vcvtps2ph, round to nearest even), which share no code with util/half.h.
#include "util/half.h"

#include <cpuid.h>
#include <gtest/gtest.h>
#include <immintrin.h>

#include <bit>
#include <cmath>
#include <random>

namespace proctor {
namespace {

bool CpuHasF16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
}

__attribute__((target("f16c"))) float HardwareDecode(uint16_t h) { return _cvtsh_ss(h); }
__attribute__((target("f16c"))) uint16_t HardwareEncode(float f) {
  return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
}

TEST(HalfTest, DecodesAll65536PatternsLikeF16c) {
  if (!CpuHasF16c()) GTEST_SKIP() << "CPU has no F16C, the oracle is absent";
  for (uint32_t h = 0; h < 65536; ++h) {
    const float ours = F16ToF32(static_cast<uint16_t>(h));
    const float theirs = HardwareDecode(static_cast<uint16_t>(h));
    if (std::isnan(theirs)) {
      ASSERT_TRUE(std::isnan(ours)) << "pattern " << h;
      ASSERT_EQ(std::signbit(ours), std::signbit(theirs)) << "pattern " << h;
    } else {
      ASSERT_EQ(std::bit_cast<uint32_t>(ours), std::bit_cast<uint32_t>(theirs)) << "pattern " << h;
    }
  }
}

TEST(HalfTest, DecodesKnownValues) {
  EXPECT_EQ(F16ToF32(0x3C00), 1.0f);
  EXPECT_EQ(F16ToF32(0xC000), -2.0f);
  EXPECT_EQ(F16ToF32(0x7BFF), 65504.0f);
  EXPECT_EQ(F16ToF32(0x0001), std::ldexp(1.0f, -24));     // smallest subnormal
  EXPECT_EQ(F16ToF32(0x03FF), std::ldexp(1023.0f, -24));  // largest subnormal
  EXPECT_TRUE(std::isinf(F16ToF32(0x7C00)));
  EXPECT_TRUE(std::isnan(F16ToF32(0x7E00)));
  EXPECT_TRUE(std::signbit(F16ToF32(0x8000)));
}

TEST(HalfTest, EncodeRoundTripsEveryFiniteHalf) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = F16ToF32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(F32ToF16(f), h) << "pattern " << h;
  }
}

TEST(HalfTest, EncodesLikeF16cOnRandomAndEdgeFloats) {
  if (!CpuHasF16c()) GTEST_SKIP() << "CPU has no F16C, the oracle is absent";
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> bits;
  auto check = [](float f) {
    const uint16_t ours = F32ToF16(f);
    const uint16_t theirs = HardwareEncode(f);
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(F16ToF32(ours)));
    } else {
      ASSERT_EQ(ours, theirs) << "float bits 0x" << std::hex << std::bit_cast<uint32_t>(f);
    }
  };
  for (int i = 0; i < 2000000; ++i) check(std::bit_cast<float>(bits(rng)));
  // Every float whose magnitude is in the fp16 range near rounding boundaries: all exponents,
  // mantissas that end exactly at and next to the half-way point.
  for (uint32_t e = 100; e < 145; ++e) {
    for (uint32_t m = 0; m < (1u << 10); ++m) {
      for (uint32_t tail : {0x0FFFu, 0x1000u, 0x1001u, 0x0000u, 0x1FFFu}) {
        const uint32_t b = (e << 23) | (m << 13) | tail;
        check(std::bit_cast<float>(b));
        check(std::bit_cast<float>(b | 0x80000000u));
      }
    }
  }
}

TEST(HalfTest, Bf16RoundsToNearestEven) {
  EXPECT_EQ(F32ToBF16(1.0f), 0x3F80);
  // 1 + 2^-8 is exactly half way between two bf16 values: ties to even (down to 1.0).
  EXPECT_EQ(F32ToBF16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);
  // 1 + 3*2^-8 is half way, the upper neighbour is even.
  EXPECT_EQ(F32ToBF16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);
  EXPECT_TRUE(std::isnan(BF16ToF32(F32ToBF16(std::nanf("")))));
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = BF16ToF32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(F32ToBF16(f), h);
  }
}

}  // namespace
}  // namespace proctor
