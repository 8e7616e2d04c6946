// The quantization block of an MLX checkpoint's config.json (docs/FORMATS section 6):
//   "quantization": {"group_size": 64, "bits": 4, "mode": "affine",
//                    "<module path>": {"group_size": 32, "bits": 8} | false, ...}
// (mlx-lm writes the same object as `quantization_config` too). Defaults apply to every module
// quantized without an override; an override object carries its own parameters (missing fields
// fall back to the defaults), `false` marks a module as not quantized. A missing mode is affine.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "quant/mlx_quant.h"

namespace proctor {

struct MlxQuantParams {
  quant::MlxMode mode = quant::MlxMode::kAffine;
  int bits = 0;
  int group_size = 0;
};

struct MlxQuantization {
  std::string key;  // "quantization" or "quantization_config" (for messages)
  // Defaults; absent in the file -> nullopt (then a module quantized by default is an Error).
  std::optional<int> bits, group_size;
  quant::MlxMode mode = quant::MlxMode::kAffine;
  // Module path -> its own parameters, or nullopt for `false` (not quantized). `true` is stored
  // as the defaults.
  std::map<std::string, std::optional<MlxQuantParams>, std::less<>> overrides;
};

// Reads `quantization` (preferred) or `quantization_config`. nullopt when neither is present.
// Error naming `origin` for a block that is not MLX's (a quant_method such as GPTQ or AWQ), an
// unknown mode, non-integer bits / group_size, or an override that is neither an object nor a
// boolean.
std::optional<MlxQuantization> ParseMlxQuantization(const nlohmann::json& config_json,
                                                    std::string_view origin);

}  // namespace proctor
