// `proctor bench MODEL` / `proctor bench --synthetic NAME [--dtype D]`: end-to-end engine speed
// as JSON (eval/runners/engine_speed.h).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/engine_flags.h"
#include "cli/verbs.h"
#include "eval/runners/engine_speed.h"
#include "model/synthetic_model.h"
#include "util/error.h"

namespace proctor::cli {

void RegisterBenchVerb(CLI::App& app) {
  struct Args {
    std::string model;
    std::string synthetic;
    std::string dtype = "bf16";
    int64_t context = 0;
    int64_t noise_context = 0;
    int prompt_tokens = 512;
    int decode_tokens = 32;
    EngineFlags engine;
  };
  auto args = std::make_shared<Args>();
  auto* verb = app.add_subcommand("bench", "Measure prefill and decode speed; prints JSON");
  verb->footer(
      "Examples:\n"
      "  proctor bench model.gguf --threads 8\n"
      "  proctor bench --synthetic tinyllama-1.1b --dtype q4_0 --compute q8\n"
      "  proctor bench --synthetic tinyllama-1.1b --dtype q8_0 --context 16500 \\\n"
      "      --noise-context 16384 --prompt-tokens 16 --kv affine:4\n"
      "The last one times decode 16384 positions deep into a 4-bit KV cache in seconds.");
  verb->add_option("model,--model", args->model, "Model directory, .gguf file or cached HF id");
  verb->add_option("--synthetic", args->synthetic,
                   fmt::format("Random weights with the shapes of a real model or a preset ({})",
                               fmt::join(SyntheticModelNames(), ", ")));
  verb->add_option(
      "--dtype", args->dtype,
      "Weight type of a --synthetic model: f32, f16, bf16 (default), a GGUF "
      "block type (q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_nl) or "
      "MLX quantization (affine<bits>-g<group> such as affine4-g64, mxfp4, mxfp8, "
      "nvfp4)");
  verb->add_option("--prompt-tokens", args->prompt_tokens, "Prefill length (default 512)")
      ->check(CLI::PositiveNumber);
  verb->add_option("--decode-tokens", args->decode_tokens, "Tokens to decode (default 32)")
      ->check(CLI::NonNegativeNumber);
  verb->add_option("--context", args->context,
                   "With --synthetic: the context to time the model at, in positions (default "
                   "the real model's, e.g. 2048 for tinyllama-1.1b); the weights are random, so "
                   "only the speed at that length means anything. A real model keeps its own")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  verb->add_option("--noise-context", args->noise_context,
                   "Positions of random keys and values put in the KV cache before the prompt "
                   "(default 0): decode is then timed that deep into a context without the "
                   "prefill that would fill it (minutes at 16384 positions); the cache is not the "
                   "model's, so only the speed means anything. Counts toward the context")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  args->engine.Add(*verb);
  verb->callback([args] {
    if (args->model.empty() == args->synthetic.empty()) {
      Fail("cli", "bench needs either MODEL or --synthetic NAME (exactly one)");
    }
    const std::string spec = args->synthetic.empty()
                                 ? args->model
                                 : fmt::format("synthetic:{}:{}", args->synthetic, args->dtype);
    const nlohmann::json report = BenchmarkEngine({.model = spec,
                                                   .prompt_tokens = args->prompt_tokens,
                                                   .decode_tokens = args->decode_tokens,
                                                   .chunk_size = args->engine.chunk,
                                                   .synthetic_context = args->context,
                                                   .noise_positions = args->noise_context,
                                                   .runtime = args->engine.Options(args->model)});
    fmt::print("{}\n", report.dump(2));
  });
}

}  // namespace proctor::cli
