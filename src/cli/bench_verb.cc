// `proctor bench MODEL` / `proctor bench --synthetic NAME`: end-to-end engine speed as JSON:
// prefill tokens/s (prompt of --prompt-tokens in chunks of --chunk), decode tokens/s (greedy, one
// token per forward, LM head included), load time, peak RSS and threads. Synthetic models have
// the exact shapes of real ones with random weights (--dtype), so no download is needed.
#include <fmt/format.h>
#include <sys/resource.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "cli/engine_flags.h"
#include "cli/verbs.h"
#include "model/greedy.h"
#include "model/load.h"
#include "model/synthetic_mlx.h"
#include "model/synthetic_model.h"
#include "ops/matmul.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace proctor::cli {
namespace {

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

int64_t PeakRssBytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;
}

// Runs the measurement on a constructed model and returns the JSON fields it measured.
nlohmann::json Measure(const RuntimeModel& model, int prompt_tokens, int decode_tokens,
                       int64_t chunk) {
  std::vector<int32_t> prompt(static_cast<size_t>(prompt_tokens));
  uint64_t state = 12345;
  for (int32_t& id : prompt) {  // deterministic pseudo-random ids
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    id = static_cast<int32_t>((state >> 33) % static_cast<uint64_t>(model.vocab_size()));
  }
  ModelCache cache = model.MakeCache(prompt_tokens + decode_tokens);
  auto start = std::chrono::steady_clock::now();
  Tensor hidden = PrefillLastHidden(model, prompt, chunk, cache);
  Tensor logits = model.LogitsFromHidden(hidden.View());
  const double prefill_seconds = Seconds(start);

  start = std::chrono::steady_clock::now();
  for (int i = 0; i < decode_tokens; ++i) {
    const int32_t next = ArgmaxLowestIndex(
        std::span<const float>(logits.RowF32(0), static_cast<size_t>(model.vocab_size())));
    hidden = model.ForwardHidden(std::span<const int32_t>(&next, 1), cache);
    model.LogitsFromHidden(hidden.View(), logits.MutF32());
  }
  const double decode_seconds = Seconds(start);
  nlohmann::json out;
  out["prefill_tokens"] = prompt_tokens;
  out["prefill_chunk"] = chunk;
  out["prefill_seconds"] = prefill_seconds;
  out["prefill_tokens_per_second"] = prompt_tokens / prefill_seconds;
  out["decode_tokens"] = decode_tokens;
  out["decode_seconds"] = decode_seconds;
  out["decode_tokens_per_second"] = decode_tokens > 0 ? decode_tokens / decode_seconds : 0.0;
  out["kv_cache_bytes"] = cache.MemoryBytes();
  return out;
}

}  // namespace

void RegisterBenchVerb(CLI::App& app) {
  struct Args {
    std::string model;
    std::string synthetic;
    std::string dtype = "bf16";
    int prompt_tokens = 512;
    int decode_tokens = 32;
    EngineFlags engine;
  };
  auto args = std::make_shared<Args>();
  auto* verb = app.add_subcommand("bench", "Measure prefill and decode speed; prints JSON");
  verb->add_option("model", args->model, "Model directory, .gguf file or cached HF id");
  verb->add_option("--synthetic", args->synthetic,
                   fmt::format("Random weights with the shapes of a real model ({})",
                               fmt::join(SyntheticModelNames(), ", ")));
  verb->add_option("--dtype", args->dtype,
                   "Weight type of a --synthetic model: f32, f16, bf16 (default), a GGUF "
                   "block type (q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k) or "
                   "MLX quantization (affine<bits>-g<group> such as affine4-g64, mxfp4, mxfp8, "
                   "nvfp4)");
  verb->add_option("--prompt-tokens", args->prompt_tokens, "Prefill length (default 512)")
      ->check(CLI::PositiveNumber);
  verb->add_option("--decode-tokens", args->decode_tokens, "Tokens to decode (default 32)")
      ->check(CLI::NonNegativeNumber);
  args->engine.Add(*verb);
  verb->callback([args] {
    if (args->model.empty() == args->synthetic.empty()) {
      Fail("cli", "bench needs either MODEL or --synthetic NAME (exactly one)");
    }
    const RuntimeOptions options = args->engine.Options();
    nlohmann::json report;
    const auto load_start = std::chrono::steady_clock::now();
    nlohmann::json measured;
    if (!args->synthetic.empty()) {
      const ModelConfig config = SyntheticConfig(args->synthetic);
      const auto dtype = ParseDType(args->dtype);
      const auto mlx = ParseMlxQuantSpec(args->dtype);
      if (!dtype && !mlx) {
        Fail("cli", "--dtype: unknown weight type '{}' (f32, f16, bf16, q8_0 ... q6_k, "
             "affine<bits>-g<group>, mxfp4, mxfp8, nvfp4)", args->dtype);
      }
      const SyntheticModel synthetic =
          dtype ? BuildSyntheticModel(config, *dtype) : BuildSyntheticMlxModel(config, *mlx);
      report["load_seconds"] = Seconds(load_start);
      report["model"] = "synthetic:" + args->synthetic;
      report["weights"] = args->dtype;
      report["summary"] = synthetic.config.Summary();
      report["weight_bytes"] = synthetic.weights.TotalBytes();
      const RuntimeModel model(synthetic.config, synthetic.weights, options);
      measured = Measure(model, args->prompt_tokens, args->decode_tokens, args->engine.chunk);
    } else {
      const LoadedModel loaded = LoadModel(args->model);
      report["load_seconds"] = Seconds(load_start);
      report["model"] = args->model;
      report["weights"] = loaded.config.stored_dtype;
      report["summary"] = loaded.config.Summary();
      report["weight_bytes"] = loaded.weights.TotalBytes();
      const RuntimeModel model(loaded.config, loaded.weights, options);
      measured = Measure(model, args->prompt_tokens, args->decode_tokens, args->engine.chunk);
    }
    report.update(measured);
    report["compute"] = args->engine.compute;
    report["kv"] = args->engine.kv;
    report["threads"] = ThreadPool::Global().num_threads();
    report["bf16_kernel"] = ops::BF16KernelName();
    report["peak_rss_bytes"] = PeakRssBytes();
    fmt::print("{}\n", report.dump(2));
  });
}

}  // namespace proctor::cli
