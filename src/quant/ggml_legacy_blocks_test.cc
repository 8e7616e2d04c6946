// The legacy 32-value blocks, Q8_0 / Q4_0 / Q4_1 / Q5_0 / Q5_1: hand-worked blocks, a numpy
// oracle for Q8_0 and Q4_0 (tools/ggml_dequant.py), SIMD against scalar dot products, and the
// reference quantizers' error bounds. (Bit-identity with ggml itself is in ggml_oracle_test.cc.)
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include "quant/ggml_blocks.h"
#include "quant/test_blocks.h"
#include "util/half.h"

namespace proctor::quant {
namespace {

TEST(GgmlLegacyBlocks, HandWorkedQ8_0) {
  BlockQ8_0 block{};
  block.d = F32ToF16(0.5f);
  for (int i = 0; i < 32; ++i) block.q[i] = static_cast<int8_t>(i - 16);
  block.q[31] = -128;
  block.q[30] = 127;
  float out[32];
  DequantizeQ8_0Ref(reinterpret_cast<const uint8_t*>(&block), 1, out);
  EXPECT_EQ(out[0], -8.0f);
  EXPECT_EQ(out[17], 0.5f);
  EXPECT_EQ(out[30], 63.5f);
  EXPECT_EQ(out[31], -64.0f);
}

TEST(GgmlLegacyBlocks, HandWorkedQ4_0) {
  BlockQ4_0 block{};
  block.d = F32ToF16(0.25f);
  block.qs[0] = 0x8F;  // value 0 = (15-8)*0.25 = 1.75, value 16 = (8-8)*0.25 = 0
  block.qs[5] = 0x03;  // value 5 = (3-8)*0.25 = -1.25, value 21 = (0-8)*0.25 = -2
  float out[32];
  DequantizeQ4_0Ref(reinterpret_cast<const uint8_t*>(&block), 1, out);
  EXPECT_EQ(out[0], 1.75f);
  EXPECT_EQ(out[16], 0.0f);
  EXPECT_EQ(out[5], -1.25f);
  EXPECT_EQ(out[21], -2.0f);
  EXPECT_EQ(out[1], -2.0f);  // byte 0x00: both nibbles 0 -> -8 * 0.25
  EXPECT_EQ(out[17], -2.0f);
}

TEST(GgmlLegacyBlocks, HandWorkedQ4_1) {
  BlockQ4_1 block{};
  block.d = F32ToF16(0.5f);
  block.m = F32ToF16(-3.0f);
  block.qs[0] = 0xF2;  // value 0: 2 * 0.5 - 3 = -2; value 16: 15 * 0.5 - 3 = 4.5
  float out[32];
  DequantizeQ4_1Ref(reinterpret_cast<const uint8_t*>(&block), 1, out);
  EXPECT_EQ(out[0], -2.0f);
  EXPECT_EQ(out[16], 4.5f);
  EXPECT_EQ(out[1], -3.0f);
}

TEST(GgmlLegacyBlocks, HandWorkedQ5_0AndQ5_1) {
  BlockQ5_0 block{};
  block.d = F32ToF16(0.25f);
  block.qs[3] = 0x1F;            // value 3 low nibble 15, value 19 low nibble 1
  const uint32_t qh = 1u << 19;  // value 19 gets the fifth bit: q = 17
  std::memcpy(block.qh, &qh, 4);
  float out[32];
  DequantizeQ5_0Ref(reinterpret_cast<const uint8_t*>(&block), 1, out);
  EXPECT_EQ(out[3], (15 - 16) * 0.25f);
  EXPECT_EQ(out[19], (17 - 16) * 0.25f);
  EXPECT_EQ(out[0], -16 * 0.25f);
  BlockQ5_1 block1{};
  block1.d = F32ToF16(2.0f);
  block1.m = F32ToF16(1.0f);
  const uint32_t qh1 = 1u;  // value 0: q = 16 | 0
  std::memcpy(block1.qh, &qh1, 4);
  DequantizeQ5_1Ref(reinterpret_cast<const uint8_t*>(&block1), 1, out);
  EXPECT_EQ(out[0], 33.0f);
  EXPECT_EQ(out[1], 1.0f);
}

// Random blocks with finite, varied scales (including subnormal and negative fp16 scales).
std::vector<uint8_t> RandomBlocks(int block_bytes, int n_blocks, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> raw(static_cast<size_t>(block_bytes) * n_blocks);
  for (auto& b : raw) b = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
  for (int b = 0; b < n_blocks; ++b) {
    uint16_t d = F32ToF16(scale(rng));
    if (b % 7 == 3) d = 0x0003;  // subnormal
    std::memcpy(&raw[static_cast<size_t>(b) * block_bytes], &d, 2);
  }
  return raw;
}

std::vector<float> RunOracle(const char* kind, const std::vector<uint8_t>& raw) {
  const char* python = "/usr/bin/python3";
  if (!std::filesystem::exists(python)) return {};
  const std::string script = std::string(PROCTOR_SOURCE_DIR) + "/tools/ggml_dequant.py";
  const auto dir = std::filesystem::temp_directory_path();
  const std::string in = (dir / fmt::format("proctor_dq_{}_{}.bin", kind, getpid())).string();
  const std::string out = in + ".f32";
  std::ofstream(in, std::ios::binary)
      .write(reinterpret_cast<const char*>(raw.data()), static_cast<std::streamsize>(raw.size()));
  const std::string cmd = fmt::format("{} {} {} {} {} 2>&1", python, script, kind, in, out);
  if (std::system(cmd.c_str()) != 0) return {};
  std::ifstream file(out, std::ios::binary | std::ios::ate);
  std::vector<float> values(static_cast<size_t>(file.tellg()) / 4);
  file.seekg(0);
  file.read(reinterpret_cast<char*>(values.data()),
            static_cast<std::streamsize>(values.size() * 4));
  std::filesystem::remove(in);
  std::filesystem::remove(out);
  return values;
}

void CheckAgainstOracle(DType type, const char* kind) {
  const BlockTraits* traits = FindBlockTraits(type);
  const int n_blocks = 37;
  const auto raw = RandomBlocks(traits->block_bytes, n_blocks, 17);
  const std::vector<float> oracle = RunOracle(kind, raw);
  if (oracle.empty()) GTEST_SKIP() << "/usr/bin/python3 with numpy not available";
  ASSERT_EQ(oracle.size(), static_cast<size_t>(n_blocks) * 32);
  std::vector<float> ref(oracle.size()), fast(oracle.size());
  traits->dequantize_ref(raw.data(), n_blocks, ref.data());
  traits->dequantize_fast(raw.data(), n_blocks, fast.data());
  for (size_t i = 0; i < oracle.size(); ++i) {
    ASSERT_EQ(ref[i], oracle[i]) << kind << " value " << i;
    ASSERT_EQ(fast[i], oracle[i]) << kind << " value " << i;
  }
}

TEST(GgmlLegacyBlocks, Q8_0MatchesNumpyOracle) { CheckAgainstOracle(DType::kQ8_0, "q8_0"); }
TEST(GgmlLegacyBlocks, Q4_0MatchesNumpyOracle) { CheckAgainstOracle(DType::kQ4_0, "q4_0"); }

TEST(GgmlLegacyBlocks, DotSimdMatchesReference) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  for (int n_blocks : {1, 2, 5, 64}) {
    std::vector<float> x(static_cast<size_t>(n_blocks) * 32);
    for (float& v : x) v = normal(rng);
    const auto q8 = RandomBlocks(sizeof(BlockQ8_0), n_blocks, 3);
    const auto q4 = RandomBlocks(sizeof(BlockQ4_0), n_blocks, 4);
    std::vector<float> deq(x.size());
    DequantizeQ8_0Ref(q8.data(), n_blocks, deq.data());
    double exact = 0.0, magnitude = 0.0;
    for (size_t i = 0; i < x.size(); ++i) {
      exact += static_cast<double>(deq[i]) * x[i];
      magnitude += std::fabs(static_cast<double>(deq[i]) * x[i]);
    }
    EXPECT_NEAR(DotQ8_0Ref(q8.data(), n_blocks, x.data()), exact, 1e-6 * magnitude);
    EXPECT_NEAR(DotQ8_0(q8.data(), n_blocks, x.data()), exact, 1e-6 * magnitude);
    DequantizeQ4_0Ref(q4.data(), n_blocks, deq.data());
    exact = magnitude = 0.0;
    for (size_t i = 0; i < x.size(); ++i) {
      exact += static_cast<double>(deq[i]) * x[i];
      magnitude += std::fabs(static_cast<double>(deq[i]) * x[i]);
    }
    EXPECT_NEAR(DotQ4_0Ref(q4.data(), n_blocks, x.data()), exact, 1e-6 * magnitude);
    EXPECT_NEAR(DotQ4_0(q4.data(), n_blocks, x.data()), exact, 1e-6 * magnitude);
  }
}

TEST(GgmlLegacyBlocks, QuantizeRoundTripWithinHalfStep) {
  std::mt19937 rng(9);
  std::normal_distribution<float> normal;
  std::vector<float> x(64), back(64);
  for (float& v : x) v = normal(rng);
  std::vector<uint8_t> q8(2 * sizeof(BlockQ8_0)), q4(2 * sizeof(BlockQ4_0));
  QuantizeQ8_0Ref(x.data(), 2, q8.data());
  DequantizeQ8_0Ref(q8.data(), 2, back.data());
  for (int b = 0; b < 2; ++b) {
    float amax = 0.0f;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[b * 32 + i]));
    for (int i = 0; i < 32; ++i) EXPECT_NEAR(back[b * 32 + i], x[b * 32 + i], amax / 127 * 0.51);
  }
  QuantizeQ4_0Ref(x.data(), 2, q4.data());
  DequantizeQ4_0Ref(q4.data(), 2, back.data());
  for (int b = 0; b < 2; ++b) {
    float amax = 0.0f;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[b * 32 + i]));
    for (int i = 0; i < 32; ++i) EXPECT_NEAR(back[b * 32 + i], x[b * 32 + i], amax / 8 * 0.51);
  }
}

