// `proctor demo [--model PATH]`: the whole core loop in one command, with no downloads: a
// teacher (generated, or the model given), 8/4/3-bit candidates quantized from it, a corpus
// from the project's docs, the teacher's dump, and one table scoring every candidate against it
// (eval/demo/demo_pipeline.h does the work).
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>

#include "cli/engine_flags.h"
#include "cli/verbs.h"
#include "eval/compare/compare_table.h"
#include "eval/demo/demo_pipeline.h"

namespace proctor::cli {

void RegisterDemoVerb(CLI::App& app) {
  struct Args {
    std::string model;
    std::string dir;
    bool keep = false;
    std::string json;
    std::vector<int> bits{8, 4, 3};
    int group_size = 64;
    int64_t n_seqs = 16;
    int64_t ctx_len = 256;
    int64_t top_k = 256;
    EngineFlags engine;
  };
  auto args = std::make_shared<Args>();
  auto* verb =
      app.add_subcommand("demo",
                         "The whole loop on a generated teacher (or --model): quantize 8/4/3-bit "
                         "candidates, build a corpus from the docs, dump the teacher, score every "
                         "candidate (seconds; no downloads)");
  verb->add_option("--model", args->model,
                   "Run on this teacher (directory, .gguf or cached HF id) instead of the "
                   "generated one; its own tokenizer is used");
  verb->add_option("--dir", args->dir,
                   "Work directory (teacher, corpus, dump); kept. Default: a temporary "
                   "directory, removed at the end unless --keep");
  verb->add_flag("--keep", args->keep, "Keep the temporary work directory");
  verb->add_option("--json", args->json, "Also write every statistic as JSON to this file");
  verb->add_option("--bits", args->bits, "Candidate bit widths (MLX affine; default 8 4 3)")
      ->delimiter(',')
      ->check(CLI::IsMember({2, 3, 4, 5, 6, 8}));
  verb->add_option("--group-size", args->group_size, "Quantization group size (default 64)")
      ->check(CLI::IsMember({32, 64, 128}));
  verb->add_option("--n-seqs", args->n_seqs, "Corpus sequences (default 16)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  verb->add_option("--ctx-len", args->ctx_len, "Tokens per sequence (default 256)")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 20));
  auto old = std::make_shared<OldSpellings>();
  old->Add(*verb, "--ctx", "--ctx-len", args->ctx_len);
  verb->add_option("--top-k", args->top_k, "Logits kept per position in the dump (default 256)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  args->engine.Add(*verb);
  verb->callback([args, verb, old] {
    const bool quiet = Globals().quiet;
    old->Check(*verb);
    const bool temporary = args->dir.empty();
    const std::filesystem::path dir = temporary ? std::filesystem::temp_directory_path() /
                                                      fmt::format("proctor-demo-{}", ::getpid())
                                                : std::filesystem::path(args->dir);
    if (temporary) std::filesystem::remove_all(dir);
    struct Cleanup {
      std::filesystem::path dir;
      bool active;
      ~Cleanup() {
        std::error_code ec;
        if (active) std::filesystem::remove_all(dir, ec);
      }
    } cleanup{dir, temporary && !args->keep};

    if (!quiet) {
      fmt::print(
          "proctor demo: the core loop (corpus, teacher dump, saved-teacher KL, "
          "perplexity) on {}; nothing is downloaded\n\n",
          args->model.empty() ? "a small Llama it generates" : args->model);
      std::fflush(stdout);
    }
    const DemoOptions options{
        .work_dir = dir,
        .model = args->model,
        .bits = args->bits,
        .group_size = args->group_size,
        .n_seqs = args->n_seqs,
        .ctx_len = args->ctx_len,
        .top_k = args->top_k,
        .chunk_size = args->engine.chunk,
        .runtime = args->engine.Options(),
        .quiet = quiet,
        .log = StepLog(),
    };
    const DemoResult demo = RunDemo(options);
    const CompareResult& result = demo.compare;
    if (!quiet) fmt::print("\n");
    fmt::print("{}", FormatCompareTable(result));
    if (!quiet) {
      fmt::print("\n{}{}", CompareLegend(result),
                 demo.generated_teacher
                     ? "A model this small (and this uncertain) is far more sensitive to "
                       "quantization than a\nbillion-parameter one; `proctor demo --model PATH` "
                       "runs the same on yours, and\n`proctor compare` on your own data.\n"
                     : "");
    }
    if (!args->json.empty()) {
      WriteResultsJson(
          args->json,
          CompareResultsEnvelope(result, DemoCompareOptions(options, result.teacher), "demo"));
      if (!quiet) fmt::print(stderr, "wrote {}\n", args->json);
    }
    if (!quiet) {
      fmt::print(
          "demo finished in {:.1f} s with {} threads{}\n",
          demo.teacher_seconds + result.total_seconds, result.threads,
          temporary && !args->keep ? "" : fmt::format("; work directory kept: {}", dir.string()));
    }
  });
}

}  // namespace proctor::cli
