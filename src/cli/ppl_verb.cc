// `proctor ppl MODEL --data FILE [--sequence-length 512] [--num-samples 256] [--seed 123]
// [--batch-size 8] [--json FILE] [--shard I/N]`: perplexity the mlx_lm way through the serving
// forward, or one shard's share of it (a partial result for `proctor merge`).
#include <fmt/format.h>

#include "cli/engine_flags.h"
#include "cli/verbs.h"
#include "eval/runners/ppl.h"
#include "eval/runners/results_json.h"

namespace proctor::cli {

void RegisterPplVerb(CLI::App& app) {
  struct Args {
    std::string model;
    std::vector<std::string> data;
    int64_t sequence_length = 0;
    int64_t num_samples = 256;
    uint32_t seed = 123;
    int64_t batch_size = 8;
    std::string tokenizer;
    std::string json;
    std::string shard;
    EngineFlags engine;
  };
  auto args = std::make_shared<Args>();
  auto* verb = app.add_subcommand(
      "ppl", "Perplexity of a model over text the mlx_lm way (exp of the mean next-token NLL)");
  verb->add_option("model,--model", args->model, "Model: directory, .gguf file or cached HF id")
      ->required();
  verb->add_option("--data", args->data,
                   ".jsonl ({\"text\"} or chat rows) or text file (.txt, .raw: one document) "
                   "(repeatable), or a corpus directory from `proctor corpus`")
      ->required();
  verb->add_option("--ctx-len", args->sequence_length,
                   "Tokens per row (mlx_lm's --sequence-length; default 512; for a corpus: its "
                   "ctx_len)")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 30));
  verb->add_option("--n-seqs", args->num_samples,
                   "Rows to score (mlx_lm's --num-samples; default 256; -1: all)");
  verb->add_option("--seed", args->seed, "Row shuffle seed (mulberry32; default 123)");
  verb->add_option("--batch-size", args->batch_size,
                   "mlx_lm's rows per step (default 8), recorded in the results; rows run one "
                   "after another on all threads, so results do not depend on it")
      ->check(CLI::PositiveNumber);
  verb->add_option("--tokenizer", args->tokenizer,
                   "Tokenizer to use instead of the model's (folder, tokenizer.json or .gguf)");
  verb->add_option("--json", args->json, "Also write every statistic as JSON to this file");
  verb->add_option("--shard", args->shard,
                   "I/N: score only shard I of N (0-based) of the rows, a contiguous share "
                   "balanced to within one row, into --json FILE as a partial result for `proctor "
                   "merge`; rerun, a finished shard is read back, not scored again")
      ->needs("--json");
  verb->footer(
      "Examples:\n"
      "  proctor ppl model.gguf --data wiki.txt --ctx-len 512 --n-seqs 64 --json ppl.json\n"
      "  for i in 0 1 2 3; do proctor ppl model.gguf --data wiki.txt --shard $i/4 \\\n"
      "      --json part$i.json; done; proctor merge ppl.json part*.json\n"
      "The merged ppl.json holds the same statistics, bit for bit, as the one-process run.");
  args->engine.Add(*verb);
  auto old = std::make_shared<OldSpellings>();
  old->Add(*verb, "--sequence-length", "--ctx-len", args->sequence_length);
  old->Add(*verb, "--num-samples", "--n-seqs", args->num_samples);
  verb->callback([args, verb, old] {
    old->Check(*verb);
    PplOptions options{.model = args->model,
                       .sequence_length = args->sequence_length,
                       .num_samples = args->num_samples,
                       .seed = args->seed,
                       .batch_size = args->batch_size,
                       .chunk_size = args->engine.chunk,
                       .runtime = args->engine.Options(args->model),
                       .tokenizer = args->tokenizer,
                       .quiet = Globals().quiet,
                       .describe_inputs = !args->json.empty()};
    if (!args->shard.empty()) {
      options.shard = ParseShard(args->shard, "--shard");
      options.finished_partial = args->json;
    }
    for (const auto& d : args->data) options.data.emplace_back(d);
    const PplResult result = EvaluatePerplexity(options);
    if (result.reused) {
      fmt::print("Shard {} (rows [{}, {}) of {}) already done: '{}' holds it; not scored again\n",
                 result.shard->Name(), result.shard_rows.first, result.shard_rows.end,
                 result.rows_total, args->json);
      return;
    }
    if (result.shard) {
      fmt::print("Shard {}: rows [{}, {}) of {}\n", result.shard->Name(), result.shard_rows.first,
                 result.shard_rows.end, result.rows_total);
    }
    if (result.stats.rows > 0) fmt::print("{}", FormatPplSummary(result));
    if (args->json.empty()) return;
    WriteResultsJson(args->json, PplResultsEnvelope(result, options));
    if (!Globals().quiet) fmt::print(stderr, "wrote {}\n", args->json);
  });
}

}  // namespace proctor::cli
