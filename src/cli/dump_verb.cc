// `proctor dump --teacher MODEL --corpus DIR --out DIR`: runs the teacher teacher-forced over a
// tokenized corpus and writes a reference-logits dump (top-k logits + full logsumexp).
#include <fmt/format.h>

#include "cli/engine_flags.h"
#include "cli/llama_kld_cli.h"
#include "cli/verbs.h"
#include "eval/results_json.h"
#include "eval/teacher_dump.h"

namespace proctor::cli {

void RegisterDumpVerb(CLI::App& app) {
  struct Args {
    std::string teacher;
    std::string corpus;
    std::string out;
    int64_t top_k = 2048;
    int64_t seq_start = 0;
    int64_t seq_end = -1;
    bool resume = false;
    std::string format = "proctor";
    std::string json;
    EngineFlags engine;
  };
  auto args = std::make_shared<Args>();
  auto* verb = app.add_subcommand(
      "dump", "Run a teacher model over a corpus and write a reference-logits dump");
  verb->add_option("--teacher", args->teacher,
                   "Teacher model: directory, .gguf file or cached HF id")
      ->required();
  verb->add_option("--corpus", args->corpus, "Corpus directory (tokens.bin + manifest.json)")
      ->required();
  verb->add_option("--out", args->out, "Output dump directory (empty, absent, or --resume)")
      ->required();
  auto* top_k = verb->add_option("--top-k", args->top_k, "Logits kept per position (default 2048)")
                    ->check(CLI::PositiveNumber);
  verb->add_option("--seq-start", args->seq_start, "First corpus sequence to dump (default 0)")
      ->check(CLI::NonNegativeNumber);
  verb->add_option("--seq-end", args->seq_end,
                   "One past the last corpus sequence to dump (default: all)")
      ->check(CLI::NonNegativeNumber);
  auto* resume = verb->add_flag("--resume", args->resume, "Continue an interrupted dump in --out");
  verb->add_option("--format", args->format,
                   "proctor (reference-logits dump directory, default) or llama.cpp (--out is a "
                   "llama-perplexity KL-divergence base file, .kld)")
      ->check(CLI::IsMember({"proctor", "llama.cpp"}))
      ->excludes(top_k)
      ->excludes(resume);
  verb->add_option("--json", args->json,
                   "Also write the results JSON (docs/results-json.md) to this file");
  args->engine.Add(*verb);
  verb->callback([args] {
    if (args->format == "llama.cpp") {
      return RunDumpLlamaKld({args->teacher, args->corpus, args->out, args->seq_start,
                              args->seq_end, args->json, args->engine});
    }
    const TeacherDumpResult result = DumpTeacher({
        .teacher = args->teacher,
        .corpus_dir = args->corpus,
        .out_dir = args->out,
        .top_k = args->top_k,
        .chunk_size = args->engine.chunk,
        .seq_start = args->seq_start,
        .seq_end = args->seq_end,
        .resume = args->resume,
        .runtime = args->engine.Options(),
        .quiet = Globals().quiet,
    });
    if (!Globals().quiet) {
      fmt::print(stderr, "wrote {}: {} sequences ({} resumed), {} positions in {:.1f} s\n",
                 args->out, result.n_seqs, result.sequences_resumed, result.positions_written,
                 result.elapsed_seconds);
      const ResultsTimings& t = result.timings;
      fmt::print(stderr,
                 "time: {:.2f} s total = forward {:.2f} s + top-k/logsumexp {:.3f} s + I/O "
                 "{:.3f} s + other {:.2f} s (loading {:.2f} s)\n",
                 t.total_seconds, t.forward_seconds, t.scoring_seconds, t.io_seconds,
                 t.other_seconds(), t.load_seconds);
    }
    if (args->json.empty()) return;
    ResultsEnvelope env{.command = "dump"};
    double hash_seconds = 0;
    {
      ScopedSeconds hashing(&hash_seconds);
      env.inputs.push_back(DescribeModelInput("teacher", args->teacher));
      env.inputs.push_back(DescribeCorpusInput("corpus", args->corpus));
    }
    env.settings = {{"top_k", args->top_k},         {"chunk_size", args->engine.chunk},
                    {"seq_start", args->seq_start}, {"seq_end", args->seq_end},
                    {"resume", args->resume},       {"compute", args->engine.compute},
                    {"kv", args->engine.kv}};
    const double dump_seconds = result.timings.total_seconds;
    env.results = {
        {"n_seqs", result.n_seqs},
        {"sequences_resumed", result.sequences_resumed},
        {"positions_written", result.positions_written},
        {"vocab", result.vocab},
        {"positions_per_second",
         dump_seconds > 0 ? static_cast<double>(result.positions_written) / dump_seconds : 0.0}};
    env.timings = result.timings;
    env.timings.hash_seconds = hash_seconds;
    env.timings.total_seconds += hash_seconds;
    env.outputs.push_back(DescribeReferenceLogitsInput("dump", args->out));
    WriteResultsJson(args->json, env);
    if (!Globals().quiet) fmt::print(stderr, "wrote {}\n", args->json);
  });
}

}  // namespace proctor::cli
