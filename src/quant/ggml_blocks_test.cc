// Every GGUF block type through its traits (ggml_blocks.h): the table agrees with DType's sizes,
// the SIMD dequantizers match the scalar references bit for bit on odd block counts, and every
// dot product agrees with the sum over its dequantized values.
#include "quant/ggml_blocks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "quant/test_blocks.h"
#include "util/half.h"

namespace proctor::quant {
namespace {

const DType kTypes[] = {DType::kQ8_0, DType::kQ4_0, DType::kQ4_1,  DType::kQ5_0,
                        DType::kQ5_1, DType::kQ2_K, DType::kQ3_K,  DType::kQ4_K,
                        DType::kQ5_K, DType::kQ6_K, DType::kIQ4_NL};

TEST(GgmlBlocks, TraitsTable) {
  const BlockTraits* q8 = FindBlockTraits(DType::kQ8_0);
  ASSERT_NE(q8, nullptr);
  EXPECT_EQ(q8->block_bytes, static_cast<int>(Info(DType::kQ8_0).block_bytes));
  EXPECT_EQ(q8->block_elems, static_cast<int>(Info(DType::kQ8_0).block_elems));
  const BlockTraits* q4 = FindBlockTraits(DType::kQ4_0);
  ASSERT_NE(q4, nullptr);
  EXPECT_EQ(q4->block_bytes, static_cast<int>(Info(DType::kQ4_0).block_bytes));
  EXPECT_EQ(FindBlockTraits(DType::kF32), nullptr);
}

TEST(GgmlBlocks, TraitsAgreeWithDTypeInfo) {
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

TEST(GgmlBlocks, SimdDequantizeMatchesReferenceBitForBit) {
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

TEST(GgmlBlocks, DotProductsAgreeWithDequantizedSums) {
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

// IQ4_NL by hand: value = d * level[nibble], byte j holding values j (low) and j + 16 (high).
TEST(GgmlBlocks, Iq4NlDequantizesThroughItsLevels) {
  BlockIQ4_NL block;
  block.d = F32ToF16(0.5f);
  for (int j = 0; j < 16; ++j) block.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  std::vector<uint8_t> raw(sizeof(block));
  std::memcpy(raw.data(), &block, sizeof(block));
  std::vector<float> values(32);
  DequantizeIQ4_NLRef(raw.data(), 1, values.data());
  const float levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                            1,    13,   25,  38,  53,  69,  89,  113};
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(values[j], 0.5f * levels[j]) << j;
    EXPECT_EQ(values[j + 16], 0.5f * levels[15 - j]) << j;
  }
}

// Both IQ4_NL quantizers code every value to a level nearest x / d for some d and store a d
// that reproduces the block closely; the searching one (llama-quantize's) is never worse in
// weighted squared error summed over many blocks, and a zero block is d = 0.
TEST(GgmlBlocks, Iq4NlQuantizersFitTheLevels) {
  const int n_blocks = 64;
  const auto x = testing::RandomWeights(n_blocks * 32, 5);
  std::vector<uint8_t> searched(n_blocks * sizeof(BlockIQ4_NL)), row(searched.size());
  QuantizeIQ4_NLRef(x.data(), n_blocks, searched.data());
  QuantizeIQ4_NLRowRef(x.data(), n_blocks, row.data());
  std::vector<float> a(x.size()), b(x.size());
  DequantizeIQ4_NLRef(searched.data(), n_blocks, a.data());
  DequantizeIQ4_NLRef(row.data(), n_blocks, b.data());
  double err_searched = 0, err_row = 0, norm = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double w = static_cast<double>(x[i]) * x[i];
    err_searched += w * (a[i] - x[i]) * (a[i] - x[i]);
    err_row += w * (b[i] - x[i]) * (b[i] - x[i]);
    norm += w * x[i] * x[i];
  }
  EXPECT_LE(err_searched, err_row * 1.0001);
  EXPECT_LT(err_row, 0.01 * norm);  // 4-bit levels: about 1% relative weighted error
  EXPECT_NE(searched, row);         // the search changes some blocks
  std::vector<float> zeros(32, 0.0f);
  std::vector<uint8_t> zero_block(sizeof(BlockIQ4_NL));
  QuantizeIQ4_NLRef(zeros.data(), 1, zero_block.data());
  EXPECT_EQ(zero_block[0] | zero_block[1], 0);  // d = +0
  EXPECT_EQ(zero_block[2], 0x88);               // level 8 (value 1) is nearest 0
}

}  // namespace
}  // namespace proctor::quant
