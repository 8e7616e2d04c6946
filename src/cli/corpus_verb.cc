// `proctor corpus --tokenizer MODEL --out DIR --ctx-len L --n-seqs N [--seed 123] INPUT...`:
// text and chat rows -> a tokenized corpus (tokens.bin + manifest.json, FORMATS.md section 4).
#include <fmt/format.h>

#include "cli/verbs.h"
#include "eval/runners/corpus_builder.h"
#include "eval/runners/results_json.h"

namespace proctor::cli {

void RegisterCorpusVerb(CLI::App& app) {
  struct Args {
    std::string tokenizer;
    std::string out;
    int64_t ctx_len = 0;
    int64_t n_seqs = 0;
    uint32_t seed = 123;
    std::string template_file;
    std::string json;
    std::vector<std::string> inputs;
  };
  auto args = std::make_shared<Args>();
  auto* verb = app.add_subcommand(
      "corpus", "Tokenize text/chat rows into a corpus for dumps (n_seqs x ctx_len tokens)");
  verb->add_option("--tokenizer", args->tokenizer,
                   "Model folder, tokenizer.json, .gguf or cached HF id whose tokenizer (and chat "
                   "template, for chat rows) is used")
      ->required();
  verb->add_option("--out", args->out, "Output corpus directory")->required();
  verb->add_option("--ctx-len", args->ctx_len, "Tokens per sequence")
      ->required()
      ->check(CLI::PositiveNumber);
  verb->add_option("--n-seqs", args->n_seqs, "Number of sequences")
      ->required()
      ->check(CLI::PositiveNumber);
  verb->add_option("--seed", args->seed, "Row shuffle seed (mulberry32; default 123)");
  verb->add_option("--template", args->template_file,
                   "Jinja chat template file for chat rows (default: the model's)");
  verb->add_option("--json", args->json, "Also write a JSON summary to this file");
  verb->add_option("inputs", args->inputs,
                   ".jsonl files ({\"text\"}, {\"messages\"} or {\"prompt\",\"chosen\"} rows) "
                   "and text files (.txt, .raw, ...: one document each)")
      ->required();
  verb->callback([args] {
    CorpusBuildOptions options{.tokenizer = args->tokenizer,
                               .out_dir = args->out,
                               .ctx_len = args->ctx_len,
                               .n_seqs = args->n_seqs,
                               .seed = args->seed,
                               .chat_template_file = args->template_file,
                               .quiet = Globals().quiet};
    for (const auto& input : args->inputs) options.inputs.emplace_back(input);
    const CorpusBuildResult result = BuildCorpus(options);
    fmt::print(
        "wrote {}: {} sequences x {} tokens from {} of {} rows ({} tokens tokenized), "
        "tokens_sha256 {} in {:.2f} s\n",
        args->out, result.n_seqs, result.ctx_len, result.rows_used, result.rows_total,
        result.tokens_tokenized, result.tokens_sha256, result.elapsed_seconds);
    if (args->json.empty()) return;
    WriteResultsJson(args->json, CorpusResultsEnvelope(result, options));
    if (!Globals().quiet) fmt::print(stderr, "wrote {}\n", args->json);
  });
}

}  // namespace proctor::cli
