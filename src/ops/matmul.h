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
//    decoded weights to bf16 ("mlx-amx-bf16-weights" below): a further 2^-9 |w| per weight.
//  - kQ8: for integer-coded weights (the GGUF block types) the activations are quantized per 32
//    values to 8 bits as llama.cpp's CPU backend does (activations_q8.h); the product is w · x^
//    with x^ the dequantized activations, accumulated in f32. With T == 1 on AVX2 this runs on
//    integer dot products ("gguf-q8-avx2"); otherwise x^ goes through the f32-mode kernels.
//    |x - x^| <= (1/2 + 127 * 2^-11) d per element (d = the block's absmax / 127: half a step,
//    plus d's rounding to f16 times the code). Float and MLX weights take f32 activations.
// Threads split N statically (partitions aligned to the kernel's panel width), T == 1 uses a
// matrix-vector path. Results are bit-identical for the same inputs, mode, and thread count.
#pragma once

#include "ops/linear_weight.h"
#include "ops/matmul_kernel_choice.h"
#include "tensor/tensor.h"
#include "util/thread_pool.h"

namespace proctor::ops {

// x: f32 rows (type kF32, any row stride). w: a dense view (f32, f16, bf16 or a GGUF block type,
// blocks along K) or an MLX quantized matrix (linear_weight.h). out: [T, N]. Never expands a
// whole weight matrix to f32: MLX matrices are decoded a group / panel at a time (matmul_mlx.cc).
void MatMul(const MatView& x, const LinearWeight& w, MutMatF32 out, ComputeMode mode,
            ThreadPool& pool);

// Scalar reference: f32 accumulation in k order of x (rounded to bf16 first in kBF16 mode, to x^
// in kQ8 mode for block weights) times exactly decoded weights (the scalar reference decoders).
// Single-threaded and slow; for tests.
void MatMulRef(const MatView& x, const LinearWeight& w, MutMatF32 out, ComputeMode mode);

// Which kernel runs for a weight, mode and T, the test switches, and the kernel names reports
// print: matmul_kernel_choice.h (ChooseMatMulKernel, MatMulKernelName, BF16KernelName). Notes on
// the kernels whose arithmetic differs:
//  - f32 mode with bf16 weights and T >= 2 on AMX ("amx-bf16x3"): x is split exactly into three
//    bf16 parts (x = hi + mid + lo), so each product x_k * w_k is exact in f32 and accumulates in
//    f32 (subnormal partial products, below ~1e-38, are flushed).
//  - GGUF block weights with T == 1 on AVX-512 (F, BW, VL, DQ, VBMI) ("gguf-matvec"): codes
//    decoded in registers, four rows per pass.
//  - GGUF block weights with T >= 2 (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q3_K, Q4_K, Q5_K, Q6_K) on AMX
//    over their exact integer codes ("amx-quant", matmul_amx_quant.cc): w = scale * code - offset
//    per 32-wide block, x as bf16 (bf16 mode) or split exactly into three bf16 parts (f32 mode),
//    block scales applied to the f32 tile sums. Products are exact, so both modes keep their
//    contracts.
//  - MLX matrices (matmul_mlx.cc, matmul_amx_mlx.cc) on AMX: "mlx-amx-exact" (f32 mode: exact
//    code values times the three-part x, scaled per group in f32) or "mlx-amx-bf16-weights" (bf16
//    mode: the decoded weights are also rounded to bf16, as MLX computes bf16 models).

}  // namespace proctor::ops
