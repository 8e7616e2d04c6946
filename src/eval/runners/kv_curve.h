// `proctor kv-curve`: what each KV cache scheme costs, on one table. One model load; for every
// scheme of a list the decode path of `kl --kv-arm SCHEME --decode-steps S` (the f32 cache as the
// reference arm, the scheme converted when each prompt's prefill ends, the last S positions
// decoded one token per step and scored over the full vocabulary), with the scheme's storage
// size and the candidate arm's decode speed (docs/kv-cache.md).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "eval/runners/kl_eval.h"
#include "eval/runners/results_json.h"
#include "model/kv_cache.h"
#include "model/runtime_model.h"

namespace proctor {

struct KvCurveOptions {
  std::string model{};
  std::filesystem::path corpus_dir{};  // the prompts: the corpus' sequences
  // Or prompts of their own lengths (eval/runners/prompt_set.h), read once with the model's
  // tokenizer: the first max_seqs long enough, each cut to prompt_options.max_tokens.
  std::filesystem::path prompts_file{};
  PromptSetOptions prompt_options{};
  std::vector<std::string> schemes{};  // --kv spellings; empty: DefaultKvCurveSchemes
  int64_t max_seqs = 8;                // the first N sequences; 0 = all
  int64_t decode_steps = 32;
  int64_t chunk_size = 512;                           // prefill chunk
  ops::ComputeMode compute = ops::ComputeMode::kF32;  // both arms
  bool quiet = false;
  bool describe_inputs = false;
  std::shared_ptr<const EvalModel> opened{};  // the model, already opened (compare's teacher)
};

struct KvCurveRow {
  KvScheme scheme;
  double effective_bits = 0;              // per key or value element
  int64_t bytes_per_token = 0;            // keys and values of every layer
  KlRunStats stats;                       // the decode steps against the f32 cache
  std::vector<double> sequence_mean_kl;   // per sequence (what the table pairs)
  std::vector<double> sequence_top1;      // per sequence: both arms' argmax agree
  std::vector<double> sequence_mean_nll;  // per sequence: the scheme arm's next-token NLL
  double decode_tokens_per_second = 0;    // the scheme's arm, one-token steps only
};

struct KvCurveResult {
  std::string model;
  int64_t sequences = 0, ctx_len = 0, decode_steps = 0, prefill = 0;  // prefill -1: per prompt
  nlohmann::ordered_json prompts = nullptr;  // over --prompts: what kl reports of them
  std::vector<KvCurveRow> rows;              // in the order asked
  ResultsTimings timings;
  int threads = 0;
  nlohmann::ordered_json inputs = nlohmann::ordered_json::array();
};

// f32 (the reference itself: KL exactly 0), bf16, f16, ggml q8_0 and q4_0 (when 32 divides
// head_dim), then affine 8, 6, 4, 3 and 2 bits with the largest of groups 64 and 32 that divides
// head_dim (none when neither does).
std::vector<std::string> DefaultKvCurveSchemes(int head_dim);

// Error("[kv-curve] ...") for a scheme that does not parse or fit the model (before any run),
// and every error of `kl --decode-steps`.
KvCurveResult RunKvCurve(const KvCurveOptions& options);

// The table, with a legend. Each row is also paired with the row above (the first row with the
// f32 cache itself, whose KL is exactly 0, which is also every row's floor):
// eval/scoring/paired_difference.h CompareRowWithAbove.
std::string FormatKvCurveTable(const KvCurveResult& result);
// The results' rows carry `vs_above` (null for the first): the row paired with the row above
// as `kl-diff` pairs two kl results (KL, top-1 and NLL; its default bootstrap).
ResultsEnvelope KvCurveResultsEnvelope(const KvCurveResult& result, const KvCurveOptions& options);

}  // namespace proctor
