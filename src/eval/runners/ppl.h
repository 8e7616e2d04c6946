// Perplexity the mlx_lm way (mlx_lm/perplexity.py; docs/statistics.md):
//
//   data     the token stream of eval/runners/token_stream.h: the rows of the --data files shuffled
//            with the seed (mulberry32) and tokenized as mlx_lm's datasets do (text rows with
//            special tokens plus EOS), rows taken until the stream holds
//            sequence_length * num_samples tokens (every row for num_samples -1);
//   rows     the stream cut into non-overlapping rows of sequence_length tokens, the tail that
//            does not fill a row dropped; num_samples > 0 keeps the first num_samples rows. No
//            BOS is put at the start of a row: a row starts wherever the stream is;
//   scoring  each row runs teacher-forced (one KV cache per row) on its first L-1 tokens;
//            position p scores token p+1: nll = logsumexp(logits_p) - logits_p[token_{p+1}],
//            in float64 from the f32 logits. Every position of every row counts;
//   result   ppl = exp(mean nll over all positions); standard error by the delta method,
//            se(ppl) = ppl * sd(nll, ddof 1) / sqrt(n) (mlx_lm's, positions as independent),
//            and beside it the same with the per-row mean nll as the independent units.
//
// The math (PackPerplexityRows, NextTokenNll, PerplexityFromNlls, ScorePerplexityRows) takes
// any TeacherForcedLogits, so it is tested with fake forwards; EvaluatePerplexity is the whole
// command (`proctor ppl`) on a model through the serving forward (eval/runners/eval_model.h).
#pragma once

#include <cstdint>
#include <ctime>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/runners/results_json.h"
#include "eval/runners/shard.h"
#include "eval/runners/teacher_forced.h"
#include "model/runtime_model.h"
#include "util/thread_pool.h"

