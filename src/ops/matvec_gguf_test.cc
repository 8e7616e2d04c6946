// The fused GGUF matrix-vector kernels (AVX-512 and AVX2, each where the CPU has it) against a
// double-precision sum over the scalar reference dequantization, on odd row counts and row
// lengths, plus partition independence and the MatMul dispatch.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "ops/convert.h"
#include "ops/matmul.h"
#include "ops/matmul_kernels.h"
#include "ops/test_util.h"
#include "quant/test_blocks.h"

namespace proctor::ops {
namespace {

constexpr DType kTypes[] = {DType::kQ8_0, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1,
                            DType::kQ2_K, DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K};

using MatVecFn = void (*)(const float*, const MatView&, float*, int64_t, int64_t);
struct FusedKernel {
  const char* name;
  MatVecFn fn;
  bool runs_here;
};

class MatVecGguf : public ::testing::TestWithParam<FusedKernel> {};

TEST_P(MatVecGguf, EveryTypeMatchesTheReferenceOnOddShapes) {
  const FusedKernel& kernel = GetParam();
  if (!kernel.runs_here) GTEST_SKIP() << "CPU lacks " << kernel.name;
  for (const DType type : kTypes) {
    ASSERT_TRUE(internal::FusedGgufMatVecCovers(type)) << Name(type);
    const int64_t block = static_cast<int64_t>(Info(type).block_elems);
    for (const int64_t blocks_per_row : {1, 3, 7}) {
      const int64_t K = blocks_per_row * block;
      for (const int64_t N : {1, 2, 3, 5, 9}) {
        SCOPED_TRACE(fmt::format("{} K={} N={}", Name(type), K, N));
        const auto raw = quant::testing::RandomBlocks(type, static_cast<int>(N * blocks_per_row),
                                                      static_cast<uint32_t>(K + N));
        const MatView w{type, N, K, BytesFor(type, static_cast<uint64_t>(K)), raw.data()};
        const auto x = quant::testing::RandomWeights(K, static_cast<uint32_t>(7 * N + K));
        std::vector<float> out(static_cast<size_t>(N)), split(static_cast<size_t>(N));
        kernel.fn(x.data(), w, out.data(), 0, N);
        // Any partition of the rows gives the same bits (each output is one fixed chain).
        kernel.fn(x.data(), w, split.data(), 0, N / 2);
        kernel.fn(x.data(), w, split.data(), N / 2, N);
        EXPECT_EQ(std::memcmp(out.data(), split.data(), out.size() * 4), 0);
        for (int64_t n = 0; n < N; ++n) {
          const testing::RowProduct p = testing::ExactRowProduct(w, n, x.data());
          EXPECT_NEAR(out[n], p.exact, 4e-6 * p.magnitude + 1e-30) << "row " << n;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Kernels, MatVecGguf,
    ::testing::Values(FusedKernel{"avx512", internal::MatVecGguf, CpuFeatures::Host().avx512_gguf},
                      FusedKernel{"avx2", internal::MatVecGgufAvx2, CpuFeatures::Host().avx2_fma}),
    [](const ::testing::TestParamInfo<FusedKernel>& param) {
      return std::string(param.param.name);
    });

TEST(MatVecGgufDispatch, MatMulAgreesWithThePerRowDotKernels) {
  const CpuFeatures& cpu = CpuFeatures::Host();
  if (!cpu.avx512_gguf && !cpu.avx2_fma) GTEST_SKIP() << "CPU lacks AVX2 and AVX-512";
  const char* fused_name = cpu.avx512_gguf ? "gguf-matvec" : "gguf-matvec-avx2";
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
    EXPECT_STREQ(MatMulKernelName(w, ComputeMode::kF32, 1), fused_name);
    Tensor fused = Tensor::F32(1, N), per_row = Tensor::F32(1, N), one_thread = Tensor::F32(1, N);
    MatMul(xv, w, fused.MutF32(), ComputeMode::kF32, pool);
    ThreadPool single(1);
    MatMul(xv, w, one_thread.MutF32(), ComputeMode::kF32, single);
    EXPECT_EQ(std::memcmp(fused.bytes(), one_thread.bytes(), fused.size_bytes()), 0);
    SetKernelOverridesForTesting({.fused_gguf_matvec = false});
    EXPECT_STREQ(MatMulKernelName(w, ComputeMode::kF32, 1), "f32-matvec");
    MatMul(xv, w, per_row.MutF32(), ComputeMode::kF32, pool);
    SetKernelOverridesForTesting({});
    for (int64_t n = 0; n < N; ++n) {
      const double magnitude = testing::ExactRowProduct(w, n, x.data()).magnitude;
      EXPECT_NEAR(fused.RowF32(0)[n], per_row.RowF32(0)[n], 8e-6 * magnitude) << "row " << n;
    }
  }
}

}  // namespace
}  // namespace proctor::ops
