// MLX quantized checkpoints (what mlx-lm and mlx-community publish; docs/FORMATS section 6):
// resolving every linear layer's weight to a dense view or an MLX quantized matrix.
//
// A Linear `<path>.weight` stored as packed U32 codes with `<path>.scales` (and `<path>.biases`
// for affine) beside it is an MLX quantized matrix. config.json's `quantization` (or its copy
// `quantization_config`, formats/mlx_quant_config.h) gives the default parameters and per-module
// overrides. With no override a module is quantized exactly when `<path>.scales` exists (the
// rule mlx-lm's loader applies).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "formats/mlx_quant_config.h"
#include "formats/weights.h"
#include "ops/linear_weight.h"
#include "quant/mlx_quant.h"

namespace proctor {

// The weight of the linear module `path` (e.g. "model.layers.0.mlp.down_proj"), logical shape
// [out, in]: a dense view of `<path>.weight` (any type ops::MatMul takes), or an MLX quantized
// matrix (quantized by the rule above). Error naming the file, the tensor and the values seen and
// expected for: a missing .weight / .scales / .biases, wrong shapes or dtypes, biases in a mode
// that has none, parameters MLX does not define, a quantized tensor with no bits / group_size in
// the config, or an override that contradicts the tensors (`false` with .scales present).
ops::LinearWeight ResolveLinear(const WeightStore& weights,
                                const std::optional<MlxQuantization>& quantization,
                                std::string_view path, int64_t out, int64_t in);

// The quantization parameters module `path` uses, or nullopt when it is not quantized (same rule
// as ResolveLinear, without shape checks; for describing models).
std::optional<MlxQuantParams> MlxModuleParams(const WeightStore& weights,
                                              const std::optional<MlxQuantization>& quantization,
                                              std::string_view path);

}  // namespace proctor
