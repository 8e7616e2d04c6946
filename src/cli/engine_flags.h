// Flags shared by the verbs that run the engine (generate, logits, bench, kl, dump, ppl):
// --compute, --kv, --kv-start, --kv-k, --kv-v, --chunk. Declared once here so every verb spells
// them the same.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/runtime_model.h"

namespace proctor::cli {

struct EngineFlags {
  std::string compute = "f32";
  std::string kv = "f32";
  std::optional<int64_t> kv_start;  // default: 5000 for affine (mlx-lm's), 0 for turbo
  std::string kv_k, kv_v;  // llama.cpp's --cache-type-k / -v: override the scheme's keys / values
  int64_t chunk = 512;

  void Add(CLI::App& verb);
  // Error for a bad --compute / --kv / --chunk value. `model`: the model the options run, whose
  // own kv_config.json `--kv config` reads (a verb with none refuses it).
  RuntimeOptions Options(std::string_view model = {}) const;
};

}  // namespace proctor::cli
