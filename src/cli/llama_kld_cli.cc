#include "cli/llama_kld_cli.h"

#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/verbs.h"
#include "eval/llama_kld.h"
#include "eval/llama_kld_eval.h"
#include "eval/results_json.h"
#include "util/error.h"

namespace proctor::cli {
namespace {

void PrintTimings(const ResultsTimings& t, const char* work) {
  if (Globals().quiet) return;
  fmt::print(stderr,
             "time: {:.2f} s total = forward {:.2f} s + {} {:.3f} s + I/O {:.3f} s + other "
             "{:.2f} s (loading {:.2f} s)\n",
             t.total_seconds, t.forward_seconds, work, t.scoring_seconds, t.io_seconds,
             t.other_seconds(), t.load_seconds);
}

nlohmann::ordered_json PplJson(const ValueAndUncertainty& v) {
  return {{"value", v.value}, {"uncertainty", v.uncertainty}};
}

}  // namespace

bool IsLlamaKldReference(const std::string& path) {
  std::error_code ec;
  if (path.empty() || !std::filesystem::is_regular_file(path, ec)) return false;
  return std::filesystem::path(path).extension() == ".kld" || LooksLikeLlamaKld(path);
}

void RunKlOnLlamaKld(const LlamaKldKlArgs& args) {
  if (!args.per_position.empty()) {
    Fail("cli",
         "--per-position is not available with a llama.cpp base file ('{}'); it needs a "
         "proctor dump directory",
         args.base_file);
  }
  const LlamaKldEvalResult result = EvaluateKlVsLlamaKld({
      .base_file = args.base_file,
      .candidate = args.candidate,
      .max_chunks = args.n,
      .chunk_size = args.engine.chunk,
      .runtime = args.engine.Options(),
      .quiet = Globals().quiet,
  });
  fmt::print("{}", FormatLlamaKldReport(result));
  PrintTimings(result.timings, "scoring");
  if (args.json.empty()) return;
  ResultsEnvelope env{.command = "kl"};
  double hash_seconds = 0;
  {
    ScopedSeconds hashing(&hash_seconds);
    env.inputs.push_back(DescribeFileInput("reference_llama_kld", args.base_file));
    env.inputs.push_back(DescribeModelInput("candidate", args.candidate));
  }
  env.settings = {{"mode", "llama.cpp-kld"}, {"chunk_size", args.engine.chunk},
                  {"max_chunks", args.n},    {"compute", args.engine.compute},
                  {"kv", args.engine.kv},    {"chunk_start_token", result.chunk_start_token}};
  env.results = LlamaKlStatsToJson(result.stats);
  env.results["base"] = {{"n_ctx", result.n_ctx},
                         {"n_vocab", result.n_vocab},
                         {"n_chunk", result.n_chunk},
                         {"chunks_scored", result.chunks_scored},
                         {"first_position", LlamaKldFirstPosition(result.n_ctx)}};
  env.timings = result.timings;
  env.timings.hash_seconds = hash_seconds;
  env.timings.total_seconds += hash_seconds;
  WriteResultsJson(args.json, env);
  if (!Globals().quiet) fmt::print(stderr, "wrote {}\n", args.json);
}

void RunDumpLlamaKld(const LlamaKldDumpArgs& args) {
  const LlamaKldDumpResult r = DumpTeacherLlamaKld({
      .teacher = args.teacher,
      .corpus_dir = args.corpus,
      .out_file = args.out,
      .chunk_size = args.engine.chunk,
      .seq_start = args.seq_start,
      .seq_end = args.seq_end,
      .runtime = args.engine.Options(),
      .quiet = Globals().quiet,
  });
  const std::string bos =
      r.chunk_start_token >= 0
          ? fmt::format("token {} (BOS) evaluated at position 0 of every chunk, as llama.cpp does",
                        r.chunk_start_token)
          : std::string("chunks evaluated as stored (the vocabulary adds no BOS)");
  fmt::print(
      "wrote {}: llama.cpp KL-divergence base, n_ctx {}, n_vocab {}, n_chunk {}, {} positions "
      "(n_ctx/2 .. n_ctx-2 of each chunk); {}; {:.1f} s\n"
      "teacher PPL over these positions, exact f32 logits : {:.6f} +/- {:.6f}\n"
      "teacher PPL as stored in the file (what llama.cpp reports as PPL(base)): {:.6f} +/- "
      "{:.6f}\n",
      args.out, r.n_ctx, r.n_vocab, r.n_chunk, r.positions, bos, r.elapsed_seconds,
      r.exact_ppl.value, r.exact_ppl.uncertainty, r.stored_ppl.value, r.stored_ppl.uncertainty);
  PrintTimings(r.timings, "encoding");
  if (args.json.empty()) return;
  ResultsEnvelope env{.command = "dump"};
  double hash_seconds = 0;
  {
    ScopedSeconds hashing(&hash_seconds);
    env.inputs.push_back(DescribeModelInput("teacher", args.teacher));
    env.inputs.push_back(DescribeCorpusInput("corpus", args.corpus));
  }
  env.settings = {{"format", "llama.cpp"},
                  {"chunk_size", args.engine.chunk},
                  {"seq_start", args.seq_start},
                  {"seq_end", args.seq_end},
                  {"compute", args.engine.compute},
                  {"kv", args.engine.kv},
                  {"chunk_start_token", r.chunk_start_token}};
  env.results = {{"n_ctx", r.n_ctx},
                 {"n_vocab", r.n_vocab},
                 {"n_chunk", r.n_chunk},
                 {"positions", r.positions},
                 {"teacher_ppl_exact", PplJson(r.exact_ppl)},
                 {"teacher_ppl_stored", PplJson(r.stored_ppl)}};
  env.timings = r.timings;
  env.timings.hash_seconds = hash_seconds;
  env.timings.total_seconds += hash_seconds;
  env.outputs.push_back(DescribeFileInput("llama_kld", args.out));
  WriteResultsJson(args.json, env);
  if (!Globals().quiet) fmt::print(stderr, "wrote {}\n", args.json);
}

}  // namespace proctor::cli
