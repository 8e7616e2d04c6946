// `proctor kl --reference-logits DIR --candidate MODEL`: scores a candidate model against a
// saved teacher (reference-logits dump): per-position KL, top-1, captured mass, tail-aware KL.
#include <fmt/format.h>

#include "cli/engine_flags.h"
#include "cli/verbs.h"
#include "eval/kl_eval.h"
#include "util/file.h"

namespace proctor::cli {

void RegisterKlVerb(CLI::App& app) {
  struct Args {
    std::string reference;
    std::string candidate;
    int64_t n = 0;
    std::string json;
    EngineFlags engine;
  };
  auto args = std::make_shared<Args>();
  auto* verb = app.add_subcommand(
      "kl", "Score a candidate model against a reference-logits dump (KL, top-1, mass)");
  verb->add_option("--reference-logits", args->reference, "Reference-logits dump directory")
      ->required();
  verb->add_option("--candidate", args->candidate,
                   "Candidate model: directory, .gguf file or cached HF id")
      ->required();
  verb->add_option("--n", args->n, "Score only the first N sequences (default: all)")
      ->check(CLI::NonNegativeNumber);
  verb->add_option("--json", args->json, "Also write every statistic as JSON to this file");
  args->engine.Add(*verb);
  verb->callback([args] {
    const KlEvalResult result = EvaluateKlVsReferenceLogits({
        .reference_dir = args->reference,
        .candidate = args->candidate,
        .max_seqs = args->n,
        .chunk_size = args->engine.chunk,
        .runtime = args->engine.Options(),
        .quiet = Globals().quiet,
    });
    for (const auto& w : result.warnings) fmt::print(stderr, "warning: {}\n", w);
    fmt::print("{}", FormatKlTable({result}));
    if (!args->json.empty()) {
      WriteFileAtomic(args->json, KlEvalResultToJson(result).dump(2) + "\n");
      if (!Globals().quiet) fmt::print(stderr, "wrote {}\n", args->json);
    }
  });
}

}  // namespace proctor::cli
