// `proctor bench`: end-to-end engine speed on one model: prefill tokens/s (a prompt of
// prompt_tokens in chunks of chunk_size), decode tokens/s (greedy, one token per forward, LM head
// included), load time, weight and KV-cache bytes, peak RSS and threads, as JSON. Synthetic
// models ("synthetic:<name>:<weights>", eval/runners/eval_model.h) have the exact shapes of real
// ones with random weights, so no download is needed. A cache filled with noise first times decode
// deep into a long context without the prefill that would take minutes to fill it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "model/runtime_model.h"

namespace proctor {

struct EngineBenchOptions {
  std::string model{};  // a model spec, synthetic ones included
  int prompt_tokens = 512;
  int decode_tokens = 32;
  int64_t chunk_size = 512;
  // > 0: the context a synthetic model is timed at, instead of its real model's (its weights are
  // random: what is measured is speed at that length). Refused for a real model.
  int64_t synthetic_context = 0;
  // > 0: positions of random keys and values put in every attention layer's cache before the
  // prompt (not the model's own: decode is timed at that depth without a prefill of it).
  int64_t noise_positions = 0;
  RuntimeOptions runtime{};
};

nlohmann::json BenchmarkEngine(const EngineBenchOptions& options);

}  // namespace proctor
