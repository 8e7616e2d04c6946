// Test-only: a Hugging Face golden case (the layout of ../shared/fixtures/hf-goldens, which
// tools/oracle/hf_model.py also writes: config.json, model.safetensors, tokens.json, logits.f32,
// greedy_logits.f32, hidden_states.f32) loaded into the engine, and the comparison every golden
// test makes: prompt logits, the greedy continuation, the logits of each greedy step and the
// hidden states after every layer.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "formats/model_config.h"
#include "formats/safetensors.h"
#include "model/greedy.h"
#include "model/runtime_model.h"
#include "model/teacher_forced.h"

namespace proctor::testing {

struct Golden {
  ModelConfig config;
  WeightStore weights;
  std::vector<int32_t> prompt, greedy;
  std::vector<float> logits;         // [prompt, vocab]
  std::vector<float> greedy_logits;  // [greedy, vocab]
  std::vector<float> hidden_states;  // [layers + 1, prompt, hidden]; the last is final-normed
};

inline std::vector<float> ReadF32File(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<float> out(std::filesystem::file_size(path) / sizeof(float));
  in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(out.size() * 4));
  return out;
}

// The case in `dir`; null when dir holds no model.safetensors.
inline std::unique_ptr<Golden> LoadGolden(const std::filesystem::path& dir) {
  if (!std::filesystem::exists(dir / "model.safetensors")) return nullptr;
  auto g = std::make_unique<Golden>();
  std::ifstream config_file(dir / "config.json");
  g->config = ParseHfConfig(nlohmann::json::parse(config_file), (dir / "config.json").string());
  g->weights.set_origin(dir.string());
  LoadSafetensorsDirectory(dir, g->weights);
  std::ifstream tokens_file(dir / "tokens.json");
  const auto tokens = nlohmann::json::parse(tokens_file);
  g->prompt = tokens["prompt"].get<std::vector<int32_t>>();
  g->greedy = tokens["greedy"].get<std::vector<int32_t>>();
  g->logits = ReadF32File(dir / "logits.f32");
  g->greedy_logits = ReadF32File(dir / "greedy_logits.f32");
  if (std::filesystem::exists(dir / "hidden_states.f32")) {
    g->hidden_states = ReadF32File(dir / "hidden_states.f32");
  }
  return g;
}

// Prompt logits [T, V], teacher-forced in chunks of `chunk`.
inline std::vector<float> PromptLogits(const RuntimeModel& model, std::span<const int32_t> prompt,
                                       int64_t chunk) {
  const Tensor all = AllTeacherForcedLogits(model, prompt, chunk);
  return std::vector<float>(all.f32(), all.f32() + all.rows() * all.cols());
}

inline float MaxAbsDiff(std::span<const float> a, std::span<const float> b) {
  EXPECT_EQ(a.size(), b.size());
  float m = 0.0f;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

struct GoldenDistances {
  float prompt = 0.0f;  // max |engine - HF| over the prompt logits
  float steps = 0.0f;   // the same over the logits of every greedy step
  float hidden = 0.0f;  // the same over the hidden states after every layer (when recorded)
};

// The residual stream after each layer but the last, and the final-normed hidden states, against
// HF's output_hidden_states ([layers + 1, T, hidden]: entry 0 the (scaled) embeddings, entry i
// the output of layer i - 1, the last entry final-normed). Max |difference| over all.
inline float HiddenStatesDistance(const RuntimeModel& model, const Golden& g) {
  const size_t per_layer = g.prompt.size() * static_cast<size_t>(model.config().hidden_size);
  const size_t layers = static_cast<size_t>(model.config().num_layers);
  EXPECT_EQ(g.hidden_states.size(), (layers + 1) * per_layer);
  if (g.hidden_states.size() != (layers + 1) * per_layer) return INFINITY;
  float worst = 0.0f;
  const auto compare = [&](size_t entry, const float* ours) {
    const std::span<const float> hf(g.hidden_states.data() + entry * per_layer, per_layer);
    worst = std::max(worst, MaxAbsDiff(std::span<const float>(ours, per_layer), hf));
  };
  ModelCache cache = model.MakeCache();
  const Tensor final_normed =
      model.ForwardHidden(g.prompt, cache, [&](int layer, const MatView& residual) {
        if (static_cast<size_t>(layer) + 1 < layers) {
          compare(static_cast<size_t>(layer) + 1, residual.RowAs<float>(0));
        }
      });
  compare(layers, final_normed.f32());
  return worst;
}

// The engine (f32 compute, chunk `chunk`) against the case: prompt logits and step logits within
// `tolerance` (max |difference|), and the greedy continuation token for token.
inline GoldenDistances ExpectModelMatchesGolden(const RuntimeModel& model, const Golden& g,
                                                const std::string& label, int64_t chunk = 512,
                                                float tolerance = 1e-4f) {
  const std::vector<float> logits = PromptLogits(model, g.prompt, chunk);
  GoldenDistances d;
  d.prompt = MaxAbsDiff(logits, g.logits);
  EXPECT_LE(d.prompt, tolerance) << label << ": prompt logits";

  std::vector<float> steps;
  GreedyOptions options;
  options.max_new_tokens = static_cast<int>(g.greedy.size());
  options.chunk = chunk;
  options.on_step = [&](int, std::span<const float> row) {
    steps.insert(steps.end(), row.begin(), row.end());
  };
  const std::vector<int32_t> greedy = GreedyGenerate(model, g.prompt, options);
  EXPECT_EQ(greedy, g.greedy) << label << ": greedy continuation";
  d.steps = MaxAbsDiff(steps, g.greedy_logits);
  EXPECT_LE(d.steps, tolerance) << label << ": greedy step logits";
  if (!g.hidden_states.empty()) {
    d.hidden = HiddenStatesDistance(model, g);
    EXPECT_LE(d.hidden, tolerance) << label << ": hidden states after each layer";
  }
  return d;
}

// The same for the case's own model (f32 compute).
inline GoldenDistances ExpectMatchesGolden(const Golden& g, const std::string& label,
                                           int64_t chunk = 512, float tolerance = 1e-4f) {
  const RuntimeModel model(g.config, g.weights, RuntimeOptions{});
  return ExpectModelMatchesGolden(model, g, label, chunk, tolerance);
}

}  // namespace proctor::testing
