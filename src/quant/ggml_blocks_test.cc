// Every GGUF block type through its traits (ggml_blocks.h): the table agrees with DType's sizes,
// the SIMD dequantizers match the scalar references bit for bit on odd block counts, and every
// dot product agrees with the sum over its dequantized values.
#include "quant/ggml_blocks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "quant/test_blocks.h"

namespace proctor::quant {
namespace {

const DType kTypes[] = {DType::kQ8_0, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1,
                        DType::kQ2_K, DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K};

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

}  // namespace
}  // namespace proctor::quant
