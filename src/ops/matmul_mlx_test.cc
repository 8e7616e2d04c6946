// MatMul with MLX quantized weights (matrix-vector and blocked kernels, both compute modes)
// against an exact double-precision product of the reference-decoded weights and against
// MatMulRef, on odd shapes (T = 1, 3, 17; N not a multiple of the panel width; K across the
// kernel's 256-wide chunks); determinism across runs and thread counts; GatherRows on quantized
// tables.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "hwy/targets.h"
#include "ops/convert.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/test_util.h"
#include "quant/mlx_quant.h"
#include "util/half.h"

namespace proctor::ops {
namespace {

using quant::MlxMode;
using testing::RandomFloats;

struct Format {
  MlxMode mode;
  int bits, group;
  DType scale_type;
};

// Every affine width (scales in each dtype across the list) and the float modes.
const Format kFormats[] = {
    {MlxMode::kAffine, 2, 32, DType::kBF16},  {MlxMode::kAffine, 3, 64, DType::kF16},
    {MlxMode::kAffine, 4, 64, DType::kF16},   {MlxMode::kAffine, 4, 32, DType::kF32},
    {MlxMode::kAffine, 4, 128, DType::kBF16}, {MlxMode::kAffine, 5, 32, DType::kF32},
    {MlxMode::kAffine, 6, 64, DType::kBF16},  {MlxMode::kAffine, 8, 64, DType::kF16},
    {MlxMode::kAffine, 8, 128, DType::kF32},  {MlxMode::kAffine, 2, 128, DType::kF16},
    {MlxMode::kMxfp4, 4, 32, DType::kU8},     {MlxMode::kMxfp8, 8, 32, DType::kU8},
    {MlxMode::kNvfp4, 4, 16, DType::kU8},
};

std::string Describe(const Format& f) {
  return fmt::format("{} {}-bit g{} scales {}", quant::MlxModeName(f.mode), f.bits, f.group,
                     Name(f.scale_type));
}

quant::MlxQuantizedTensor RandomMlx(const Format& f, int64_t N, int64_t K, uint32_t seed) {
  // Rows with different spreads and a nonzero mean, so scales and biases both matter.
  std::vector<float> w = RandomFloats(static_cast<size_t>(N * K), seed, 0.5f);
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t k = 0; k < K; ++k) w[n * K + k] = w[n * K + k] * (1.0f + n % 5) + 0.1f * (n % 3);
  }
  // mx/nv scales are U8 codes; their weights are f32 here.
  const DType weights_type = f.mode == quant::MlxMode::kAffine ? f.scale_type : DType::kF32;
  return quant::QuantizeMlx(w.data(), N, K, f.mode, f.bits, f.group, weights_type);
}

struct Activations {
  std::vector<float> storage;
  MatView view;
};
Activations MakeX(int64_t T, int64_t K, uint32_t seed) {  // row stride wider than K
  Activations a;
  const int64_t stride = K + 5;
  a.storage = RandomFloats(static_cast<size_t>(T * stride), seed);
  for (float& v : a.storage) v += 0.25f;  // a nonzero mean exercises the bias term
  a.view = MatView{DType::kF32, T, K, static_cast<size_t>(stride) * 4,
                   reinterpret_cast<const uint8_t*>(a.storage.data())};
  return a;
}

void CheckCase(const Format& f, int64_t T, int64_t K, int64_t N, ComputeMode mode,
               ThreadPool& pool) {
  SCOPED_TRACE(fmt::format("{} T={} K={} N={} mode={} kernel={}", Describe(f), T, K, N,
                           mode == ComputeMode::kF32 ? "f32" : "bf16",
                           MatMulKernelName(RandomMlx(f, 1, f.group, 1).View(), mode, T)));
  const quant::MlxQuantizedTensor q = RandomMlx(f, N, K, static_cast<uint32_t>(31 * N + K));
  const LinearWeight w = q.View();
  const Activations x = MakeX(T, K, static_cast<uint32_t>(T * 7 + K));
  Tensor out = Tensor::F32(T, N), again = Tensor::F32(T, N), ref = Tensor::F32(T, N);
  MatMul(x.view, w, out.MutF32(), mode, pool);
  MatMul(x.view, w, again.MutF32(), mode, pool);
  ASSERT_EQ(std::memcmp(out.bytes(), again.bytes(), out.size_bytes()), 0) << "not deterministic";
  MatMulRef(x.view, w, ref.MutF32(), mode);
  // The AMX kernel in bf16 mode also rounds the decoded weights to bf16 (matmul.h).
  const bool round_weights =
      std::string(MatMulKernelName(q.View(), mode, T)) == "mlx-amx-bf16-weights";
  std::vector<float> w_row(static_cast<size_t>(K));
  for (int64_t n = 0; n < N; ++n) {
    quant::DecodeMlxRowSegmentRef(q.View(), n, 0, K, w_row.data());
    for (int64_t t = 0; t < T; ++t) {
      const float* xt = x.view.RowAs<float>(t);
      double exact = 0.0, magnitude = 0.0;
      for (int64_t k = 0; k < K; ++k) {
        const double xk = mode == ComputeMode::kBF16 ? RoundToBF16(xt[k]) : xt[k];
        const double wk = round_weights ? RoundToBF16(w_row[k]) : w_row[k];
        exact += xk * wk;
        magnitude += std::fabs(xk * wk);
      }
      // f32 accumulation (and the factored scale / bias sums of the matrix-vector kernel): a
      // few ulps of the magnitude sum for these K.
      const double tol = 4e-6 * magnitude + 1e-30;
      ASSERT_NEAR(out.RowF32(t)[n], exact, tol) << "t=" << t << " n=" << n;
      if (!round_weights) {
        ASSERT_NEAR(ref.RowF32(t)[n], exact, tol) << "reference t=" << t << " n=" << n;
      }
    }
  }
}

