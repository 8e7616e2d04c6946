// ChooseMatMulKernel and the CPU feature detection it reads (see matmul_kernel_choice.h).
#include "ops/matmul_kernel_choice.h"

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <hwy/targets.h>
#include <cstdlib>

#include "ops/activations_q8.h"
#include "ops/matmul_kernels.h"
#include "util/error.h"

namespace proctor::ops {
namespace {

constexpr long kArchReqXcompPerm = 0x1023;
constexpr long kXFeatureXTileData = 18;

struct AmxFeatures {
  bool bf16 = false, int8 = false;
};

AmxFeatures DetectAmx() {
  // CPUID.(EAX=7, ECX=0):EDX bit 22 = AMX-BF16, bit 24 = AMX-TILE, bit 25 = AMX-INT8 (read
  // directly: not every compiler's __builtin_cpu_supports knows the AMX names).
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return {};
  const bool tile = (edx >> 24 & 1u) != 0;
  if (!tile || !__builtin_cpu_supports("avx512bw")) return {};
  // Linux hands out tile data only on request; without the permission tile loads fault.
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXFeatureXTileData) != 0) return {};
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                      __builtin_cpu_supports("avx512dq");
  return {(edx >> 22 & 1u) != 0, (edx >> 25 & 1u) != 0 && avx512};
}

// CPUID.1:ECX bit 29 (clang's __builtin_cpu_supports has no "f16c").
bool HasF16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
}

CpuFeatures DetectHost() {
  __builtin_cpu_init();
  CpuFeatures cpu;
  const AmxFeatures amx = DetectAmx();
  cpu.amx_bf16 = amx.bf16;
  cpu.amx_int8 = amx.int8;
  cpu.avx512_bf16 = __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512bw") &&
                    __builtin_cpu_supports("avx512vl");
  cpu.avx512_vbmi = __builtin_cpu_supports("avx512vbmi");
  cpu.avx512_gguf = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                    __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                    cpu.avx512_vbmi;
  cpu.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && HasF16c();
  const char* cap_env = std::getenv("PROCTOR_CPU_CAP");
  const CpuCap cap = ParseCpuCap(cap_env == nullptr ? "" : cap_env);
  // Highway's dispatch is capped too: its targets better than AVX2 have the lower bits.
  if (cap == CpuCap::kAvx2) hwy::DisableTargets(HWY_AVX2 - 1);
  return cpu.CappedTo(cap);
}

KernelOverrides g_overrides;

// Whether GGUF blocks of `type` run on AMX tiles for T rows (either compute mode). The
// integer-code kernel also packs and sums activations with AVX-512 BF16 instructions.
bool AmxQuantRuns(DType type, int64_t T, const CpuFeatures& cpu, const KernelOverrides& overrides) {
  return T >= 2 && overrides.amx_quant && internal::HasAmxQuantLayout(type) && cpu.amx_bf16 &&
         cpu.avx512_bf16;
}

}  // namespace

const char* CpuCapName(CpuCap cap) {
  switch (cap) {
    case CpuCap::kNone:
      return "none";
    case CpuCap::kAvx512:
      return "avx512";
    case CpuCap::kAvx2:
      return "avx2";
  }
  return "?";
}

CpuCap ParseCpuCap(std::string_view name) {
  if (name.empty() || name == "none") return CpuCap::kNone;
  if (name == "avx512") return CpuCap::kAvx512;
  if (name == "avx2") return CpuCap::kAvx2;
  Fail("cpu", "PROCTOR_CPU_CAP='{}' is not a cap (use avx512 or avx2, or leave it unset)", name);
}

CpuFeatures CpuFeatures::CappedTo(CpuCap to) const {
  CpuFeatures capped = *this;
  capped.cap = to;
  if (to == CpuCap::kAvx512 || to == CpuCap::kAvx2) capped.amx_bf16 = capped.amx_int8 = false;
  if (to == CpuCap::kAvx2) {
    capped.avx512_bf16 = capped.avx512_gguf = capped.avx512_vbmi = false;
  }
  return capped;
}

const CpuFeatures& CpuFeatures::Host() {
  static const CpuFeatures host = DetectHost();
  return host;
}

const char* KernelName(MatMulKernel kernel) {
  switch (kernel) {
    case MatMulKernel::kAmxBf16:
      return "amx-bf16";
    case MatMulKernel::kAmxBf16x3:
      return "amx-bf16x3";
    case MatMulKernel::kAvx512Bf16:
      return "avx512bf16";
    case MatMulKernel::kAmxQuant:
      return "amx-quant";
    case MatMulKernel::kGgufMatVec:
      return "gguf-matvec";
    case MatMulKernel::kGgufMatVecAvx2:
      return "gguf-matvec-avx2";
    case MatMulKernel::kGgufQ8Avx2:
      return "gguf-q8-avx2";
    case MatMulKernel::kGgufQ8GemmAvx2:
      return "gguf-q8-gemm-avx2";
    case MatMulKernel::kAmxQ8:
      return "amx-q8";
    case MatMulKernel::kF32MatVec:
      return "f32-matvec";
    case MatMulKernel::kF32Blocked:
      return "f32-blocked";
    case MatMulKernel::kMlxMatVec:
      return "mlx-matvec";
    case MatMulKernel::kMlxAmxExact:
      return "mlx-amx-exact";
    case MatMulKernel::kMlxAmxBf16Weights:
      return "mlx-amx-bf16-weights";
    case MatMulKernel::kMlxF32Blocked:
      return "mlx-f32-blocked";
  }
  return "?";
}

