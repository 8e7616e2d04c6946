// `proctor compare --teacher MODEL --data FILE... [--candidate MODEL]... [--quantize SPEC]...
// [--out DIR]`: a whole quantization study in one command (eval/compare/compare_pipeline.h):
// corpus from the user's data, one teacher dump, every candidate scored against it, one table.
#include <fmt/format.h>

#include <filesystem>

#include "cli/engine_flags.h"
#include "cli/verbs.h"
#include "eval/compare/compare_pipeline.h"
#include "eval/compare/compare_table.h"
#include "eval/report/gnuplot.h"
#include "eval/report/report.h"
#include "model/quantize_spec.h"
#include "util/error.h"
#include "util/file.h"

namespace proctor::cli {
namespace {

// An output file's directory must exist before the run, not after it.
void CheckOutputFile(const std::string& flag, const std::string& path) {
  if (path.empty()) return;
  const std::filesystem::path parent = std::filesystem::absolute(path).parent_path();
  std::error_code ec;
  if (!std::filesystem::is_directory(parent, ec)) {
    Fail("compare", "{} {}: the directory {} does not exist", flag, path, parent.string());
  }
}

}  // namespace

void RegisterCompareVerb(CLI::App& app) {
  struct Args {
    std::string teacher;
    std::vector<std::string> data;
    std::vector<std::string> candidates;
    std::vector<std::string> quantize;
    std::string out = "proctor-compare";
    int64_t ctx_len = 512;
    int64_t n_seqs = 32;
    int64_t top_k = 256;
    uint32_t seed = 123;
    std::string json, md, csv, report;
    std::vector<std::string> kv_schemes;
    int64_t kv_decode_steps = 32;
    EngineFlags engine;
  };
  auto args = std::make_shared<Args>();
  auto* verb = app.add_subcommand(
      "compare",
      "A quantization study in one command: corpus from your data, one teacher dump, every "
      "candidate (given or quantized here) scored against it, one table");
  verb->footer(
      "Example:\n"
      "  proctor compare --teacher Qwen/Qwen3-0.6B --data chats.jsonl notes.txt \\\n"
      "      --quantize affine4-g64,affine8 --candidate qwen3-0.6b-q4_k_m.gguf --out study\n"
      "Rerunning the same command continues an interrupted run: every finished step (corpus,\n"
      "dump, quantized candidates, scored rows) is kept in --out and reused while its inputs\n"
      "(by sha256) and settings are unchanged. Add candidates to a finished study the same way.");
  verb->add_option("--teacher", args->teacher,
                   "The reference model: directory, .gguf or cached HF id (its tokenizer builds "
                   "the corpus)")
      ->required();
  verb->add_option("--data", args->data,
                   ".jsonl ({\"text\"}, {\"messages\"} or {\"prompt\",\"chosen\"} rows) and text "
                   "files (.txt, .raw: one document each), as `proctor corpus` reads them")
      ->required();
  verb->add_option("--candidate", args->candidates,
                   "A model to score against the teacher (repeatable): directory, .gguf or "
                   "cached HF id");
  verb->add_option("--quantize", args->quantize,
                   "Quantize the teacher and score it (repeatable, or comma-separated): " +
                       QuantizeSpecHelp())
      ->delimiter(',');
  verb->add_option("--out", args->out,
                   "Study directory: corpus, dump, quantized candidates, step records and "
                   "compare.json (default ./proctor-compare)");
  verb->add_option("--ctx-len", args->ctx_len, "Tokens per sequence (default 512)")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 20));
  verb->add_option("--n-seqs", args->n_seqs, "Corpus sequences (default 32)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  verb->add_option("--top-k", args->top_k,
                   "Teacher logits kept per position in the dump (default 256; at most the "
                   "vocabulary)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  verb->add_option("--seed", args->seed, "Row shuffle seed of the data (mulberry32; default 123)");
  verb->add_option("--json", args->json, "Also write every statistic as JSON to this file");
  verb->add_option("--md", args->md, "Also write the table as Markdown to this file");
  verb->add_option("--csv", args->csv, "Also write the table as CSV to this file");
  verb->add_option("--kv-curve", args->kv_schemes,
                   "Also run these KV cache schemes on the teacher (comma-separated --kv "
                   "spellings, e.g. bf16,affine:8,affine:4), as `proctor kv-curve` over the "
                   "study's corpus: a second table, and the KV curve in the report")
      ->delimiter(',');
  verb->add_option("--kv-decode-steps", args->kv_decode_steps,
                   "With --kv-curve: decode steps scored at the end of each sequence (default 32)");
  verb->add_option("--report", args->report,
                   "Also write the report page (HTML with the table and plots, as `proctor "
                   "report`) to this file; its plots go beside it in <name>_plots/");
  args->engine.Add(*verb);
  verb->callback([args] {
    const bool quiet = Globals().quiet;
    if (args->candidates.empty() && args->quantize.empty()) {
      Fail("compare",
           "nothing to compare: give --candidate MODEL or --quantize SPEC (e.g. --quantize "
           "affine4-g64)");
    }
    CheckOutputFile("--json", args->json);
    CheckOutputFile("--md", args->md);
    CheckOutputFile("--csv", args->csv);
    CheckOutputFile("--report", args->report);
    if (!args->report.empty()) RequireGnuplot();
    CompareOptions options{.out_dir = args->out,
                           .teacher = args->teacher,
                           .seed = args->seed,
                           .candidates = args->candidates,
                           .quantize = args->quantize,
                           .kv_schemes = args->kv_schemes,
                           .kv_decode_steps = args->kv_decode_steps,
                           .n_seqs = args->n_seqs,
                           .ctx_len = args->ctx_len,
                           .top_k = args->top_k,
                           .chunk_size = args->engine.chunk,
                           .runtime = args->engine.Options(),
                           .quiet = quiet,
                           .log = StepLog()};
    for (const auto& d : args->data) options.data.emplace_back(d);
    if (!quiet) {
      fmt::print("proctor compare: {} against {} candidate{} -> {}\n\n", args->teacher,
                 args->candidates.size() + args->quantize.size(),
                 args->candidates.size() + args->quantize.size() == 1 ? "" : "s", args->out);
      std::fflush(stdout);
    }
    const CompareResult result = RunCompare(options);
    const ResultsEnvelope envelope = CompareResultsEnvelope(result, options, "compare");
    WriteResultsJson(result.out_dir / "compare.json", envelope);
    if (!quiet) fmt::print("\n");
    fmt::print("{}", FormatCompareTable(result));
    if (!quiet) fmt::print("\n{}", CompareLegend(result));
    if (!result.kv_curve_table.empty()) {
      fmt::print("\nThe teacher's KV cache schemes (decode path):\n{}", result.kv_curve_table);
    }
    if (!args->json.empty()) WriteResultsJson(args->json, envelope);
    if (!args->md.empty()) WriteFileAtomic(args->md, FormatCompareMarkdown(result));
    if (!args->csv.empty()) WriteFileAtomic(args->csv, FormatCompareCsv(result));
    if (!args->report.empty()) {
      const ReportFiles report = WriteReport({ReportStudy{.source = result.out_dir / "compare.json",
                                                          .study_dir = result.out_dir,
                                                          .result = result}},
                                             args->report);
      for (const std::string& note : report.notes) fmt::print("note: {}\n", note);
      if (!quiet) fmt::print("report: {}\n", report.html.string());
    }
    if (!quiet) {
      fmt::print("compare finished in {:.1f} s with {} threads; results in {}\n",
                 result.total_seconds, result.threads, (result.out_dir / "compare.json").string());
    }
  });
}

}  // namespace proctor::cli
