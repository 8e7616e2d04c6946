// `proctor demo`: the whole core loop in one call, on an embedded default or any model.
//
//   1. teacher: the generated demo teacher (eval/demo/demo_teacher.h) written into
//   work_dir/teacher,
//      or the model given;
//   2. candidates: the teacher quantized with MLX affine quantization at each of `bits` into
//      work_dir/candidates/mlx-<bits>bit-g<group> (QuantizeModelToMlx, as `proctor quantize`),
//      loaded back by the engine;
//   3. corpus: the project's documentation (eval/demo/demo_texts.h) tokenized with the teacher's
//      tokenizer, BOS before each file, concatenated and cut into n_seqs x ctx_len
//      (work_dir/corpus, FORMATS.md section 4);
//   4. dump: the teacher's top-k reference logits over the corpus (work_dir/dump, DumpTeacher);
//   5. score: the teacher itself and every candidate against the dump
//      (EvaluateKlVsReferenceLogits), with each one's perplexity on the corpus computed from the
//      same forward pass (mean next-token NLL over the scored positions, exp of it).
// The result is one row per model; FormatDemoTable prints it and DemoResultToJson gives every
// statistic. Everything is deterministic for a fixed thread count (statistics bit-identical).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "eval/runners/kl_eval.h"
#include "eval/runners/results_json.h"
#include "eval/runners/teacher_dump.h"
#include "model/runtime_model.h"

namespace proctor {

struct DemoOptions {
  std::filesystem::path work_dir{};  // created; teacher/, corpus/, dump/ go here
  std::string model{};               // empty: generate the demo teacher
  std::vector<int> bits{8, 4, 3};    // one MLX affine candidate per entry
  int group_size = 64;
  int64_t n_seqs = 16;  // fewer when the texts run out (at least one sequence)
  int64_t ctx_len = 256;
  int64_t top_k = 256;  // logits kept per position in the dump
  int64_t chunk_size = 512;
  RuntimeOptions runtime{};
  bool quiet = true;                              // progress bars of dump and scoring on stderr
  std::function<void(const std::string&)> log{};  // one line per finished step (may be empty)
};

struct DemoPerplexity {
  double mean_nll = 0;        // nats per scored position
  double perplexity = 0;      // exp(mean_nll)
  double standard_error = 0;  // of the perplexity: ppl * stddev(nll) / sqrt(positions)
  int64_t positions = 0;
  std::vector<double> per_position_nll;  // sequence after sequence (not in the JSON)
};

struct DemoRow {
  std::string candidate;       // "teacher (bf16)", "mlx 4-bit g64"
  std::string model;           // the candidate's MLX directory ("" for the teacher)
  int bits = 0;                // 0 for the teacher
  double bits_per_weight = 0;  // stored bits over the teacher's parameter count
  KlEvalResult kl;
  DemoPerplexity perplexity;
  double prepare_seconds = 0;  // quantization (0 for the teacher)
  double seconds = 0;          // scoring pass: forward + KL + NLL
};

struct DemoResult {
  std::string teacher;  // model spec, or the generated teacher's directory
  std::string teacher_summary;
  bool generated_teacher = false;
  std::string tokenizer;  // Describe() of the teacher's tokenizer
  double teacher_bits_per_weight = 0;
  std::filesystem::path corpus_dir, dump_dir;
  std::string corpus_sha256;
  std::vector<std::string> corpus_sources;
  int64_t n_seqs = 0, ctx_len = 0, top_k = 0, group_size = 0;
  int threads = 0;
  TeacherDumpResult dump;
  std::vector<DemoRow> rows;   // teacher first, then candidates in `bits` order
  double teacher_seconds = 0;  // building (or loading) the teacher
  double corpus_seconds = 0;
  double total_seconds = 0;
};

// Errors: Error("[demo] ...") for bad options or texts too short for one sequence; the errors
// of the steps it runs.
DemoResult RunDemo(const DemoOptions& options);

// The comparison table: candidate, bits per weight, KL mean +- SE, median, p95, top-1, captured
// mass, perplexity, seconds.
std::string FormatDemoTable(const DemoResult& result);

// Every statistic: {"teacher", "corpus", "dump", "candidates": [{"candidate", "bits",
// "bits_per_weight", "kl": KlEvalResultToJson, "perplexity", "prepare_seconds", "seconds"}],
// "timings"}.
nlohmann::ordered_json DemoResultToJson(const DemoResult& result);

// The results-JSON envelope (docs/results-json.md) of a run: command "demo"; inputs: the teacher
// (hashed; while its directory still exists); settings: the options; results: DemoResultToJson;
// timings: the dump's and every scoring pass's forward / scoring / I/O split summed; outputs:
// the corpus and the dump (described while they exist).
ResultsEnvelope DemoResultsEnvelope(const DemoResult& result, const DemoOptions& options);

}  // namespace proctor
