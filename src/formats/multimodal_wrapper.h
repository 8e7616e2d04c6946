// Multimodal checkpoints whose language model proctor runs. Qwen3.5's `qwen3_5` and Gemma 3's
// `gemma3` wrap a text model described by config.json's "text_config", its weights under a
// prefix: transformers 5 writes model.language_model.* (lm_head.* at the top), transformers 4 and
// mlx-lm's conversion language_model.model.* and language_model.lm_head.*. The vision tower, its
// projector and the multi-token-prediction head are not part of the text model and are dropped.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "formats/weights.h"

namespace proctor {

// The text model's model_type of a wrapper ("qwen3_5" -> "qwen3_5_text"); nullopt otherwise.
std::optional<std::string_view> TextModelTypeOfWrapper(std::string_view model_type);

// The text model's name of a wrapper's tensor or module path
// ("model.language_model.layers.0.mlp.gate" -> "model.layers.0.mlp.gate",
// "language_model.lm_head.weight" -> "lm_head.weight"); nullopt outside the language model.
std::optional<std::string> TextModelName(std::string_view wrapped);

// Renames the store's tensors to the text model's names and drops the rest; Error naming the
// model when two tensors would take one name.
void KeepTextModelTensors(WeightStore& weights);

}  // namespace proctor