MatMulKernel ChooseMatMulKernel(const LinearWeight& w, ComputeMode mode, int64_t T,
                                const CpuFeatures& cpu, const KernelOverrides& overrides) {
  if (mode == ComputeMode::kQ8) {
    // Integer dot products where they exist (AMX int8 tiles first for T >= 2); everything else
    // runs the f32 kernels (on the round-tripped activations for block weights, on x itself for
    // the others).
    if (T >= 2 && overrides.amx_q8 && TakesQ8Activations(w) &&
        internal::AmxQ8Covers(w.dense().type) && cpu.amx_int8) {
      return MatMulKernel::kAmxQ8;
    }
    if (T == 1 && overrides.fused_gguf_matvec && TakesQ8Activations(w) &&
        internal::FusedGgufMatVecCovers(w.dense().type) && cpu.avx2_fma) {
      return MatMulKernel::kGgufQ8Avx2;
    }
    if (T >= 2 && overrides.q8_gemm && TakesQ8Activations(w) &&
        internal::Q8GemmAvx2Covers(w.dense().type) && cpu.avx2_fma &&
        !AmxQuantRuns(w.dense().type, T, cpu, overrides)) {
      return MatMulKernel::kGgufQ8GemmAvx2;
    }
    mode = ComputeMode::kF32;
  }
  const bool f32_mode = mode == ComputeMode::kF32;
  const BF16Kernel family = overrides.bf16_family;
  const bool bf16_amx_allowed = family == BF16Kernel::kAuto || family == BF16Kernel::kAmx;
  if (w.is_mlx()) {
    if (T == 1) return MatMulKernel::kMlxMatVec;
    // The AMX kernel steps k by 32 and scales whole groups, so groups must be whole steps.
    const bool amx = (f32_mode ? overrides.amx_in_f32_mode : bf16_amx_allowed) && T >= 2 &&
                     w.mlx().group_size % 32 == 0 && cpu.avx512_vbmi && cpu.amx_bf16;
    if (!amx) return MatMulKernel::kMlxF32Blocked;
    return f32_mode ? MatMulKernel::kMlxAmxExact : MatMulKernel::kMlxAmxBf16Weights;
  }
  const DType type = w.dense().type;
  if (type == DType::kBF16 && f32_mode && T >= 2 && overrides.amx_in_f32_mode && cpu.amx_bf16) {
    return MatMulKernel::kAmxBf16x3;
  }
  if (type == DType::kBF16 && !f32_mode) {
    if (bf16_amx_allowed && T >= 2 && cpu.amx_bf16) return MatMulKernel::kAmxBf16;
    const bool dot_allowed = family == BF16Kernel::kAuto || family == BF16Kernel::kAvx512Bf16;
    if (dot_allowed && cpu.avx512_bf16) return MatMulKernel::kAvx512Bf16;
  }
  if (AmxQuantRuns(type, T, cpu, overrides)) return MatMulKernel::kAmxQuant;
  if (T == 1 && overrides.fused_gguf_matvec && internal::FusedGgufMatVecCovers(type)) {
    if (cpu.avx512_gguf) return MatMulKernel::kGgufMatVec;
    if (cpu.avx2_fma) return MatMulKernel::kGgufMatVecAvx2;
  }
  return T == 1 ? MatMulKernel::kF32MatVec : MatMulKernel::kF32Blocked;
}

MatMulKernel ChooseMatMulKernel(const LinearWeight& w, ComputeMode mode, int64_t T) {
  return ChooseMatMulKernel(w, mode, T, CpuFeatures::Host(), g_overrides);
}

const char* MatMulKernelName(const LinearWeight& w, ComputeMode mode, int64_t T) {
  return KernelName(ChooseMatMulKernel(w, mode, T));
}

const char* BF16KernelName(int64_t T) {
  const MatMulKernel kernel =
      ChooseMatMulKernel(MatView{DType::kBF16, 0, 0, 0, nullptr}, ComputeMode::kBF16, T);
  if (kernel == MatMulKernel::kAmxBf16 || kernel == MatMulKernel::kAvx512Bf16) {
    return KernelName(kernel);
  }
  return "f32-fallback";
}

void SetKernelOverridesForTesting(const KernelOverrides& overrides) { g_overrides = overrides; }

}  // namespace proctor::ops