// Prefill runs on AMX (when the CPU has it) or on the f32 blocked kernel: both are checked.
class MatMulMlxPrefill : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    SetKernelOverridesForTesting(
        {.bf16_family = GetParam() ? BF16Kernel::kAuto : BF16Kernel::kF32Fallback,
         .amx_in_f32_mode = GetParam()});
  }
  void TearDown() override { SetKernelOverridesForTesting({}); }
};

TEST_P(MatMulMlxPrefill, OddShapesBothModes) {
  ThreadPool pool(2);
  for (const Format& f : kFormats) {
    for (int64_t T : {1, 3, 17}) {
      // K: one group, several groups, and across the blocked kernel's 256-wide k chunk.
      for (auto [groups, N] :
           {std::pair<int64_t, int64_t>{1, 5}, {3, 37}, {(256 / f.group) + 2, 70}}) {
        for (ComputeMode mode : {ComputeMode::kF32, ComputeMode::kBF16}) {
          CheckCase(f, T, groups * f.group, N, mode, pool);
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, MatMulMlxPrefill, ::testing::Values(true, false),
                         [](const auto& param) {
                           return std::string(param.param ? "amx_if_available" : "f32_blocked");
                         });

// The kernels on every Highway target this build compiled and this CPU runs (AVX-512 with its
// table lookups and bit-window loads, AVX2, the portable fallback), not only the one dispatch
// picks.
TEST(MatMulMlx, EveryTarget) {
  ThreadPool pool(2);
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(hwy::TargetName(target));
    for (const Format& f : kFormats) {
      for (int64_t T : {1, 3}) {
        CheckCase(f, T, (256 / f.group + 1) * f.group, 13, ComputeMode::kF32, pool);
        if (::testing::Test::HasFatalFailure()) break;
      }
    }
    if (::testing::Test::HasFatalFailure()) break;
  }
  hwy::SetSupportedTargetsForTest(0);
}

TEST(MatMulMlx, SameBitsForAnyThreadCount) {
  ThreadPool one(1), three(3);
  for (const Format& f : {kFormats[2], kFormats[7], kFormats[1], kFormats[10]}) {
    const quant::MlxQuantizedTensor q = RandomMlx(f, 300, 512, 5);
    for (int64_t T : {1, 9, 33}) {
      for (ComputeMode mode : {ComputeMode::kF32, ComputeMode::kBF16}) {
        const Activations x = MakeX(T, 512, 3);
        Tensor a = Tensor::F32(T, 300), b = Tensor::F32(T, 300);
        MatMul(x.view, q.View(), a.MutF32(), mode, one);
        MatMul(x.view, q.View(), b.MutF32(), mode, three);
        EXPECT_EQ(std::memcmp(a.bytes(), b.bytes(), a.size_bytes()), 0)
            << Describe(f) << " T=" << T;
      }
    }
  }
}

TEST(MatMulMlx, GatherRowsDecodesQuantizedTables) {
  for (const Format& f : {kFormats[0], kFormats[4], kFormats[11]}) {
    const quant::MlxQuantizedTensor q = RandomMlx(f, 40, 256, 9);
    const std::vector<int32_t> ids{0, 39, 7, 7};
    Tensor out = Tensor::F32(4, 256);
    GatherRows(q.View(), ids, out.MutF32());
    std::vector<float> expected(256);
    for (size_t t = 0; t < ids.size(); ++t) {
      quant::DecodeMlxRowSegmentRef(q.View(), ids[t], 0, 256, expected.data());
      // Bit patterns on purpose: the same bits, not equal values.
      // NOLINTNEXTLINE(bugprone-suspicious-memory-comparison)
      EXPECT_EQ(std::memcmp(out.RowF32(static_cast<int64_t>(t)), expected.data(), 256 * 4), 0)
          << Describe(f) << " id " << ids[t];
    }
    const std::vector<int32_t> bad{40};
    Tensor one = Tensor::F32(1, 256);
    EXPECT_THROW(GatherRows(q.View(), bad, one.MutF32()), Error);
  }
}

TEST(LinearWeight, NamesAndSizes) {
  const quant::MlxQuantizedTensor q = RandomMlx(kFormats[2], 8, 128, 1);  // 4-bit g64, f16
  const LinearWeight w = q.View();
  EXPECT_TRUE(w.is_mlx());
  EXPECT_EQ(w.rows(), 8);
  EXPECT_EQ(w.cols(), 128);
  EXPECT_EQ(w.TypeName(), "affine 4-bit g64");
  // 8 rows x (128 * 4 / 8 bytes of codes + 2 groups x (2 + 2) bytes of scale and bias).
  EXPECT_EQ(w.StoredBytes(), 8u * (64 + 8));
  const quant::MlxQuantizedTensor nv = RandomMlx(kFormats[12], 4, 32, 1);
  EXPECT_EQ(LinearWeight(nv.View()).TypeName(), "nvfp4");
  EXPECT_EQ(LinearWeight(nv.View()).StoredBytes(), 4u * (16 + 2));
  const Tensor dense = testing::RandomMatrix(DType::kBF16, 3, 10, 1);
  const LinearWeight d = dense.View();
  EXPECT_FALSE(d.is_mlx());
  EXPECT_EQ(d.TypeName(), "bf16");
  EXPECT_EQ(d.StoredBytes(), 60u);
}

}  // namespace
}  // namespace proctor::ops
