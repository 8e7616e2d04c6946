// The AMX path for GGUF block-quantized weights (prefill): against a double-precision
// product with the scalar reference decoders on odd token / row counts and several k chunks, in
// both compute modes; bit-identical across thread counts; and the MatMul dispatch.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "ops/linear_weight.h"
#include "ops/matmul.h"
#include "ops/matmul_kernels.h"
#include "ops/test_util.h"
#include "quant/test_blocks.h"
#include "util/half.h"

namespace proctor::ops {
namespace {

struct Weight {
  std::vector<uint8_t> raw;  // GGUF blocks
  LinearWeight view;
};

Weight MakeGguf(DType type, int64_t N, int64_t K, uint32_t seed) {
  Weight w;
  const int64_t blocks = N * K / static_cast<int64_t>(Info(type).block_elems);
  w.raw = quant::testing::RandomBlocks(type, static_cast<int>(blocks), seed);
  w.view = MatView{type, N, K, BytesFor(type, static_cast<uint64_t>(K)), w.raw.data()};
  return w;
}

// Checks out = x' · w^T (x' = x, or x rounded to bf16 in bf16 mode) against a double sum, with a
// tolerance from f32 rounding of sum |x| (|w| + |offset part|).
void CheckAgainstExact(const std::vector<float>& x, int64_t T, int64_t K, const Weight& w,
                       ComputeMode mode, const Tensor& out) {
  const int64_t N = w.view.rows();
  std::vector<float> row(static_cast<size_t>(K)), a, b;
  for (int64_t n = 0; n < N; ++n) {
    testing::SplitWeightRow(w.view, n, a, b);  // value = a - b
    for (int64_t k = 0; k < K; ++k) row[k] = a[k] - b[k];
    std::vector<float> check(static_cast<size_t>(K));
    DecodeWeightRowRef(w.view, n, 0, K, check.data());
    for (int64_t t = 0; t < T; ++t) {
      double exact = 0.0, magnitude = 0.0;
      for (int64_t k = 0; k < K; ++k) {
        const float xk = mode == ComputeMode::kBF16 ? RoundToBF16(x[t * K + k]) : x[t * K + k];
        exact += static_cast<double>(xk) * check[k];
        magnitude += std::fabs(static_cast<double>(xk)) * (std::fabs(a[k]) + std::fabs(b[k]));
      }
      ASSERT_NEAR(out.RowF32(t)[n], exact, 1e-5 * magnitude + 1e-30) << "t=" << t << " n=" << n;
    }
  }
}

void RunCase(const Weight& w, int64_t T, ComputeMode mode) {
  const int64_t K = w.view.cols(), N = w.view.rows();
  SCOPED_TRACE(fmt::format("{} T={} N={} K={} mode={}", w.view.TypeName(), T, N, K,
                           mode == ComputeMode::kF32 ? "f32" : "bf16"));
  ASSERT_EQ(ChooseMatMulKernel(w.view, ComputeMode::kF32, T), MatMulKernel::kAmxQuant);
  EXPECT_STREQ(MatMulKernelName(w.view, ComputeMode::kF32, T), "amx-quant");
  const auto x = quant::testing::RandomWeights(T * K, static_cast<uint32_t>(T + K));
  const MatView xv{DType::kF32, T, K, static_cast<size_t>(K) * 4,
                   reinterpret_cast<const uint8_t*>(x.data())};
  ThreadPool two(2), one(1);
  Tensor out = Tensor::F32(T, N), single = Tensor::F32(T, N);
  MatMul(xv, w.view, out.MutF32(), mode, two);
  MatMul(xv, w.view, single.MutF32(), mode, one);
  EXPECT_EQ(std::memcmp(out.bytes(), single.bytes(), out.size_bytes()), 0)
      << "differs between 1 and 2 threads";
  CheckAgainstExact(x, T, K, w, mode, out);
}

TEST(MatMulAmxQuant, GgufTypesMatchTheExactProduct) {
  if (!CpuFeatures::Host().amx_bf16 || !CpuFeatures::Host().avx512_bf16) {
    GTEST_SKIP() << "CPU lacks AMX-BF16 / AVX-512 BF16";
  }
  for (const DType type : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1,
                           DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    // K = 768: two panels of 512 and a short one; odd T and N exercise the padding.
    const Weight w = MakeGguf(type, 19, 768, static_cast<uint32_t>(type) * 7);
    for (const int64_t T : {2, 17}) {
      RunCase(w, T, ComputeMode::kF32);
      RunCase(w, T, ComputeMode::kBF16);
    }
  }
}

TEST(MatMulAmxQuant, TypesWithoutAnExactCodeLayoutUseTheFmaKernels) {
  const Weight q2 = MakeGguf(DType::kQ2_K, 4, 256, 1);
  EXPECT_FALSE(internal::HasAmxQuantLayout(DType::kQ2_K));
  EXPECT_STREQ(MatMulKernelName(q2.view, ComputeMode::kF32, 8), "f32-blocked");
  const Weight q4 = MakeGguf(DType::kQ4_0, 4, 64, 1);
  SetKernelOverridesForTesting({.amx_quant = false});
  EXPECT_STREQ(MatMulKernelName(q4.view, ComputeMode::kF32, 8), "f32-blocked");
  SetKernelOverridesForTesting({});
}

}  // namespace
}  // namespace proctor::ops
