// `proctor kv-curve MODEL --corpus DIR | --prompts FILE [--schemes LIST] [--n-seqs 8]
// [--decode-steps 32]`: every KV cache scheme of a list against the f32 cache on the decode
// path, one model load, one table (eval/runners/kv_curve.h).
#include <fmt/format.h>

#include "cli/verbs.h"
#include "eval/runners/kv_curve.h"
#include "eval/runners/results_json.h"
#include "util/error.h"

namespace proctor::cli {

void RegisterKvCurveVerb(CLI::App& app) {
  struct Args {
    std::string model;
    std::string corpus;
    std::string prompts;
    int64_t seq = 256;
    std::vector<std::string> schemes;
    int64_t n = 8;
    int64_t decode_steps = 32;
    int64_t chunk = 512;
    std::string compute = "f32";
    std::string json;
  };
  auto args = std::make_shared<Args>();
  auto* verb = app.add_subcommand(
      "kv-curve",
      "What each KV cache scheme costs: KL against the f32 cache on the decode path, storage "
      "and decode speed, one table.\n"
      "Example: proctor kv-curve MODEL --corpus corpus/ --schemes bf16,affine:8,affine:4 "
      "--decode-steps 32 --json curve.json");
  verb->add_option("model,--model", args->model, "Model: directory, .gguf file or cached HF id")
      ->required();
  auto* corpus =
      verb->add_option("--corpus", args->corpus,
                       "Corpus directory (`proctor corpus`): its sequences are the prompts");
  auto* prompts = verb->add_option(
      "--prompts", args->prompts,
      "Instead of --corpus: a .jsonl file ({\"text\"} or {\"messages\"} rows, tokenized as "
      "`proctor corpus` does) or a text file; each row is a prompt of its own length, its last S "
      "tokens decoded; rows shorter than S + 2 tokens are skipped and counted");
  verb->add_option("--seq", args->seq,
                   "With --prompts: a longer prompt keeps its first N tokens (default 256)")
      ->check(CLI::PositiveNumber)
      ->needs(prompts);
  corpus->excludes(prompts);
  verb->add_option("--schemes", args->schemes,
                   "Comma-separated --kv schemes (default: f32, bf16, f16, ggml:q8_0, ggml:q4_0 "
                   "and affine 8, 6, 4, 3, 2 bits at group 64, or 32 when 64 does not divide "
                   "head_dim; turbo:k8v8, k8v4, k8v3, k8v2, k4v3, k4v2 when head_dim is a power "
                   "of two of at least 32)")
      ->delimiter(',');
  verb->add_option("--n-seqs", args->n, "Sequences or prompts (default 8; 0: all)")
      ->check(CLI::NonNegativeNumber);
  verb->add_option("--decode-steps", args->decode_steps,
                   "Decode steps scored at the end of each sequence (default 32)")
      ->check(CLI::PositiveNumber);
  verb->add_option("--chunk", args->chunk, "Prefill chunk size (default 512)")
      ->check(CLI::PositiveNumber);
  verb->add_option("--compute", args->compute, "f32 (default), bf16 or q8, for both arms")
      ->check(CLI::IsMember({"f32", "bf16", "q8"}));
  verb->add_option("--json", args->json, "Also write the results JSON to this file");
  auto old = std::make_shared<OldSpellings>();
  old->Add(*verb, "--n", "--n-seqs", args->n);
  verb->callback([args, verb, old] {
    old->Check(*verb);
    if (args->corpus.empty() && args->prompts.empty()) {
      Fail("cli", "kv-curve needs the prompts: --corpus DIR or --prompts FILE");
    }
    const KvCurveOptions options{.model = args->model,
                                 .corpus_dir = args->corpus,
                                 .prompts_file = args->prompts,
                                 .prompt_options = {.max_tokens = args->seq},
                                 .schemes = args->schemes,
                                 .max_seqs = args->n,
                                 .decode_steps = args->decode_steps,
                                 .chunk_size = args->chunk,
                                 .compute = ParseComputeMode(args->compute),
                                 .quiet = Globals().quiet,
                                 .describe_inputs = !args->json.empty()};
    const KvCurveResult result = RunKvCurve(options);
    fmt::print("{}", FormatKvCurveTable(result));
    if (!Globals().quiet) fmt::print(stderr, "{}", FormatTimings(result.timings));
    if (args->json.empty()) return;
    WriteResultsJson(args->json, KvCurveResultsEnvelope(result, options));
    if (!Globals().quiet) fmt::print(stderr, "wrote {}\n", args->json);
  });
}

}  // namespace proctor::cli
