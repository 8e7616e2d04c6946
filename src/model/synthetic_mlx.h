// Random MLX-quantized models with the shapes of real ones (the MLX counterpart of
// synthetic_model.h), so the speed of mlx-lm style checkpoints can be measured without a
// download. The tensors are synthetic_model.h's (ForEachSyntheticTensor: every family, hybrids
// and mixtures of experts included): every linear layer and the embedding hold random codes
// (uniform over the code space; mxfp8's two NaN codes excluded) with per-group scales (and
// biases) chosen so the values span the magnitudes synthetic_model.h uses (+-sqrt(3 / fan_in);
// embeddings +-sqrt(3)); affine scales and biases are bf16. A matrix whose input width is not
// whole groups stays bf16. Norms, routers and the DeltaNet's parameters are f32.
// config.mlx_quantization is set, so ValidateWeights / RuntimeModel treat it like a loaded one.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "formats/mlx_quant_config.h"
#include "model/synthetic_model.h"

namespace proctor {

SyntheticModel BuildSyntheticMlxModel(const ModelConfig& config, const MlxQuantParams& params,
                                      uint64_t seed = 1);

// "affine<bits>-g<group>" (e.g. "affine4-g64"), "mxfp4", "mxfp8", "nvfp4" -> parameters (checked
// with quant::CheckMlxParams); nullopt for anything else.
std::optional<MlxQuantParams> ParseMlxQuantSpec(std::string_view spec);

}  // namespace proctor
