// ChooseMatMulKernel on CPUs other than this one (the choice is a pure function of its inputs),
// the test switches, and the names reports print.
#include "ops/matmul_kernel_choice.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <set>
#include <string>

#include "util/error.h"

namespace proctor::ops {
namespace {

using enum MatMulKernel;

constexpr CpuFeatures kSapphireRapids{.amx_bf16 = true,
                                      .amx_int8 = true,
                                      .avx512_bf16 = true,
                                      .avx512_gguf = true,
                                      .avx512_vbmi = true,
                                      .avx2_fma = true};
constexpr CpuFeatures kAvx512Bf16NoAmx{.amx_bf16 = false,
                                       .avx512_bf16 = true,
                                       .avx512_gguf = true,
                                       .avx512_vbmi = true,
                                       .avx2_fma = true};
constexpr CpuFeatures kAvx2Only{.avx2_fma = true};
constexpr CpuFeatures kNoSimd{};

LinearWeight Dense(DType type) { return MatView{type, 0, 0, 0, nullptr}; }
LinearWeight Mlx(int group_size) {
  quant::MlxQuantizedMatrix m;
  m.group_size = group_size;
  return m;
}

MatMulKernel Choose(const LinearWeight& w, ComputeMode mode, int64_t T, const CpuFeatures& cpu,
                    const KernelOverrides& overrides = {}) {
  return ChooseMatMulKernel(w, mode, T, cpu, overrides);
}

constexpr ComputeMode kF32 = ComputeMode::kF32;
constexpr ComputeMode kBF16 = ComputeMode::kBF16;

TEST(ChooseMatMulKernel, EveryKernelOnACpuThatHasThemAll) {
  const CpuFeatures& cpu = kSapphireRapids;
  EXPECT_EQ(Choose(Dense(DType::kBF16), kF32, 64, cpu), kAmxBf16x3);
  EXPECT_EQ(Choose(Dense(DType::kBF16), kF32, 1, cpu), kF32MatVec);
  EXPECT_EQ(Choose(Dense(DType::kBF16), kBF16, 64, cpu), kAmxBf16);
  EXPECT_EQ(Choose(Dense(DType::kBF16), kBF16, 1, cpu), kAvx512Bf16);
  for (ComputeMode mode : {kF32, kBF16}) {
    EXPECT_EQ(Choose(Dense(DType::kQ4_0), mode, 2, cpu), kAmxQuant);
    EXPECT_EQ(Choose(Dense(DType::kQ6_K), mode, 64, cpu), kAmxQuant);
    EXPECT_EQ(Choose(Dense(DType::kQ4_0), mode, 1, cpu), kGgufMatVec);
    EXPECT_EQ(Choose(Dense(DType::kQ2_K), mode, 64, cpu), kF32Blocked);  // no exact code layout
    EXPECT_EQ(Choose(Dense(DType::kF32), mode, 64, cpu), kF32Blocked);
    EXPECT_EQ(Choose(Dense(DType::kF16), mode, 1, cpu), kF32MatVec);
    EXPECT_EQ(Choose(Mlx(64), mode, 1, cpu), kMlxMatVec);
    EXPECT_EQ(Choose(Mlx(16), mode, 64, cpu), kMlxF32Blocked);  // groups narrower than a tile step
  }
  EXPECT_EQ(Choose(Mlx(64), kF32, 64, cpu), kMlxAmxExact);
  EXPECT_EQ(Choose(Mlx(32), kBF16, 2, cpu), kMlxAmxBf16Weights);
}

TEST(ChooseMatMulKernel, CpusWithoutAmxOrAvx512FallBack) {
  EXPECT_EQ(Choose(Dense(DType::kBF16), kBF16, 64, kAvx512Bf16NoAmx), kAvx512Bf16);
  EXPECT_EQ(Choose(Dense(DType::kBF16), kF32, 64, kAvx512Bf16NoAmx), kF32Blocked);
  EXPECT_EQ(Choose(Dense(DType::kQ8_0), kF32, 64, kAvx512Bf16NoAmx), kF32Blocked);
  EXPECT_EQ(Choose(Dense(DType::kQ8_0), kF32, 1, kAvx512Bf16NoAmx), kGgufMatVec);
  EXPECT_EQ(Choose(Mlx(64), kF32, 64, kAvx512Bf16NoAmx), kMlxF32Blocked);
  EXPECT_EQ(Choose(Dense(DType::kBF16), kBF16, 64, kAvx2Only), kF32Blocked);
  EXPECT_EQ(Choose(Dense(DType::kBF16), kBF16, 1, kAvx2Only), kF32MatVec);
  EXPECT_EQ(Choose(Dense(DType::kQ4_K), kF32, 1, kAvx2Only), kGgufMatVecAvx2);
  EXPECT_EQ(Choose(Dense(DType::kQ4_K), kF32, 64, kAvx2Only), kF32Blocked);
  EXPECT_EQ(Choose(Dense(DType::kF16), kF32, 1, kAvx2Only), kF32MatVec);
  EXPECT_EQ(Choose(Mlx(64), kBF16, 64, kAvx2Only), kMlxF32Blocked);
  EXPECT_EQ(Choose(Dense(DType::kQ4_K), kF32, 1, kNoSimd), kF32MatVec);
  EXPECT_EQ(Choose(Dense(DType::kQ4_0), kF32, 1, kAvx2Only, {.fused_gguf_matvec = false}),
            kF32MatVec);
}

// q8 mode: integer kernels for GGUF blocks (AMX int8 tiles for T >= 2 where the CPU has them,
// else AVX2), the f32 kernels for the rest.
TEST(ChooseMatMulKernel, Q8ModeRunsTheIntegerKernelsWhereTheyExist) {
  constexpr ComputeMode kQ8 = ComputeMode::kQ8;
  constexpr CpuFeatures kAmxBf16Only = [] {
    CpuFeatures cpu = kSapphireRapids;
    cpu.amx_int8 = false;
    return cpu;
  }();
  for (const DType type : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1,
                           DType::kQ2_K, DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    SCOPED_TRACE(Name(type));
    EXPECT_EQ(Choose(Dense(type), kQ8, 1, kAvx2Only), kGgufQ8Avx2);
    EXPECT_EQ(Choose(Dense(type), kQ8, 1, kSapphireRapids), kGgufQ8Avx2);
    EXPECT_EQ(Choose(Dense(type), kQ8, 2, kAvx2Only), kGgufQ8GemmAvx2);
    EXPECT_EQ(Choose(Dense(type), kQ8, 512, kAvx512Bf16NoAmx), kGgufQ8GemmAvx2);
    EXPECT_EQ(Choose(Dense(type), kQ8, 2, kSapphireRapids), kAmxQ8);
    EXPECT_EQ(Choose(Dense(type), kQ8, 512, kSapphireRapids), kAmxQ8);
    EXPECT_EQ(Choose(Dense(type), kQ8, 512, kSapphireRapids, {.amx_quant = false, .amx_q8 = false}),
              kGgufQ8GemmAvx2);
    EXPECT_EQ(Choose(Dense(type), kQ8, 512, kAvx2Only, {.q8_gemm = false}), kF32Blocked);
    EXPECT_EQ(Choose(Dense(type), kQ8, 512, kNoSimd), kF32Blocked);
    // f32 mode never takes the int8 tiles.
    EXPECT_NE(Choose(Dense(type), kF32, 512, kSapphireRapids), kAmxQ8);
  }
  // Without AMX-INT8 (or with it switched off) q8 mode keeps what it chose before: AMX bf16
  // tiles on x^ for the types they cover, the AVX2 integer kernel for Q2_K, which they do not.
  for (const CpuFeatures& cpu : {kAmxBf16Only, kSapphireRapids}) {
    const KernelOverrides overrides{.amx_q8 = false};
    EXPECT_EQ(Choose(Dense(DType::kQ4_K), kQ8, 512, cpu, overrides), kAmxQuant);
    EXPECT_EQ(Choose(Dense(DType::kQ2_K), kQ8, 512, cpu, overrides), kGgufQ8GemmAvx2);
  }
  EXPECT_EQ(Choose(Dense(DType::kIQ4_NL), kQ8, 512, kSapphireRapids), kF32Blocked);  // no GEMM
  EXPECT_EQ(Choose(Dense(DType::kIQ4_NL), kQ8, 512, kAvx2Only), kF32Blocked);
  EXPECT_EQ(Choose(Dense(DType::kBF16), kQ8, 512, kAvx2Only), kF32Blocked);
  EXPECT_EQ(Choose(Mlx(64), kQ8, 512, kAvx2Only), kMlxF32Blocked);
}

// PROCTOR_CPU_CAP: a capped Sapphire Rapids chooses what the smaller CPU would.
TEST(ChooseMatMulKernel, ACappedCpuChoosesTheSmallerCpusKernels) {
  const CpuFeatures avx512 = kSapphireRapids.CappedTo(CpuCap::kAvx512);
  const CpuFeatures avx2 = kSapphireRapids.CappedTo(CpuCap::kAvx2);
  EXPECT_EQ(avx2.cap, CpuCap::kAvx2);
  for (const DType type : {DType::kBF16, DType::kQ4_0, DType::kQ6_K, DType::kF16}) {
    for (const ComputeMode mode : {kF32, kBF16}) {
      for (const int64_t T : {1, 64}) {
        SCOPED_TRACE(fmt::format("{} T={}", Name(type), T));
        EXPECT_EQ(Choose(Dense(type), mode, T, avx512),
                  Choose(Dense(type), mode, T, kAvx512Bf16NoAmx));
        EXPECT_EQ(Choose(Dense(type), mode, T, avx2), Choose(Dense(type), mode, T, kAvx2Only));
      }
    }
  }
  EXPECT_EQ(Choose(Mlx(64), kF32, 64, avx2), kMlxF32Blocked);
  EXPECT_EQ(Choose(Dense(DType::kQ4_0), kF32, 1, avx2), kGgufMatVecAvx2);
  EXPECT_EQ(kSapphireRapids.CappedTo(CpuCap::kNone).amx_bf16, true);
  EXPECT_EQ(ParseCpuCap(""), CpuCap::kNone);
  EXPECT_EQ(ParseCpuCap("avx2"), CpuCap::kAvx2);
  EXPECT_EQ(ParseCpuCap(CpuCapName(CpuCap::kAvx512)), CpuCap::kAvx512);
  EXPECT_THROW(ParseCpuCap("AVX2"), Error);
  EXPECT_THROW(ParseCpuCap("sse4"), Error);
}

TEST(ChooseMatMulKernel, OverridesOnlyNarrowTheChoice) {
  const CpuFeatures& cpu = kSapphireRapids;
  const KernelOverrides no_f32_amx{.amx_in_f32_mode = false};
  EXPECT_EQ(Choose(Dense(DType::kBF16), kF32, 64, cpu, no_f32_amx), kF32Blocked);
  EXPECT_EQ(Choose(Mlx(64), kF32, 64, cpu, no_f32_amx), kMlxF32Blocked);
  EXPECT_EQ(Choose(Mlx(64), kBF16, 64, cpu, no_f32_amx), kMlxAmxBf16Weights);
  EXPECT_EQ(Choose(Dense(DType::kQ4_0), kF32, 64, cpu, no_f32_amx), kAmxQuant);

  const KernelOverrides dot_only{.bf16_family = BF16Kernel::kAvx512Bf16};
  EXPECT_EQ(Choose(Dense(DType::kBF16), kBF16, 64, cpu, dot_only), kAvx512Bf16);
  EXPECT_EQ(Choose(Mlx(64), kBF16, 64, cpu, dot_only), kMlxF32Blocked);
  const KernelOverrides f32_kernels{.bf16_family = BF16Kernel::kF32Fallback};
  EXPECT_EQ(Choose(Dense(DType::kBF16), kBF16, 64, cpu, f32_kernels), kF32Blocked);
  EXPECT_EQ(Choose(Dense(DType::kBF16), kBF16, 1, cpu, f32_kernels), kF32MatVec);
  EXPECT_EQ(Choose(Dense(DType::kBF16), kF32, 64, cpu, f32_kernels), kAmxBf16x3);
  // A family the CPU lacks is never chosen: the f32 kernels run instead.
  const KernelOverrides amx_only{.bf16_family = BF16Kernel::kAmx};
  EXPECT_EQ(Choose(Dense(DType::kBF16), kBF16, 64, kAvx512Bf16NoAmx, amx_only), kF32Blocked);
  EXPECT_EQ(Choose(Dense(DType::kBF16), kBF16, 1, cpu, amx_only), kF32MatVec);

  EXPECT_EQ(Choose(Dense(DType::kQ4_0), kF32, 64, cpu, {.amx_quant = false}), kF32Blocked);
  EXPECT_EQ(Choose(Dense(DType::kQ4_0), kF32, 1, cpu, {.fused_gguf_matvec = false}), kF32MatVec);
}

TEST(ChooseMatMulKernel, NamesAreDistinct) {
  std::set<std::string> names;
  for (MatMulKernel k : {kAmxBf16, kAmxBf16x3, kAvx512Bf16, kAmxQuant, kGgufMatVec, kGgufMatVecAvx2,
                         kGgufQ8Avx2, kGgufQ8GemmAvx2, kF32MatVec, kF32Blocked, kMlxMatVec,
                         kMlxAmxExact, kMlxAmxBf16Weights, kMlxF32Blocked}) {
    EXPECT_TRUE(names.insert(KernelName(k)).second) << KernelName(k);
  }
  EXPECT_STREQ(KernelName(kAmxBf16x3), "amx-bf16x3");
}

// The reported names follow the host's choice, with the overrides in effect.
TEST(ChooseMatMulKernel, ReportedNamesFollowTheHostChoice) {
  const CpuFeatures& host = CpuFeatures::Host();
  EXPECT_STREQ(BF16KernelName(64), host.amx_bf16      ? "amx-bf16"
                                   : host.avx512_bf16 ? "avx512bf16"
                                                      : "f32-fallback");
  EXPECT_STREQ(MatMulKernelName(Dense(DType::kQ8_0), kF32, 64),
               KernelName(ChooseMatMulKernel(Dense(DType::kQ8_0), kF32, 64, host, {})));
  SetKernelOverridesForTesting({.bf16_family = BF16Kernel::kF32Fallback});
  EXPECT_STREQ(BF16KernelName(64), "f32-fallback");
  EXPECT_STREQ(MatMulKernelName(Dense(DType::kBF16), kBF16, 64), "f32-blocked");
  SetKernelOverridesForTesting({});
}

}  // namespace
}  // namespace proctor::ops
