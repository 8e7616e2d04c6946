#include "tensor/tensor.h"

#include <gtest/gtest.h>

namespace proctor {
namespace {

TEST(DTypeTest, BlockSizesMatchGgml) {
  // Block sizes from the GGUF/ggml specification (bytes per block of values).
  EXPECT_EQ(BytesFor(DType::kQ8_0, 64), 68u);
  EXPECT_EQ(BytesFor(DType::kQ4_0, 32), 18u);
  EXPECT_EQ(BytesFor(DType::kQ4_K, 256), 144u);
  EXPECT_EQ(BytesFor(DType::kQ6_K, 512), 420u);
  EXPECT_EQ(BytesFor(DType::kBF16, 3), 6u);
  EXPECT_FALSE(FitsBlocks(DType::kQ8_0, 33));
  EXPECT_EQ(ParseDType("BF16"), DType::kBF16);
  EXPECT_EQ(ParseDType("q4_k"), DType::kQ4_K);
  EXPECT_FALSE(ParseDType("f8").has_value());
}

TEST(TensorTest, OwnsAlignedZeroedStorageAndCopiesExplicitly) {
  Tensor t = Tensor::F32(3, 5);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.bytes()) % 64, 0u);
  EXPECT_EQ(t.size_bytes(), 60u);
  for (int i = 0; i < 15; ++i) EXPECT_EQ(t.f32()[i], 0.0f);
  t.RowF32(1)[2] = 4.5f;
  Tensor c = t.Copy();
  t.RowF32(1)[2] = 0.0f;
  EXPECT_EQ(c.RowF32(1)[2], 4.5f);
  MatView v = c.View();
  EXPECT_EQ(v.RowAs<float>(1)[2], 4.5f);
  EXPECT_EQ(v.RowRange(1, 3).rows, 2);
}

}  // namespace
}  // namespace proctor
