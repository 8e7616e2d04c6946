// `proctor kl`: scores a candidate model against a teacher: a saved teacher
// (`--reference-logits DIR`, a reference-logits dump) or a resident one (`--reference MODEL
// --corpus DIR`, full-vocabulary KL). Per-position KL, top-1, captured mass, tail-aware KL;
// `--per-position FILE` keeps every position, `--json FILE` every statistic.
#include <fmt/format.h>

#include "cli/engine_flags.h"
#include "cli/llama_kld_cli.h"
#include "cli/verbs.h"
#include "eval/kl_eval.h"
#include "eval/results_json.h"
#include "util/error.h"

namespace proctor::cli {

void RegisterKlVerb(CLI::App& app) {
  struct Args {
    std::string reference_logits;
    std::string reference;
    std::string corpus;
    std::string candidate;
    int64_t n = 0;
    std::string json;
    std::string per_position;
    std::string reference_compute;  // empty: the candidate's --compute
    std::string reference_kv;       // empty: the candidate's --kv
    EngineFlags engine;
  };
  auto args = std::make_shared<Args>();
  auto* verb = app.add_subcommand(
      "kl",
      "Score a candidate model against a teacher: a reference-logits dump (--reference-logits) "
      "or a resident reference model over a corpus (--reference --corpus)");
  auto* saved = verb->add_option("--reference-logits", args->reference_logits,
                                 "Reference-logits dump directory (saved teacher), or a "
                                 "llama.cpp KL-divergence base file (.kld)");
  auto* resident = verb->add_option(
      "--reference", args->reference,
      "Reference model (two-model mode: both resident, full-vocabulary KL over --corpus)");
  auto* corpus = verb->add_option("--corpus", args->corpus,
                                  "Corpus directory (tokens.bin + manifest.json) for --reference");
  saved->excludes(resident)->excludes(corpus);
  resident->needs(corpus);
  corpus->needs(resident);
  verb->add_option("--candidate", args->candidate,
                   "Candidate model: directory, .gguf file or cached HF id")
      ->required();
  verb->add_option("--n", args->n, "Score only the first N sequences (default: all)")
      ->check(CLI::NonNegativeNumber);
  verb->add_option("--json", args->json,
                   "Also write the results JSON (docs/results-json.md) to this file");
  verb->add_option("--per-position", args->per_position,
                   "Write every position's scores to this file (docs/formats.md)");
  verb->add_option("--reference-compute", args->reference_compute,
                   "Two-model mode: the reference's --compute (default: the candidate's); with "
                   "the same model on both sides this is a self A/B of the switch")
      ->check(CLI::IsMember({"f32", "bf16"}))
      ->needs(resident);
  verb->add_option("--reference-kv", args->reference_kv,
                   "Two-model mode: the reference's --kv (default: the candidate's)")
      ->check(CLI::IsMember({"f32", "bf16"}))
      ->needs(resident);
  args->engine.Add(*verb);
  verb->callback([args] {
    if (args->reference_logits.empty() && args->reference.empty()) {
      Fail("cli", "kl needs a teacher: --reference-logits DIR, or --reference MODEL --corpus DIR");
    }
    if (IsLlamaKldReference(args->reference_logits)) {
      return RunKlOnLlamaKld({args->reference_logits, args->candidate, args->n, args->json,
                              args->per_position, args->engine});
    }
    const bool two_model = !args->reference.empty();
    KlEvalResult result;
    EngineFlags reference_engine = args->engine;
    if (!args->reference_compute.empty()) reference_engine.compute = args->reference_compute;
    if (!args->reference_kv.empty()) reference_engine.kv = args->reference_kv;
    if (two_model) {
      result = EvaluateKlTwoModels({.reference = args->reference,
                                    .candidate = args->candidate,
                                    .corpus_dir = args->corpus,
                                    .max_seqs = args->n,
                                    .chunk_size = args->engine.chunk,
                                    .runtime = args->engine.Options(),
                                    .reference_runtime = reference_engine.Options(),
                                    .quiet = Globals().quiet,
                                    .per_position = args->per_position});
    } else {
      result = EvaluateKlVsReferenceLogits({.reference_dir = args->reference_logits,
                                            .candidate = args->candidate,
                                            .max_seqs = args->n,
                                            .chunk_size = args->engine.chunk,
                                            .runtime = args->engine.Options(),
                                            .quiet = Globals().quiet,
                                            .per_position = args->per_position});
    }
    for (const auto& w : result.warnings) fmt::print(stderr, "warning: {}\n", w);
    fmt::print("{}", FormatKlTable({result}));
    if (!Globals().quiet) {
      const ResultsTimings& t = result.timings;
      fmt::print(stderr,
                 "time: {:.2f} s total = forward {:.2f} s + scoring {:.3f} s + I/O {:.3f} s + "
                 "other {:.2f} s (loading {:.2f} s)\n",
                 t.total_seconds, t.forward_seconds, t.scoring_seconds, t.io_seconds,
                 t.other_seconds(), t.load_seconds);
    }
    if (!args->per_position.empty() && !Globals().quiet) {
      fmt::print(stderr, "wrote {}\n", args->per_position);
    }
    if (args->json.empty()) return;
    ResultsEnvelope env{.command = "kl"};
    double hash_seconds = 0;
    {
      ScopedSeconds hashing(&hash_seconds);
      if (two_model) {
        env.inputs.push_back(DescribeModelInput("reference", args->reference));
        env.inputs.push_back(DescribeCorpusInput("corpus", args->corpus));
      } else {
        env.inputs.push_back(
            DescribeReferenceLogitsInput("reference_logits", args->reference_logits));
      }
      env.inputs.push_back(DescribeModelInput("candidate", args->candidate));
    }
    env.settings = {
        {"mode", result.mode},
        {"chunk_size", args->engine.chunk},
        {"max_seqs", args->n},
        {"compute", args->engine.compute},
        {"kv", args->engine.kv},
        {"reference_compute", two_model ? nlohmann::ordered_json(reference_engine.compute)
                                        : nlohmann::ordered_json(nullptr)},
        {"reference_kv",
         two_model ? nlohmann::ordered_json(reference_engine.kv) : nlohmann::ordered_json(nullptr)},
        {"top_k", result.manifest.top_k},
        {"full_vocabulary", two_model}};
    env.results = KlEvalResultToJson(result);
    env.timings = result.timings;
    env.timings.hash_seconds = hash_seconds;
    env.timings.total_seconds += hash_seconds;
    env.warnings = result.warnings;
    if (!args->per_position.empty()) {
      env.outputs.push_back({{"role", "per_position"}, {"path", args->per_position}});
    }
    WriteResultsJson(args->json, env);
    if (!Globals().quiet) fmt::print(stderr, "wrote {}\n", args->json);
  });
}

}  // namespace proctor::cli
