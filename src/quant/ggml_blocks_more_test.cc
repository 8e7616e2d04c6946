// Q4_1 / Q5_0 / Q5_1 / K-quants: hand-worked blocks, traits, SIMD against the scalar references
// on odd block counts, dot products, and the reference quantizers' error bound. (Bit-identity
// with ggml itself is in ggml_oracle_test.cc.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "quant/ggml_blocks.h"
#include "quant/test_blocks.h"
#include "util/half.h"

namespace proctor::quant {
namespace {

const DType kTypes[] = {DType::kQ8_0, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1,
                        DType::kQ2_K, DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K};

TEST(GgmlBlocksMore, TraitsAgreeWithDTypeInfo) {
  for (DType type : kTypes) {
    const BlockTraits* traits = FindBlockTraits(type);
    ASSERT_NE(traits, nullptr) << Name(type);
    EXPECT_EQ(traits->type, type);
    EXPECT_EQ(traits->block_elems, static_cast<int>(Info(type).block_elems)) << Name(type);
    EXPECT_EQ(traits->block_bytes, static_cast<int>(Info(type).block_bytes)) << Name(type);
    EXPECT_NE(traits->dot_ref, nullptr);
    EXPECT_NE(traits->dot_fast, nullptr);
  }
}

TEST(GgmlBlocksMore, HandWorkedQ4_1) {
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

TEST(GgmlBlocksMore, HandWorkedQ5_0AndQ5_1) {
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

TEST(GgmlBlocksMore, HandWorkedQ4_KScalesAndValues) {
  BlockQ4_K block{};
  block.d = F32ToF16(0.5f);
  block.dmin = F32ToF16(0.25f);
  // Sub-block 0: scale 3, min 4 (bytes 0 and 4); sub-block 5: scale 0x2A = 42 (low nibble in
  // byte 9, top two bits in byte 1), min 0x11 = 17 (high nibble of byte 9, top bits in byte 5).
  block.scales[0] = 3;
  block.scales[4] = 4;
  block.scales[9] = 0x1A;  // scale low 0xA, min low 0x1
  block.scales[1] = 0x80;  // scale bits 4-5 = 2 -> 0x2A
  block.scales[5] = 0x40;  // min bits 4-5 = 1 -> 0x11
  uint8_t sc, m;
  UnpackScaleMinK4(block.scales, 5, &sc, &m);
  EXPECT_EQ(sc, 42);
  EXPECT_EQ(m, 17);
  block.qs[0] = 0x07;   // value 0: code 7 in sub-block 0 -> 0.5*3*7 - 0.25*4 = 9.5
  block.qs[64] = 0x90;  // value 160 (chunk 2, high nibble, sub-block 5): code 9
  float out[256];
  DequantizeQ4_KRef(reinterpret_cast<const uint8_t*>(&block), 1, out);
  EXPECT_EQ(out[0], 9.5f);
  EXPECT_EQ(out[160], 0.5f * 42 * 9 - 0.25f * 17);
}

TEST(GgmlBlocksMore, HandWorkedQ6_K) {
  BlockQ6_K block{};
  block.d = F32ToF16(0.125f);
  block.scales[2] = -3;  // sub-block of values 32..47
  block.ql[0] = 0x05;    // value 32 (i = 1) uses ql[32]; value 0 uses ql[0] low nibble
  block.ql[32] = 0x0A;   // value 32 low nibble 10
  block.qh[0] = 0x0C;    // value 32 high bits (qh[0] >> 2) & 3 = 3 -> q = 10 | 48 = 58 - 32 = 26
  float out[256];
  DequantizeQ6_KRef(reinterpret_cast<const uint8_t*>(&block), 1, out);
  EXPECT_EQ(out[32], 0.125f * -3 * 26);
  EXPECT_EQ(out[0], 0.125f * 0 * (5 - 32));  // scales[0] is 0
}

TEST(GgmlBlocksMore, SimdDequantizeMatchesReferenceBitForBit) {
  for (DType type : kTypes) {
    const BlockTraits* traits = FindBlockTraits(type);
    for (int n_blocks : {1, 3, 7, 12}) {
      const auto raw = testing::RandomBlocks(type, n_blocks, 31 + n_blocks);
      const size_t n = static_cast<size_t>(n_blocks) * traits->block_elems;
      std::vector<float> ref(n), fast(n);
      traits->dequantize_ref(raw.data(), n_blocks, ref.data());
      traits->dequantize_fast(raw.data(), n_blocks, fast.data());
      ASSERT_EQ(std::memcmp(ref.data(), fast.data(), n * 4), 0) << Name(type) << " " << n_blocks;
    }
  }
}

TEST(GgmlBlocksMore, DotProductsAgreeWithDequantizedSums) {
  for (DType type : kTypes) {
    const BlockTraits* traits = FindBlockTraits(type);
    for (int n_blocks : {1, 5, 9}) {
      const auto raw = testing::RandomBlocks(type, n_blocks, 7 + n_blocks);
      const size_t n = static_cast<size_t>(n_blocks) * traits->block_elems;
      const auto x = testing::RandomWeights(static_cast<int64_t>(n), 3);
      std::vector<float> deq(n);
      traits->dequantize_ref(raw.data(), n_blocks, deq.data());
      double exact = 0.0, magnitude = 0.0;
      for (size_t i = 0; i < n; ++i) {
        exact += static_cast<double>(deq[i]) * x[i];
        magnitude += std::fabs(static_cast<double>(deq[i]) * x[i]);
      }
      const double tolerance = 1e-6 * magnitude + 1e-30;
      EXPECT_NEAR(traits->dot_ref(raw.data(), n_blocks, x.data()), exact, tolerance) << Name(type);
      EXPECT_NEAR(traits->dot_fast(raw.data(), n_blocks, x.data()), exact, tolerance) << Name(type);
    }
  }
}

// |x - dq(x)| <= d/2 for the codes inside the range (d for Q5_0's clamped top code), plus the
// fp16 rounding of d and m.
TEST(GgmlBlocksMore, ReferenceQuantizersStayWithinHalfAStep) {
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
