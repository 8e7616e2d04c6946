// Elementwise activation ops and embedding lookup.
#pragma once

#include <cstdint>
#include <span>

#include "ops/linear_weight.h"
#include "tensor/tensor.h"

namespace proctor::ops {

// gate = silu(gate) * up, elementwise; up: f32 [T, C] like gate.
void SiluMul(MutMatF32 gate, const MatView& up);
// gate = gelu_tanh(gate) * up (Gemma's GeGLU; torch's gelu(approximate="tanh")), likewise.
void GeluTanhMul(MutMatF32 gate, const MatView& up);
// Scalar reference of GeluTanhMul (double arithmetic).
void GeluTanhMulRef(MutMatF32 gate, const MatView& up);
// acc += x; x: f32, same shape.
void AddInPlace(MutMatF32 acc, const MatView& x);
// x[t] += bias for every row; bias: 1 row of x.cols, any float type.
void AddBias(MutMatF32 x, const MatView& bias);
// Embedding lookup: out[t] = dequantized row ids[t] of table (any weight MatMul accepts,
// MLX quantized tables included). An id outside [0, table.rows) throws proctor::Error.
void GatherRows(const LinearWeight& table, std::span<const int32_t> ids, MutMatF32 out);

}  // namespace proctor::ops
