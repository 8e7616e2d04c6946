// `proctor logits MODEL (--prompt-ids ... | --corpus DIR [--n N]) --out FILE`: teacher-forced
// logits as raw little-endian f32 (eval/runners/raw_logits.h).
#include <fmt/format.h>

#include "cli/engine_flags.h"
#include "cli/verbs.h"
#include "eval/runners/raw_logits.h"
#include "text/token_ids.h"

namespace proctor::cli {

void RegisterLogitsVerb(CLI::App& app) {
  struct Args {
    std::string model;
    std::string prompt_ids;
    std::string corpus;
    int64_t n = 0;
    std::string out;
    int64_t decode_from = -1;
    EngineFlags engine;
  };
  auto args = std::make_shared<Args>();
  auto* verb = app.add_subcommand(
      "logits",
      "Write teacher-forced logits as raw little-endian f32 ([tokens, vocab], or "
      "[sequences, ctx_len, vocab] for --corpus)");
  verb->add_option("model,--model", args->model, "Model directory, .gguf file or cached HF id")
      ->required();
  auto* prompt =
      verb->add_option("--prompt-ids", args->prompt_ids, "Comma-separated prompt token ids");
  auto* corpus = verb->add_option("--corpus", args->corpus,
                                  "Corpus directory: the logits of its sequences, one cache each");
  prompt->excludes(corpus);
  verb->add_option("--n-seqs", args->n, "With --corpus: only the first N sequences (default: all)")
      ->check(CLI::NonNegativeNumber)
      ->needs(corpus);
  verb->add_option("-o,--out", args->out, "Output file")->required();
  args->engine.Add(*verb);
  verb->add_option("--decode-from", args->decode_from,
                   "Positions from N on run one token per forward step, after chunks that end at "
                   "N (the schedule of `kl --decode-steps`); default: chunks throughout")
      ->check(CLI::NonNegativeNumber);
  auto old = std::make_shared<OldSpellings>();
  old->Add(*verb, "--n", "--n-seqs", args->n);
  verb->callback([args, verb, old] {
    old->Check(*verb);
    const RawLogitsResult r = WriteRawLogits(
        {.model = args->model,
         .prompt = args->prompt_ids.empty() ? std::vector<int32_t>()
                                            : text::ParseTokenIds(args->prompt_ids, "--prompt-ids"),
         .corpus_dir = args->corpus,
         .max_seqs = args->n,
         .out = args->out,
         .chunk_size = args->engine.chunk,
         .decode_from = args->decode_from,
         .runtime = args->engine.Options(args->model),
         .quiet = Globals().quiet});
    if (!Globals().quiet) {
      fmt::print(stderr, "wrote {} x {} x {} f32 logits to {}\n", r.sequences, r.positions, r.vocab,
                 args->out);
    }
  });
}

}  // namespace proctor::cli