// |x - dq(x)| <= d/2 for the codes inside the range (d for Q5_0's clamped top code), plus the
// fp16 rounding of d and m.
TEST(GgmlLegacyBlocks, ReferenceQuantizersStayWithinHalfAStep) {
  const int n_blocks = 40;
  const auto x = testing::RandomWeights(n_blocks * 32, 77);
  struct Q {
    DType type;
    void (*quantize)(const float*, int64_t, uint8_t*);
    int max_code;
  };
  for (const Q& q : {Q{DType::kQ4_1, QuantizeQ4_1Ref, 15}, Q{DType::kQ5_1, QuantizeQ5_1Ref, 31},
                     Q{DType::kQ5_0, QuantizeQ5_0Ref, 31}}) {
    const BlockTraits* traits = FindBlockTraits(q.type);
    std::vector<uint8_t> raw(static_cast<size_t>(n_blocks) * traits->block_bytes);
    q.quantize(x.data(), n_blocks, raw.data());
    std::vector<float> back(x.size());
    traits->dequantize_ref(raw.data(), n_blocks, back.data());
    for (int b = 0; b < n_blocks; ++b) {
      float lo = x[b * 32], hi = x[b * 32];
      for (int i = 0; i < 32; ++i) {
        lo = std::min(lo, x[b * 32 + i]);
        hi = std::max(hi, x[b * 32 + i]);
      }
      const float amax = std::max(std::fabs(lo), std::fabs(hi));
      // Step size: (max - min) / max_code with a minimum, 2 * amax / 32 (Q5_0, symmetric).
      const float step = q.type == DType::kQ5_0 ? amax / 16 : (hi - lo) / q.max_code;
      // fp16 rounding of d (relative 2^-11, times up to max_code steps) and of m.
      const float storage = step * q.max_code * 0x1p-11f + amax * 0x1p-11f;
      // Q5_0 maps the largest-magnitude value to code 0 (-16 d); values of the other sign beyond
      // 15.5 steps clamp to code 31 and may be off by up to one full step.
      const float signed_max = std::fabs(lo) > std::fabs(hi) ? lo : hi;
      for (int i = 0; i < 32; ++i) {
        const bool clamped = q.type == DType::kQ5_0 && x[b * 32 + i] / (signed_max / -16) > 15.5f;
        const float bound = clamped ? step : step / 2;
        EXPECT_LE(std::fabs(back[b * 32 + i] - x[b * 32 + i]), bound + storage)
            << Name(q.type) << " block " << b << " value " << i;
      }
    }
  }
}

}  // namespace
}  // namespace proctor::quant
