// LinearWeight: the weight W [N = out, K = in] of one linear layer (or an embedding table) as the
// kernels take it. It holds either
//  - a MatView of a plain float or GGUF block type (f32, f16, bf16, q8_0, q4_K, ...), or
//  - an MLX quantized matrix (packed codes + per-group scales / biases, quant/mlx_quant.h).
// ops::MatMul, ops::MatMulRef and ops::GatherRows take a LinearWeight; a MatView converts to one
// implicitly, so dense callers are unchanged. Non-owning, cheap to copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "quant/mlx_quant.h"
#include "tensor/tensor.h"
#include "util/error.h"

namespace proctor::ops {

class LinearWeight {
 public:
  LinearWeight() = default;
  LinearWeight(const MatView& dense) : dense_(dense) {}  // NOLINT(google-explicit-constructor)
  LinearWeight(const quant::MlxQuantizedMatrix& mlx)     // NOLINT(google-explicit-constructor)
      : mlx_(mlx), is_mlx_(true) {}

  bool is_mlx() const { return is_mlx_; }
  int64_t rows() const { return is_mlx_ ? mlx_.rows() : dense_.rows; }  // N
  int64_t cols() const { return is_mlx_ ? mlx_.cols() : dense_.cols; }  // K
  bool empty() const { return rows() == 0; }

  const MatView& dense() const {
    CHECK_MSG(!is_mlx_, "dense() of an MLX quantized weight");
    return dense_;
  }
  const quant::MlxQuantizedMatrix& mlx() const {
    CHECK_MSG(is_mlx_, "mlx() of a dense weight");
    return mlx_;
  }

  // Output rows [begin, end): a view of the same storage (a fused projection's parts).
  LinearWeight RowRange(int64_t begin, int64_t end) const;

  // Bytes the weight occupies (packed codes + scales + biases for MLX).
  size_t StoredBytes() const;
  // "f32", "bf16", "q4_K", ... or "affine 4-bit g64", "mxfp4", "nvfp4" (MLX).
  std::string TypeName() const;

 private:
  MatView dense_;
  quant::MlxQuantizedMatrix mlx_;
  bool is_mlx_ = false;
};

// The histogram key of an MLX matrix type: "affine <bits>-bit g<group>", or the mode name for the
// float modes (their bits and group size are fixed).
std::string MlxTypeName(quant::MlxMode mode, int bits, int group_size);

// Decodes elements [k0, k0 + len) of row `row` into out[len] (SIMD; exact). For block types and
// MLX matrices k0 and len must be whole blocks / groups (CHECKed).
void DecodeWeightRow(const LinearWeight& w, int64_t row, int64_t k0, int64_t len, float* out);
// Scalar reference of DecodeWeightRow.
void DecodeWeightRowRef(const LinearWeight& w, int64_t row, int64_t k0, int64_t len, float* out);

}  // namespace proctor::ops
