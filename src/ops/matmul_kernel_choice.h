// Which kernel a matrix product runs, decided in one function: ChooseMatMulKernel. MatMul
// dispatches on its answer and every kernel name shown to users (logs, `proctor bench`,
// benchmark labels) is the name of that answer, so what runs and what is reported cannot differ.
// The answer depends on the weight format, the compute mode, the number of activation rows T,
// the CPU's features and the test switches (KernelOverrides), and on nothing else.
#pragma once

#include <cstdint>
#include <string_view>

#include "ops/linear_weight.h"

namespace proctor::ops {

// How activations enter the products (the contracts are in ops/matmul.h).
enum class ComputeMode { kF32, kBF16, kQ8 };

// Every kernel MatMul runs. KernelName gives the name reports use (in quotes below).
enum class MatMulKernel {
  kAmxBf16,            // "amx-bf16": bf16 weights, bf16 mode, T >= 2; AMX tiles on bf16(x)
  kAmxBf16x3,          // "amx-bf16x3": bf16 weights, f32 mode, T >= 2; AMX tiles on x split
                       // exactly into three bf16 parts
  kAvx512Bf16,         // "avx512bf16": bf16 weights, bf16 mode; vdpbf16ps (matrix-vector for
                       // T == 1, blocked otherwise)
  kAmxQuant,           // "amx-quant": GGUF blocks with exact integer codes, T >= 2; AMX tiles
  kGgufMatVec,         // "gguf-matvec": GGUF blocks, T == 1; fused AVX-512 kernels
  kGgufMatVecAvx2,     // "gguf-matvec-avx2": GGUF blocks, T == 1; fused AVX2 kernels
  kGgufQ8Avx2,         // "gguf-q8-avx2": GGUF blocks, q8 mode, T == 1; AVX2 integer dot
                       // products on 8-bit activations
  kGgufQ8GemmAvx2,     // "gguf-q8-gemm-avx2": GGUF blocks, q8 mode, T >= 2; AVX2 integer dot
                       // products, each token the bits gguf-q8-avx2 gives it
  kAmxQ8,              // "amx-q8": GGUF blocks, q8 mode, T >= 2; AMX int8 tiles, each token
                       // the bits gguf-q8-avx2 gives it
  kF32MatVec,          // "f32-matvec": any dense type, T == 1; Highway matrix-vector
  kF32Blocked,         // "f32-blocked": any dense type, T >= 2; Highway blocked FMA kernel
  kMlxMatVec,          // "mlx-matvec": MLX matrices, T == 1
  kMlxAmxExact,        // "mlx-amx-exact": MLX, f32 mode, T >= 2; AMX on exact code values
  kMlxAmxBf16Weights,  // "mlx-amx-bf16-weights": MLX, bf16 mode, T >= 2; AMX, decoded weights
                       // rounded to bf16 as MLX computes bf16 models
  kMlxF32Blocked,      // "mlx-f32-blocked": MLX, T >= 2 without AMX (or groups of 16)
};
const char* KernelName(MatMulKernel kernel);

// The most of the CPU a process may use, to run and time the paths of smaller CPUs on a bigger
// one: kAvx512 drops AMX, kAvx2 drops AMX and every AVX-512 kernel (hand-written and Highway's).
// Set by the environment variable PROCTOR_CPU_CAP = avx512 | avx2 (unset or "none": no cap),
// read once with the features.
enum class CpuCap { kNone, kAvx512, kAvx2 };
const char* CpuCapName(CpuCap cap);  // "none", "avx512", "avx2"
// Error naming the variable, the value and the accepted ones for anything else.
CpuCap ParseCpuCap(std::string_view name);

// The CPU features the kernels need. Host() detects them once per process (and asks Linux for
// AMX tile data then), capped by PROCTOR_CPU_CAP; tests pass other values to see what a
// different CPU would run.
struct CpuFeatures {
  bool amx_bf16 = false;       // AMX-TILE, AMX-BF16 and AVX-512 BW, tile data granted by Linux
  bool amx_int8 = false;       // AMX-TILE, AMX-INT8 and AVX-512 F/BW/VL/DQ, tile data granted
  bool avx512_bf16 = false;    // vdpbf16ps (AVX-512 BF16, BW, VL)
  bool avx512_gguf = false;    // AVX-512 F, BW, VL, DQ, VBMI: the fused GGUF matrix-vector kernels
  bool avx512_vbmi = false;    // vpermb: decoding MLX codes for the AMX kernel
  bool avx2_fma = false;       // AVX2, FMA, F16C: the fused AVX2 GGUF matrix-vector kernels
  CpuCap cap = CpuCap::kNone;  // the cap these features were reduced by
  static const CpuFeatures& Host();
  // These features without what `cap` excludes (the Highway targets are not touched).
  CpuFeatures CappedTo(CpuCap cap) const;
};

// The kernel families bf16 mode may use for bf16 weights. kAuto: the fastest the CPU has (AMX
// for T >= 2, else vdpbf16ps, else the f32 kernels on the rounded activations); the others
// restrict the choice to one family, falling back to the f32 kernels when the CPU lacks it.
enum class BF16Kernel { kAuto, kAmx, kAvx512Bf16, kF32Fallback };

// Switches that narrow the choice, for tests and benchmarks that need a particular path. The
// defaults narrow nothing; no switch can select a kernel the CPU lacks.
struct KernelOverrides {
  // bf16 mode with bf16 weights, and whether MLX matrices use AMX in bf16 mode.
  BF16Kernel bf16_family = BF16Kernel::kAuto;
  // f32 mode on AMX: bf16 weights (amx-bf16x3) and MLX matrices (mlx-amx-exact).
  bool amx_in_f32_mode = true;
  bool amx_quant = true;          // GGUF blocks, T >= 2 (off: f32-blocked)
  bool fused_gguf_matvec = true;  // GGUF blocks, T == 1 (off: f32-matvec)
  bool q8_gemm = true;            // GGUF blocks, q8 mode, T >= 2 (off: the f32 kernels on the
                                  // round-tripped activations)
  bool amx_q8 = true;             // GGUF blocks, q8 mode, T >= 2 on AMX (off: the kernels
                                  // q8 mode chose before amx-q8)
};

// The decision, from its inputs only. `w` may be a view without data (only its type, or for MLX
// its group size, is read).
MatMulKernel ChooseMatMulKernel(const LinearWeight& w, ComputeMode mode, int64_t T,
                                const CpuFeatures& cpu, const KernelOverrides& overrides);
// What MatMul runs here: this CPU and the overrides in effect.
MatMulKernel ChooseMatMulKernel(const LinearWeight& w, ComputeMode mode, int64_t T);
// KernelName of what MatMul runs here.
const char* MatMulKernelName(const LinearWeight& w, ComputeMode mode, int64_t T);
// The bf16-mode family for bf16 weights and T rows here: "amx-bf16", "avx512bf16" or
// "f32-fallback" (the f32 kernels on rounded activations).
const char* BF16KernelName(int64_t T = 2);

// Replaces the overrides in effect (KernelOverrides{} restores the defaults). Not thread-safe
// with concurrent MatMul calls.
void SetKernelOverridesForTesting(const KernelOverrides& overrides);

}  // namespace proctor::ops
