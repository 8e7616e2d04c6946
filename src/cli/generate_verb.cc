// `proctor generate MODEL --prompt-ids 1,2,3 --max-tokens N`: greedy decoding with the engine.
// Prints the generated token ids (comma-separated) on stdout; stops at the model's EOS ids (and
// any --stop-ids), which are not printed.
#include <fmt/format.h>

#include <chrono>

#include "cli/engine_flags.h"
#include "cli/verbs.h"
#include "model/greedy.h"
#include "model/load.h"
#include "text/token_ids.h"
#include "util/error.h"

namespace proctor::cli {

void RegisterGenerateVerb(CLI::App& app) {
  struct Args {
    std::string model;
    std::string prompt_ids;
    int max_tokens = 64;
    bool ignore_eos = false;
    std::string stop_ids;
    EngineFlags engine;
  };
  auto args = std::make_shared<Args>();
  auto* verb = app.add_subcommand("generate",
                                  "Greedy decoding (argmax, lowest index on ties) from token ids");
  verb->add_option("model", args->model, "Model directory, .gguf file or cached HF id")->required();
  verb->add_option("--prompt-ids", args->prompt_ids,
                   "Comma-separated prompt token ids (default: the model's BOS token)");
  verb->add_option("-n,--max-tokens", args->max_tokens, "Most new tokens to generate")
      ->check(CLI::NonNegativeNumber);
  verb->add_flag("--ignore-eos", args->ignore_eos, "Do not stop at the model's EOS tokens");
  verb->add_option("--stop-ids", args->stop_ids,
                   "More comma-separated token ids that end generation (e.g. 1 for llama2.c "
                   "models, which end a story with BOS)");
  args->engine.Add(*verb);
  verb->callback([args] {
    const RuntimeOptions options = args->engine.Options();
    const LoadedModel loaded = LoadModel(args->model);
    std::vector<int32_t> prompt;
    if (!args->prompt_ids.empty()) {
      prompt = text::ParseTokenIds(args->prompt_ids, "--prompt-ids");
    } else if (loaded.config.bos_token_id >= 0) {
      prompt = {loaded.config.bos_token_id};
    } else {
      Fail("cli", "{} has no BOS token: give --prompt-ids", args->model);
    }
    const RuntimeModel model(loaded.config, loaded.weights, options);
    GreedyOptions greedy;
    greedy.max_new_tokens = args->max_tokens;
    greedy.chunk = args->engine.chunk;
    if (!args->ignore_eos) {
      greedy.stop_ids.assign(loaded.config.eos_token_ids.begin(),
                             loaded.config.eos_token_ids.end());
    }
    if (!args->stop_ids.empty()) {
      for (const int32_t id : text::ParseTokenIds(args->stop_ids, "--stop-ids"))
        greedy.stop_ids.push_back(id);
    }
    const auto start = std::chrono::steady_clock::now();
    const std::vector<int32_t> out = GreedyGenerate(model, prompt, greedy);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    fmt::print("{}\n", fmt::join(out, ","));
    if (!Globals().quiet) {
      fmt::print(stderr, "generated {} tokens after a {}-token prompt in {:.3f} s ({})\n",
                 out.size(), prompt.size(), seconds, loaded.config.Summary());
    }
  });
}

}  // namespace proctor::cli