namespace proctor {

// mlx_lm's packing: stream[0 : floor(n/L)*L] as rows of L tokens; num_samples > 0 keeps the
// first min(num_samples, rows) rows, -1 keeps all. Returns [rows, L] flattened.
std::vector<int32_t> PackPerplexityRows(std::span<const int32_t> stream, int64_t sequence_length,
                                        int64_t num_samples);

// -log softmax(logits)[target] in float64 (max-shifted logsumexp; ops/sum_exp.h). Error for a
// NaN logit or a target outside [0, logits.size()).
double NextTokenNll(std::span<const float> logits, int32_t target);

// NextTokenNll of logits rows [0, count) with targets[0, count), across `pool` (each row's value
// independent of the thread count), into out[0, count).
void NextTokenNlls(const MatView& logits, int64_t count, std::span<const int32_t> targets,
                   ThreadPool& pool, double* out);

struct PerplexityStats {
  int64_t rows = 0;
  int64_t positions = 0;           // rows * (L - 1)
  double mean_nll = 0;             // nats per token
  double nll_std = 0;              // sample standard deviation over positions (ddof 1)
  double ppl = 0;                  // exp(mean_nll)
  double standard_error = 0;       // ppl * nll_std / sqrt(positions) (mlx_lm)
  double standard_error_rows = 0;  // ppl * sd(row means, ddof 1) / sqrt(rows)
};

// nlls: [rows, positions_per_row]. Sums in float64 in index order (deterministic). A standard
// deviation with fewer than 2 values is NaN.
PerplexityStats PerplexityFromNlls(std::span<const double> nlls, int64_t positions_per_row);

struct PerplexityScoreOptions {
  int64_t chunk_size = 512;  // positions per forward call
  int64_t batch_size = 8;    // mlx_lm's rows per step: recorded only (results do not depend on it)
  ThreadPool* pool = nullptr;  // positions of a chunk are scored across it; null: Global()
  bool quiet = false;
};

struct PerplexityScores {
  std::vector<double> nlls;  // [rows, L - 1]
  double forward_seconds = 0;
  double scoring_seconds = 0;
};

// Scores rows [n_rows, L] (L >= 2) with `forward`, one row at a time in order. Error when the
// forward's chunks do not cover every position or its logits are not f32.
PerplexityScores ScorePerplexityRows(std::span<const int32_t> rows, int64_t sequence_length,
                                     const TeacherForcedLogits& forward,
                                     const PerplexityScoreOptions& options);

struct PplOptions {
  std::string model{};                        // directory, .gguf or cached HF id
  std::vector<std::filesystem::path> data{};  // .jsonl / .txt files, or ONE corpus directory
  int64_t sequence_length = 0;                // 0: 512 for text data, ctx_len for a corpus
  int64_t num_samples = 256;                  // rows kept; -1: all
  uint32_t seed = 123;
  int64_t batch_size = 8;
  int64_t chunk_size = 512;
  RuntimeOptions runtime{};
  TeacherForcedLogits forward{};      // empty: the engine's (EvalModel::Open(model))
  std::string tokenizer{};            // empty: the model's own
  std::optional<std::tm> chat_now{};  // strftime_now's clock for chat rows
  ThreadPool* pool = nullptr;
  bool quiet = false;
  bool describe_inputs = false;  // fill PplResult::inputs (hashes the inputs)
  // Set: score only the shard's rows (eval/runners/shard.h) of all the rows the data gives; the
  // result is a partial one for `proctor merge` (PplResult::shard, nlls).
  std::optional<Shard> shard{};
  // With `shard`: a results file (--json) that may already hold this shard's partial result. If
  // it does (same shard, settings, model spec and scored rows' sha256), it is returned
  // (PplResult::reused) instead of scoring again.
  std::filesystem::path finished_partial{};
};

struct PplResult {
  std::string model;
  std::string tokenizer;                 // Describe() of the tokenizer ("" for a corpus)
  std::filesystem::path tokenizer_path;  // the tokenizer file or folder used ("" for a corpus)
  nlohmann::ordered_json data;           // [{path, kind, sha256 | tokens_sha256, ...}]
  int64_t sequence_length = 0;
  int64_t num_samples = 0;  // as asked
  uint32_t seed = 0;
  int64_t batch_size = 0;
  int64_t chunk_size = 0;
  int64_t rows_available = 0;  // rows the stream could fill (before num_samples)
  int64_t data_rows_used = 0;  // text/chat rows tokenized (0 for a corpus)
  std::string rows_sha256;     // sha256 of the scored rows (int32 little-endian)
  PerplexityStats stats;
  std::vector<double> row_mean_nll;
  int threads = 0;
  // forward, scoring (the NLLs), io (reading a corpus), load (model and tokenizer), total.
  ResultsTimings timings;
  double data_seconds = 0;       // reading and tokenizing the data (part of io / other)
  double tokens_per_second = 0;  // scored positions / (forward + scoring)
  std::vector<std::string> warnings;
  nlohmann::ordered_json inputs = nlohmann::ordered_json::array();  // with describe_inputs
  // A shard's partial result: the shard, its rows of rows_total, and their NLLs ([rows, L - 1]);
  // stats and row_mean_nll are its rows' only (nothing for a shard without rows).
  std::optional<Shard> shard;
  ItemRange shard_rows;
  int64_t rows_total = 0;
  std::vector<double> nlls;
  bool reused = false;  // read back from PplOptions::finished_partial, not scored
};

PplResult EvaluatePerplexity(const PplOptions& options);
// The results file of `proctor ppl --json`.
ResultsEnvelope PplResultsEnvelope(const PplResult& result, const PplOptions& options);

// `proctor merge` of ppl partial results (the results files of `ppl --shard I/N --json FILE`, in
// any order): the shards' NLLs in shard order, so every statistic equals the unsharded run's bit
// for bit; the envelope (settings, inputs) is the shards' and the timings their sums. Errors name
// the file: not a ppl partial, truncated, from other data, rows, model or settings than the first
// (naming the value), another shard count, a shard missing or given twice.
struct PplMerge {
  PplResult result;
  ResultsEnvelope envelope;
};
PplMerge MergePplPartials(const std::vector<std::filesystem::path>& partials);

// The `results` of the ppl results envelope (docs/results-json.md): every statistic, the data
// with its sha256, the scored rows' sha256, per-row mean NLL; a partial result adds `shard`
// ({index, count, rows: [first, end), rows_total}) and `nlls`.
nlohmann::ordered_json PplResultToJson(const PplResult& result);
// The `settings` of the envelope: sequence_length, num_samples, seed, batch_size, chunk_size.
nlohmann::ordered_json PplSettingsToJson(const PplResult& result);
// "Perplexity: 5.123 ± 0.021 ..." lines for the terminal.
std::string FormatPplSummary(const PplResult& result);

}  // namespace proctor
