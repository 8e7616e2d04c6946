// `proctor dump --teacher MODEL --corpus DIR --out DIR`: runs the teacher teacher-forced over a
// tokenized corpus and writes a reference-logits dump (top-k logits + full logsumexp).
#include <fmt/format.h>

#include <optional>

#include "cli/engine_flags.h"
#include "cli/verbs.h"
#include "eval/runners/dump_floor.h"
#include "eval/runners/dump_shards.h"
#include "eval/runners/llama_kld_eval.h"
#include "eval/runners/results_json.h"
#include "eval/runners/teacher_dump.h"

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
    bool no_floor = false;
    std::string format = "proctor";
    std::string json;
    std::string shard;
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
  auto* seq_start =
      verb->add_option("--seq-start", args->seq_start, "First corpus sequence to dump (default 0)")
          ->check(CLI::NonNegativeNumber);
  auto* seq_end = verb->add_option("--seq-end", args->seq_end,
                                   "One past the last corpus sequence to dump (default: all)")
                      ->check(CLI::NonNegativeNumber);
  auto* resume = verb->add_flag("--resume", args->resume, "Continue an interrupted dump in --out");
  auto* shard =
      verb->add_option("--shard", args->shard,
                       "I/N: dump only shard I of N (0-based) of the corpus' sequences, a "
                       "contiguous share, into --out with its shard.json, for `proctor merge`; "
                       "rerun, a finished shard is kept and an interrupted one resumes")
          ->excludes(seq_start)
          ->excludes(seq_end)
          ->excludes(resume);
  auto* no_floor = verb->add_flag(
      "--no-floor", args->no_floor,
      "Do not score the teacher against its own records (the dump's floor, kept in floor.json "
      "and shown first by `proctor kl`); saves the scoring time");
  verb->add_option("--format", args->format,
                   "proctor (reference-logits dump directory, default) or llama.cpp (--out is a "
                   "llama-perplexity KL-divergence base file, .kld)")
      ->check(CLI::IsMember({"proctor", "llama.cpp"}))
      ->excludes(top_k)
      ->excludes(resume)
      ->excludes(no_floor)
      ->excludes(shard);
  verb->add_option("--json", args->json,
                   "Also write the results JSON (docs/results-json.md) to this file");
  args->engine.Add(*verb);
  verb->footer(
      "Examples:\n"
      "  proctor dump --teacher model.gguf --corpus corpus/ --out teacher-dump/\n"
      "  for i in 0 1 2 3; do proctor dump --teacher model.gguf --corpus corpus/ \\\n"
      "      --out part$i/ --shard $i/4; done\n"
      "  proctor merge teacher-dump/ part0/ part1/ part2/ part3/\n"
      "The merged directory is the unsharded dump (docs/scale-out.md).");
  verb->callback([args] {
    const bool quiet = Globals().quiet;
    const bool json = !args->json.empty();
    ResultsEnvelope envelope;
    if (args->format == "llama.cpp") {
      const LlamaKldDumpOptions options{.teacher = args->teacher,
                                        .corpus_dir = args->corpus,
                                        .out_file = args->out,
                                        .chunk_size = args->engine.chunk,
                                        .seq_start = args->seq_start,
                                        .seq_end = args->seq_end,
                                        .runtime = args->engine.Options(args->teacher),
                                        .quiet = quiet,
                                        .describe_inputs = json};
      const LlamaKldDumpResult r = DumpTeacherLlamaKld(options);
      fmt::print("{}", FormatLlamaKldDumpReport(r, options));
      if (!quiet) fmt::print(stderr, "{}", FormatTimings(r.timings, "encoding"));
      if (json) envelope = LlamaKldDumpResultsEnvelope(r, options);
    } else {
      TeacherDumpOptions options{.teacher = args->teacher,
                                 .corpus_dir = args->corpus,
                                 .out_dir = args->out,
                                 .top_k = args->top_k,
                                 .chunk_size = args->engine.chunk,
                                 .seq_start = args->seq_start,
                                 .seq_end = args->seq_end,
                                 .resume = args->resume,
                                 .runtime = args->engine.Options(args->teacher),
                                 .quiet = quiet,
                                 .describe_inputs = json,
                                 .floor = !args->no_floor};
      std::optional<TeacherDumpResult> dumped;
      if (!args->shard.empty()) {
        DumpShardResult sharded = DumpTeacherShard(options, ParseShard(args->shard, "--shard"));
        if (sharded.already_done) {
          fmt::print(
              "Shard {} (sequences [{}, {}) of {}) already done: '{}' holds it; not "
              "dumped again\n",
              sharded.shard.Name(), sharded.seqs.first, sharded.seqs.end, sharded.n_seqs_total,
              args->out);
          return;
        }
        fmt::print("Shard {}: sequences [{}, {}) of {}\n", sharded.shard.Name(), sharded.seqs.first,
                   sharded.seqs.end, sharded.n_seqs_total);
        if (!sharded.dump) {
          fmt::print("no sequences in this shard: wrote {}/{}\n", args->out, kDumpShardFile);
          return;
        }
        // The slice the shard dumped, as its results file says.
        options.seq_start = sharded.seqs.first;
        options.seq_end = sharded.seqs.end;
        options.resume = true;
        dumped = std::move(sharded.dump);
      } else {
        dumped = DumpTeacher(options);
      }
      const TeacherDumpResult& result = *dumped;
      for (const auto& note : result.notes) fmt::print(stderr, "note: {}\n", note);
      if (!quiet) {
        fmt::print(stderr, "wrote {}: {} sequences ({} resumed), {} positions in {:.1f} s\n",
                   args->out, result.n_seqs, result.sequences_resumed, result.positions_written,
                   result.elapsed_seconds);
        fmt::print(stderr, "{}", FormatTimings(result.timings, "top-k/logsumexp"));
      }
      if (result.floor) {
        // The KL the dump's storage costs: no candidate can be told apart from the teacher below
        // it.
        fmt::print("{}", FormatDumpFloorLine(*result.floor));
        fmt::print("(kept in {}/floor.json)\n", args->out);
      }
      if (json) envelope = DumpResultsEnvelope(result, options);
    }
    if (!json) return;
    WriteResultsJson(args->json, envelope);
    if (!quiet) fmt::print(stderr, "wrote {}\n", args->json);
  });
}

}  // namespace proctor::cli
