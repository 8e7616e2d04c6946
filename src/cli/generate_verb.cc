// `proctor generate MODEL --prompt TEXT [--chat] [--ids]` or `--prompt-ids 1,2,3`: greedy decoding
// with the engine. From text it prints the generated text (the ids with --ids); from ids it prints
// the generated ids (comma-separated). Stops at the model's EOS ids (and any --stop-ids), which
// are not printed.
#include <fmt/format.h>

#include <chrono>

#include "cli/engine_flags.h"
#include "cli/verbs.h"
#include "eval/clients/engine_client.h"
#include "eval/runners/eval_model.h"
#include "model/greedy.h"
#include "model/load.h"
#include "text/token_ids.h"
#include "util/error.h"

namespace proctor::cli {
namespace {

struct GenerateArgs {
  std::string model;
  std::string prompt;
  std::string prompt_ids;
  bool chat = false;
  std::string thinking = "off";
  std::string template_file;
  std::string tokenizer;
  bool ids = false;
  int max_tokens = 64;
  bool ignore_eos = false;
  std::string stop_ids;
  EngineFlags engine;
};

// From text: the model's tokenizer (and chat template with --chat) through the task evals' engine
// client, so the prompt is exactly what `proctor eval` would send.
void GenerateFromText(const GenerateArgs& args) {
  if (args.ignore_eos || !args.stop_ids.empty()) {
    Fail("cli",
         "--ignore-eos and --stop-ids apply to --prompt-ids; with --prompt generation stops "
         "at the model's end-of-turn ids");
  }
  const auto start = std::chrono::steady_clock::now();
  EngineClient client(EvalModel::Open(args.model, args.tokenizer), args.engine.Options(args.model),
                      args.engine.chunk, args.template_file);
  CompletionRequest request{.chat = args.chat, .max_tokens = args.max_tokens};
  if (args.chat) {
    if (!client.CanChat()) {
      Fail("cli", "{} has no chat template: drop --chat, or give --template FILE", args.model);
    }
    request.messages =
        nlohmann::ordered_json::array({{{"role", "user"}, {"content", args.prompt}}});
    request.enable_thinking = args.thinking == "on";
  } else {
    request.prompt = args.prompt;
  }
  const EngineClient::Generation out = client.Generate(request);
  if (args.ids) {
    fmt::print("{}\n", fmt::join(out.ids, ","));
  } else {
    fmt::print("{}\n", out.text);
  }
  if (out.reached_context) {
    fmt::print(stderr, "note: generation stopped at the model's context ({} positions)\n",
               out.prompt_ids.size() + out.ids.size());
  }
  if (!Globals().quiet) {
    fmt::print(stderr, "generated {} tokens after a {}-token prompt in {:.3f} s\n", out.ids.size(),
               out.prompt_ids.size(),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
}

void GenerateFromIds(const GenerateArgs& args) {
  const RuntimeOptions options = args.engine.Options(args.model);
  const LoadedModel loaded = LoadModel(args.model);
  std::vector<int32_t> prompt;
  if (!args.prompt_ids.empty()) {
    prompt = text::ParseTokenIds(args.prompt_ids, "--prompt-ids");
  } else if (loaded.config.bos_token_id >= 0) {
    prompt = {loaded.config.bos_token_id};
  } else {
    Fail("cli", "{} has no BOS token: give --prompt TEXT or --prompt-ids", args.model);
  }
  const RuntimeModel model(loaded.config, loaded.weights, options);
  GreedyOptions greedy;
  greedy.max_new_tokens = args.max_tokens;
  greedy.chunk = args.engine.chunk;
  if (!args.ignore_eos) {
    greedy.stop_ids.assign(loaded.config.eos_token_ids.begin(), loaded.config.eos_token_ids.end());
  }
  if (!args.stop_ids.empty()) {
    for (const int32_t id : text::ParseTokenIds(args.stop_ids, "--stop-ids"))
      greedy.stop_ids.push_back(id);
  }
  bool reached_context = false;
  greedy.reached_context = &reached_context;
  const auto start = std::chrono::steady_clock::now();
  const std::vector<int32_t> out = GreedyGenerate(model, prompt, greedy);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("{}\n", fmt::join(out, ","));
  if (reached_context) {
    fmt::print(stderr, "note: generation stopped at the model's context ({} positions)\n",
               prompt.size() + out.size());
  }
  if (!Globals().quiet) {
    fmt::print(stderr, "generated {} tokens after a {}-token prompt in {:.3f} s ({})\n", out.size(),
               prompt.size(), seconds, loaded.config.Summary());
  }
}

}  // namespace

void RegisterGenerateVerb(CLI::App& app) {
  auto args = std::make_shared<GenerateArgs>();
  auto* verb = app.add_subcommand(
      "generate", "Greedy decoding (argmax, lowest index on ties) from text or token ids");
  verb->footer(
      "Examples:\n"
      "  proctor generate Qwen/Qwen3-0.6B --prompt \"Why is the sky blue?\" --chat -n 128\n"
      "  proctor generate stories260K.gguf --prompt \"Once upon a time\" --ids\n"
      "  proctor generate stories260K.gguf --prompt-ids 1,403,4013 --stop-ids 1");
  verb->add_option("model,--model", args->model, "Model directory, .gguf file or cached HF id")
      ->required();
  auto* prompt = verb->add_option(
      "--prompt", args->prompt,
      "Prompt text, encoded with the model's tokenizer (BOS as the tokenizer adds it); prints "
      "the generated text");
  auto* prompt_ids = verb->add_option("--prompt-ids", args->prompt_ids,
                                      "Comma-separated prompt token ids (default: the model's BOS "
                                      "token); prints the generated ids");
  prompt->excludes(prompt_ids);
  verb->add_flag("--chat", args->chat,
                 "With --prompt: send it as one user turn through the model's chat template "
                 "(with the generation prompt), as `proctor eval` does")
      ->needs(prompt);
  verb->add_option("--thinking", args->thinking,
                   "With --chat: enable_thinking for templates that have it (default off)")
      ->check(CLI::IsMember({"on", "off"}));
  verb->add_option("--template", args->template_file,
                   "With --chat: a Jinja chat template file instead of the model's");
  verb->add_option("--tokenizer", args->tokenizer,
                   "With --prompt: a tokenizer instead of the model's (folder, tokenizer.json or "
                   ".gguf), for a model written without one; its chat template too when the "
                   "model has none")
      ->needs(prompt);
  verb->add_flag("--ids", args->ids, "With --prompt: print the generated token ids, not the text")
      ->needs(prompt);
  verb->add_option("-n,--max-tokens", args->max_tokens, "Most new tokens to generate (default 64)")
      ->check(CLI::NonNegativeNumber);
  verb->add_flag("--ignore-eos", args->ignore_eos, "Do not stop at the model's EOS tokens");
  verb->add_option("--stop-ids", args->stop_ids,
                   "More comma-separated token ids that end generation (e.g. 1 for llama2.c "
                   "models, which end a story with BOS)");
  args->engine.Add(*verb);
  verb->callback([args] {
    if (!args->prompt.empty()) {
      GenerateFromText(*args);
    } else {
      GenerateFromIds(*args);
    }
  });
}

}  // namespace proctor::cli
