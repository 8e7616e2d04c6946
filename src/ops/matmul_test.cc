// MatMul (SIMD kernels, both compute modes) against an exact double-precision oracle and the
// scalar reference, on odd sizes and tails; determinism across runs and thread counts.
#include "ops/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "ops/convert.h"
#include "ops/test_util.h"
#include "util/half.h"

namespace proctor::ops {
namespace {

using testing::RandomFloats;
using testing::RandomMatrix;

struct Case {
  DType type;
  int64_t T, K, N;
};

// x with a row stride wider than K (views must honour strides).
struct Activations {
  std::vector<float> storage;
  MatView view;
};
Activations MakeX(int64_t T, int64_t K, uint32_t seed) {
  Activations a;
  const int64_t stride = K + 3;
  a.storage = RandomFloats(static_cast<size_t>(T * stride), seed);
  a.view = MatView{DType::kF32, T, K, static_cast<size_t>(stride) * 4,
                   reinterpret_cast<const uint8_t*>(a.storage.data())};
  return a;
}

// Checks MatMul against sum_k x'[t,k] w[n,k] in double (x' = x, or x rounded to bf16).
void CheckCase(const Case& c, ComputeMode mode, ThreadPool& pool) {
  SCOPED_TRACE(fmt::format("{} T={} K={} N={} mode={}", Name(c.type), c.T, c.K, c.N,
                           mode == ComputeMode::kF32 ? "f32" : "bf16"));
  const Activations x = MakeX(c.T, c.K, 11 + static_cast<uint32_t>(c.T * 7 + c.K));
  const Tensor w = RandomMatrix(c.type, c.N, c.K, 23 + static_cast<uint32_t>(c.N), 0.5f);
  Tensor out = Tensor::F32(c.T, c.N), again = Tensor::F32(c.T, c.N), ref = Tensor::F32(c.T, c.N);
  MatMul(x.view, w.View(), out.MutF32(), mode, pool);
  MatMul(x.view, w.View(), again.MutF32(), mode, pool);
  ASSERT_EQ(std::memcmp(out.bytes(), again.bytes(), out.size_bytes()), 0) << "not deterministic";
  MatMulRef(x.view, w.View(), ref.MutF32(), mode);
  std::vector<float> w_row(static_cast<size_t>(c.K));
  for (int64_t n = 0; n < c.N; ++n) {
    DecodeRowSegmentRef(w.View(), n, 0, c.K, w_row.data());
    for (int64_t t = 0; t < c.T; ++t) {
      const float* xt = x.view.RowAs<float>(t);
      double exact = 0.0, magnitude = 0.0, exact_unrounded = 0.0;
      for (int64_t k = 0; k < c.K; ++k) {
        const double xk = mode == ComputeMode::kBF16 ? RoundToBF16(xt[k]) : xt[k];
        exact += xk * w_row[k];
        exact_unrounded += static_cast<double>(xt[k]) * w_row[k];
        magnitude += std::fabs(static_cast<double>(xt[k]) * w_row[k]);
      }
      // f32 accumulation: a few ulps of the magnitude sum for these K.
      const double tol = 2e-6 * magnitude + 1e-30;
      ASSERT_NEAR(out.RowF32(t)[n], exact, tol) << "t=" << t << " n=" << n;
      ASSERT_NEAR(ref.RowF32(t)[n], exact, tol) << "reference t=" << t << " n=" << n;
      if (mode == ComputeMode::kBF16) {  // the documented distance from the f32-mode product
        ASSERT_NEAR(out.RowF32(t)[n], exact_unrounded, std::ldexp(magnitude, -8) + tol);
      }
    }
  }
}

// Runs the body once per bf16 kernel family the CPU offers (and always the f32 fallback).
class MatMulKernels : public ::testing::TestWithParam<BF16Kernel> {
 protected:
  // The AMX family also covers f32 mode's AMX path (x split into three bf16 parts).
  void SetUp() override {
    SetKernelOverridesForTesting(
        {.bf16_family = GetParam(), .amx_in_f32_mode = GetParam() == BF16Kernel::kAmx});
  }
  void TearDown() override { SetKernelOverridesForTesting({}); }
};

TEST_P(MatMulKernels, FloatWeightsOddSizes) {
  ThreadPool pool(2);
  for (DType type : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (int64_t T : {1, 2, 3, 7, 64, 65}) {
      for (auto [K, N] :
           {std::pair<int64_t, int64_t>{1, 1}, {17, 5}, {33, 47}, {130, 33}, {257, 70}}) {
        for (ComputeMode mode : {ComputeMode::kF32, ComputeMode::kBF16}) {
          CheckCase({type, T, K, N}, mode, pool);
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
}

TEST(MatMul, QuantizedWeights) {
  ThreadPool pool(2);
  for (DType type : {DType::kQ8_0, DType::kQ4_0}) {
    for (int64_t T : {1, 2, 7, 65}) {
      for (auto [K, N] : {std::pair<int64_t, int64_t>{32, 3}, {96, 47}, {320, 33}}) {
        for (ComputeMode mode : {ComputeMode::kF32, ComputeMode::kBF16}) {
          CheckCase({type, T, K, N}, mode, pool);
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
}

TEST_P(MatMulKernels, LargeKAndBlockBoundaries) {
  ThreadPool pool(2);
  for (DType type : {DType::kBF16, DType::kQ8_0}) {
    for (int64_t T : {1, 37}) {
      for (ComputeMode mode : {ComputeMode::kF32, ComputeMode::kBF16}) {
        CheckCase({type, T, 1024 + 64, 300}, mode, pool);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

TEST_P(MatMulKernels, SameBitsForAnyThreadCount) {
  ThreadPool one(1), three(3);
  for (DType type : {DType::kBF16, DType::kF32, DType::kQ4_0}) {
    for (int64_t T : {1, 9, 33}) {
      for (ComputeMode mode : {ComputeMode::kF32, ComputeMode::kBF16}) {
        const Activations x = MakeX(T, 256, 3);
        const Tensor w = RandomMatrix(type, 200, 256, 4);
        Tensor a = Tensor::F32(T, 200), b = Tensor::F32(T, 200);
        MatMul(x.view, w.View(), a.MutF32(), mode, one);
        MatMul(x.view, w.View(), b.MutF32(), mode, three);
        EXPECT_EQ(std::memcmp(a.bytes(), b.bytes(), a.size_bytes()), 0) << Name(type) << " T=" << T;
      }
    }
  }
}

TEST(MatMul, WritesIntoStridedOutput) {
  ThreadPool pool(2);
  const Activations x = MakeX(5, 64, 8);
  const Tensor w = RandomMatrix(DType::kBF16, 40, 64, 9);
  std::vector<float> wide(5 * 50, -7.0f);
  MutMatF32 out{5, 40, 50, wide.data()};
  MatMul(x.view, w.View(), out, ComputeMode::kF32, pool);
  Tensor ref = Tensor::F32(5, 40);
  MatMulRef(x.view, w.View(), ref.MutF32(), ComputeMode::kF32);
  for (int64_t t = 0; t < 5; ++t) {
    for (int64_t n = 0; n < 40; ++n) EXPECT_NEAR(out.Row(t)[n], ref.RowF32(t)[n], 1e-4);
    for (int64_t n = 40; n < 50; ++n) EXPECT_EQ(out.Row(t)[n], -7.0f) << "wrote past the view";
  }
}

INSTANTIATE_TEST_SUITE_P(Families, MatMulKernels,
                         ::testing::Values(BF16Kernel::kAmx, BF16Kernel::kAvx512Bf16,
                                           BF16Kernel::kF32Fallback),
                         [](const auto& param_info) {
                           switch (param_info.param) {
                             case BF16Kernel::kAmx:
                               return std::string("amx");
                             case BF16Kernel::kAvx512Bf16:
                               return std::string("avx512bf16");
                             default:
                               return std::string("f32");
                           }
                         });

TEST(MatMul, ReportsKernelFamilies) {
  // Not an assertion about speed: records which families this CPU exercised above.
  std::printf("bf16 kernels here: prefill %s, decode %s\n", BF16KernelName(64), BF16KernelName(1));
  SUCCEED();
}

}  // namespace
}  // namespace proctor::ops
