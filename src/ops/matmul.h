// Matrix products of f32 activations with stored weights: the one entry point every linear layer
// uses, for every weight type.
//
// out[T, N] = x[T, K] · w[N, K]^T. Compute modes:
//  - kF32: activations and accumulation in f32; weights are converted exactly to f32 (no weight
//    rounding), so the only error is f32 summation order.
//  - kBF16: activations are rounded to bf16 (nearest even) before the product; products and
//    accumulation are f32. With bf16 weights on a CPU with AVX-512 BF16 this runs on the
//    vdpbf16ps dot instruction (which also flushes bf16 subnormals to zero); otherwise the same
//    rounded activations go through the f32 kernels. The difference from kF32 is bounded by
//    |x - bf16(x)| <= 2^-8 |x| per element: |out_bf16 - out_f32| <= 2^-8 * sum_k |x_k w_k| (+ f32
//    summation error). MLX matrices on AMX (T >= 2) are the one exception that also rounds the
//    decoded weights to bf16 (MlxKernelName below): a further 2^-9 |w| per weight.
// Threads split N statically (partitions aligned to the kernel's panel width), T == 1 uses a
// matrix-vector path. Results are bit-identical for the same inputs, mode, and thread count.
#pragma once

#include "ops/linear_weight.h"
#include "tensor/tensor.h"
#include "util/thread_pool.h"

namespace proctor::ops {

enum class ComputeMode { kF32, kBF16 };

// x: f32 rows (type kF32, any row stride). w: a dense view (f32, f16, bf16 or a GGUF block type,
// blocks along K) or an MLX quantized matrix (linear_weight.h). out: [T, N]. Never expands a
// whole weight matrix to f32: MLX matrices are decoded a group / panel at a time (matmul_mlx.cc).
void MatMul(const MatView& x, const LinearWeight& w, MutMatF32 out, ComputeMode mode,
            ThreadPool& pool);

// Scalar reference: f32 accumulation in k order of x (rounded to bf16 first in kBF16 mode) times
// exactly decoded weights (the scalar reference decoders). Single-threaded and slow; for tests.
void MatMulRef(const MatView& x, const LinearWeight& w, MutMatF32 out, ComputeMode mode);

// Kernel families for bf16 mode with bf16 weights. kAuto picks the fastest available: AMX-BF16
// tiles for T >= 2 and vdpbf16ps for T == 1 when the CPU has them, else the f32 kernels on the
// rounded activations. All compute the same products (bf16 x bf16, exact in f32) with f32
// accumulation; they differ in summation order and in flushing subnormal products (AMX, dpbf16).
enum class BF16Kernel { kAuto, kAmx, kAvx512Bf16, kF32Fallback };
// Which family bf16-mode MatMul uses for bf16 weights and a T-row input on this CPU, by name:
// "amx-bf16", "avx512bf16" or "f32-fallback" (for logs and benchmarks).
const char* BF16KernelName(int64_t T = 2);
// Restricts bf16 mode to one family (falling back when the CPU lacks it); for tests and
// benchmarks. Not thread-safe with concurrent MatMul calls.
void SetBF16KernelForTesting(BF16Kernel kernel);

// f32 mode with bf16 weights and T >= 2 runs on AMX when available: x is split exactly into
// three bf16 parts (x = hi + mid + lo), so each product x_k * w_k is exact in f32 and accumulates
// in f32 (subnormal partial products, below ~1e-38, are flushed). F32KernelName says which kernel
// f32 mode uses ("amx-bf16x3", "f32-blocked", "f32-matvec"); SetF32AmxForTesting(false) turns
// the AMX path off (tests, benchmarks; not thread-safe with concurrent MatMul calls).
const char* F32KernelName(DType weight_type, int64_t T);
void SetF32AmxForTesting(bool enabled);
// GGUF block weights with T == 1 run the fused AVX-512 matrix-vector kernels ("gguf-matvec":
// codes decoded in registers, four rows per pass) when the CPU has AVX-512 (F, BW, VL, DQ,
// VBMI); SetFusedGgufMatVecForTesting(false) selects the per-row dot kernels instead.
void SetFusedGgufMatVecForTesting(bool enabled);
// GGUF block-quantized weights with T >= 2 (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q3_K, Q4_K, Q5_K) run on
// AMX tiles over their exact integer codes ("amx-quant", matmul_amx_quant.cc):
// w = scale * code - offset per 32-wide block, x as bf16 (bf16 mode) or split exactly into three
// bf16 parts (f32 mode), block scales applied to the f32 tile sums. Products are exact, so both
// modes keep their contracts. SetAmxQuantForTesting(false) selects the FMA kernels instead.
void SetAmxQuantForTesting(bool enabled);
// F32KernelName for any linear weight: "amx-quant" where that path runs, "mlx" for MLX matrices
// (matmul_mlx.cc), otherwise as for the dense type.
const char* F32KernelName(const LinearWeight& w, int64_t T);

// MLX matrices (matmul_mlx.cc, matmul_amx_mlx.cc): "mlx-matvec" (T == 1), "mlx-amx-exact" (f32
// mode, AMX: exact code values times the three-part x, scaled per group in f32),
// "mlx-amx-bf16-weights" (bf16 mode, AMX: the decoded weights are also rounded to bf16, as MLX
// computes bf16 models: a further |w - bf16(w)| <= 2^-9 |w| per weight) or "mlx-f32-blocked"
// (no AMX, or groups of 16). The same switches as above select AMX.
const char* MlxKernelName(const quant::MlxQuantizedMatrix& w, ComputeMode mode, int64_t T);

}  // namespace proctor::ops
