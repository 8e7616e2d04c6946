// The fused AVX-512 GGUF matrix-vector kernels against a double-precision sum over the scalar
// reference dequantization, on odd row counts and row lengths, plus partition independence and
// the MatMul dispatch.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "ops/convert.h"
#include "ops/matmul.h"
#include "ops/matmul_kernels.h"
#include "quant/test_blocks.h"

namespace proctor::ops {
namespace {

constexpr DType kTypes[] = {DType::kQ8_0, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0,
                            DType::kQ5_1, DType::kQ2_K, DType::kQ3_K, DType::kQ4_K,
                            DType::kQ5_K, DType::kQ6_K};

// Reference values of row n split as value = a - b (b: the minimum's part, zero for types
// without one), by dequantizing copies of the blocks with one scale field zeroed. The kernels
// apply scales to partial sums, so their error is bounded by f32 rounding of sum |x| (|a| + |b|).
void SplitRow(DType type, const uint8_t* row, int64_t K, std::vector<float>& a,
              std::vector<float>& b) {
  const size_t block_bytes = Info(type).block_bytes;
  const size_t row_bytes = BytesFor(type, static_cast<uint64_t>(K));
  const std::vector<int> fields = quant::testing::HalfFieldOffsets(type);
  std::vector<uint8_t> copy(row, row + row_bytes);
  a.assign(static_cast<size_t>(K), 0.0f);
  b.assign(static_cast<size_t>(K), 0.0f);
  const MatView view{type, 1, K, row_bytes, copy.data()};
  if (fields.size() == 2) {
    for (size_t o = 0; o < row_bytes; o += block_bytes) std::memset(&copy[o + fields[1]], 0, 2);
  }
  DecodeRowSegmentRef(view, 0, 0, K, a.data());
  if (fields.size() == 2) {
    std::copy(row, row + row_bytes, copy.begin());
    for (size_t o = 0; o < row_bytes; o += block_bytes) std::memset(&copy[o + fields[0]], 0, 2);
    DecodeRowSegmentRef(view, 0, 0, K, b.data());
    for (float& v : b) v = -v;
  }
}

TEST(MatVecGguf, EveryTypeMatchesTheReferenceOnOddShapes) {
  if (!internal::HaveAvx512Gguf()) GTEST_SKIP() << "CPU lacks AVX-512 F/BW/VL/DQ/VBMI";
  for (const DType type : kTypes) {
    ASSERT_TRUE(internal::HasFusedGgufMatVec(type)) << Name(type);
    const int64_t block = static_cast<int64_t>(Info(type).block_elems);
    for (const int64_t blocks_per_row : {1, 3, 7}) {
      const int64_t K = blocks_per_row * block;
      for (const int64_t N : {1, 2, 3, 5, 9}) {
        SCOPED_TRACE(fmt::format("{} K={} N={}", Name(type), K, N));
        const auto raw = quant::testing::RandomBlocks(
            type, static_cast<int>(N * blocks_per_row), static_cast<uint32_t>(K + N));
        const MatView w{type, N, K, BytesFor(type, static_cast<uint64_t>(K)), raw.data()};
        const auto x = quant::testing::RandomWeights(K, static_cast<uint32_t>(7 * N + K));
        std::vector<float> out(static_cast<size_t>(N)), split(static_cast<size_t>(N));
        internal::MatVecGguf(x.data(), w, out.data(), 0, N);
        // Any partition of the rows gives the same bits (each output is one fixed chain).
        internal::MatVecGguf(x.data(), w, split.data(), 0, N / 2);
        internal::MatVecGguf(x.data(), w, split.data(), N / 2, N);
        EXPECT_EQ(std::memcmp(out.data(), split.data(), out.size() * 4), 0);
        std::vector<float> a, b;
        for (int64_t n = 0; n < N; ++n) {
          SplitRow(type, w.Row(n), K, a, b);
          double exact = 0.0, magnitude = 0.0;
          for (int64_t k = 0; k < K; ++k) {
            exact += static_cast<double>(x[k]) * (static_cast<double>(a[k]) - b[k]);
            magnitude += std::fabs(static_cast<double>(x[k])) * (std::fabs(a[k]) + std::fabs(b[k]));
          }
          EXPECT_NEAR(out[n], exact, 4e-6 * magnitude + 1e-30) << "row " << n;
        }
      }
    }
  }
}

TEST(MatVecGguf, MatMulDispatchAgreesWithThePerRowDotKernels) {
  if (!internal::HaveAvx512Gguf()) GTEST_SKIP() << "CPU lacks AVX-512 F/BW/VL/DQ/VBMI";
  ThreadPool pool(2);
  for (const DType type : kTypes) {
    SCOPED_TRACE(Name(type));
    const int64_t K = 512, N = 67;
    const int64_t blocks_per_row = K / static_cast<int64_t>(Info(type).block_elems);
    const auto raw = quant::testing::RandomBlocks(type, static_cast<int>(N * blocks_per_row), 5);
    const MatView w{type, N, K, BytesFor(type, K), raw.data()};
    const auto x = quant::testing::RandomWeights(K, 17);
    const MatView xv{DType::kF32, 1, K, static_cast<size_t>(K) * 4,
                     reinterpret_cast<const uint8_t*>(x.data())};
    EXPECT_STREQ(F32KernelName(type, 1), "gguf-matvec");
    Tensor fused = Tensor::F32(1, N), per_row = Tensor::F32(1, N), one_thread = Tensor::F32(1, N);
    MatMul(xv, w, fused.MutF32(), ComputeMode::kF32, pool);
    ThreadPool single(1);
    MatMul(xv, w, one_thread.MutF32(), ComputeMode::kF32, single);
    EXPECT_EQ(std::memcmp(fused.bytes(), one_thread.bytes(), fused.size_bytes()), 0);
    SetFusedGgufMatVecForTesting(false);
    EXPECT_STREQ(F32KernelName(type, 1), "f32-matvec");
    MatMul(xv, w, per_row.MutF32(), ComputeMode::kF32, pool);
    SetFusedGgufMatVecForTesting(true);
    std::vector<float> a, b;
    for (int64_t n = 0; n < N; ++n) {
      SplitRow(type, w.Row(n), K, a, b);
      double magnitude = 0.0;
      for (int64_t k = 0; k < K; ++k) magnitude += std::fabs(x[k]) * (std::fabs(a[k]) + std::fabs(b[k]));
      EXPECT_NEAR(fused.RowF32(0)[n], per_row.RowF32(0)[n], 8e-6 * magnitude) << "row " << n;
    }
  }
}

}  // namespace
}  // namespace proctor::ops
