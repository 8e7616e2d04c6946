// Scoring a candidate: the saved-teacher KL evaluation (against a reference-logits dump) and the
// two-model KL evaluation (teacher and candidate both resident, full-vocabulary KL).
//
// EvaluateKlVsReferenceLogits runs the candidate's teacher-forced forward over the dump's
// tokens (an injected forward, or the engine's for a model path), and scores each chunk as it
// arrives against the matching records, streamed from disk (FORMATS.md sections 2-3).
// EvaluateKlTwoModels runs both models over a corpus in lockstep, chunk by chunk, and scores
// the candidate's rows against the teacher's full rows. Both aggregate the same statistics and
// can write the per-position scores (eval/formats/per_position.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "eval/formats/per_position.h"
#include "eval/formats/ref_logits.h"
#include "eval/runners/prompt_set.h"
#include "eval/runners/results_json.h"
#include "eval/runners/shard.h"
#include "eval/runners/teacher_forced.h"
#include "eval/scoring/kl_score.h"
#include "eval/scoring/kl_stats.h"
#include "eval/scoring/kl_where.h"
#include "eval/scoring/paired_difference.h"
#include "model/runtime_model.h"
#include "util/thread_pool.h"

namespace proctor {

class EvalModel;  // eval/runners/eval_model.h

struct KlEvalOptions {
  std::filesystem::path reference_dir{};
  std::string candidate{};  // model spec (or a display name with an injected forward)
  int64_t max_seqs = 0;     // score the first N sequences; 0 = all
  // Set: score only this shard's share of those sequences (eval/runners/shard.h); the result's
  // statistics, per-sequence values and per-position file are over its sequences alone.
  std::optional<Shard> shard{};
  int64_t chunk_size = 512;       // positions per forward chunk
  TeacherForcedLogits forward{};  // empty: the engine's (EvalModel::Open(candidate))
  // Set: the candidate, already opened: its forward (unless `forward` is given) and its
  // vocabulary for the tokenizer check.
  std::shared_ptr<const EvalModel> opened{};
  RuntimeOptions runtime{};              // engine options for a loaded candidate
  ThreadPool* pool = nullptr;            // rows of a chunk are scored across it; null = Global()
  bool quiet = false;                    // no progress on stderr
  std::filesystem::path per_position{};  // write the per-position scores here (empty: no)
  int worst = 20;                        // KlEvalResult::where keeps this many worst positions
  // Compare the candidate's tokenizer with what the dump's manifest records (when the candidate
  // is a model on disk and the manifest records anything).
  bool check_tokenizer = true;
  bool describe_inputs = false;  // fill KlEvalResult::inputs (hashes every input file)
};

struct KlEvalResult {
  std::string mode = "saved-teacher";  // or "two-model"
  std::string label;  // ref-logits:<model> top<K> (<dir>) / two-model:<ref> (<corpus>)
  std::string candidate;
  std::string reference;             // the dump directory or the reference model spec
  ReferenceLogitsManifest manifest;  // two-model: model = reference spec, top_k = 0
  int64_t positions_per_seq = 0;     // scored positions per sequence
  int64_t candidate_vocab = 0;
  int64_t chunk_size = 0;
  int threads = 0;
  // A shard's run (KlEvalOptions::shard): which shard, its sequences of the run's seqs_total.
  std::optional<Shard> shard;
  ItemRange shard_seqs;
  int64_t seqs_total = 0;
  KlRunStats stats;
  std::vector<double> sequence_mean_kl;  // per scored sequence
  std::vector<double> sequence_top1;     // per scored sequence: top-1 agreement
  // Per scored sequence: the candidate's mean NLL over its positions with a known next token
  // (NaN when none).
  std::vector<double> sequence_mean_nll;
  KlWhere where;  // where the KL lives (eval/scoring/kl_where.h)
  std::vector<std::string> warnings;
  ResultsTimings timings;                // forward / scoring / I/O split of the run
  double reference_forward_seconds = 0;  // two-model: the teacher's share of forward_seconds
  // The decode path: the one-token forward steps each arm ran (the scored ones and each
  // sequence's last token) and the candidate's seconds in them (its decode speed).
  int64_t decode_steps_run = 0;
  double candidate_decode_seconds = 0;
  // The decode path over --prompts: the file, its rows, the prompts scored, skipped (too short)
  // and cut (to --seq tokens), their shortest and longest length; null over a corpus.
  nlohmann::ordered_json prompts = nullptr;
  // The inputs as the results file lists them (with describe_inputs; eval/runners/results_json.h).
  nlohmann::ordered_json inputs = nlohmann::ordered_json::array();
};

KlEvalResult EvaluateKlVsReferenceLogits(const KlEvalOptions& options);

// The common end of both evaluations: writes the per-position file (when `per_position` is not
// empty) with `header` and `scores` [sequence][position], then sets result->timings.total_seconds
// (since `start`, a MonotonicSeconds() value), result->stats, the per-sequence means and
// result->where (its `worst` worst positions).
void FinishKlRun(const std::filesystem::path& per_position, const PerPositionHeader& header,
                 const std::vector<std::vector<PositionScore>>& scores, double start, int worst,
                 KlEvalResult* result);

struct KlTwoModelOptions {
  std::string reference{};  // teacher model spec (or a display name with `reference_forward`)
  std::string candidate{};
  std::filesystem::path corpus_dir{};
  int64_t max_seqs = 0;  // score the first N sequences; 0 = all
  // Set: score only this shard's share of the sequences or prompts (as KlEvalOptions::shard).
  std::optional<Shard> shard{};
  int64_t chunk_size = 512;
  // > 0: the decode path (serving-decode KL). Of each sequence of L tokens, positions
  // [0, L-1-S) are prefilled in chunks, then the last S positions that predict a corpus token
  // run one token per forward step and only they are scored. A quantized candidate cache
  // (runtime.kv affine) is converted when the prefill ends (its start becomes L-1-S): the
  // decode steps read the quantized cache, as a server's do.
  int64_t decode_steps = 0;
  // The decode path over prompts of their own lengths instead of the corpus' sequences
  // (eval/runners/prompt_set.h): `prompts` when already read, else `prompts_file` read with the
  // reference's tokenizer (min_tokens = decode_steps + 2). A prompt of L tokens is prefilled to
  // L-1-S, where its candidate cache converts.
  std::shared_ptr<const PromptSet> prompts{};
  std::filesystem::path prompts_file{};
  PromptSetOptions prompt_options{};
  TeacherForcedLogits reference_forward{};  // empty: the engine's (EvalModel::Open(reference))
  TeacherForcedLogits candidate_forward{};
  // Set: this opened model runs both sides (the specs only name them), e.g. one load for many
  // KV arms (eval/runners/kv_curve.h).
  std::shared_ptr<const EvalModel> opened{};
  RuntimeOptions runtime{};            // engine options of the candidate
  RuntimeOptions reference_runtime{};  // and of the reference (self A/B: same model, two values)
  ThreadPool* pool = nullptr;
  bool quiet = false;
  std::filesystem::path per_position{};
  int worst = 20;                // KlEvalResult::where keeps this many worst positions
  bool check_tokenizer = true;   // compare tokenizers (both models, and the corpus' record)
  bool describe_inputs = false;  // fill KlEvalResult::inputs
};

// Both models run teacher-forced over the corpus' tokens (src/eval/formats/corpus.h) in lockstep;
// every position but the last of each sequence is scored over the full vocabulary. Vocabularies
// must match (logits width; tokenizers when both load) or it is an error naming both.
KlEvalResult EvaluateKlTwoModels(const KlTwoModelOptions& options);
// Its result's label: "two-model:<reference> full-vocab (<corpus>)", or on the decode path
// "decode:<reference> full-vocab, last S steps (<corpus> | prompts '<file>')".
std::string KlTwoModelLabel(const KlTwoModelOptions& options);

// Every statistic of a result (the "results" object of the results JSON, docs/results-json.md).
nlohmann::ordered_json KlEvalResultToJson(const KlEvalResult& result);
// The inverse for what a table and a pairing need (everything but `where`, the warnings, the
// timings and the inputs); Error naming `source` when a field is missing or of the wrong type.
KlEvalResult KlEvalResultFromJson(const nlohmann::json& json, const std::string& source);
// The whole results file of a saved-teacher or two-model run (`proctor kl --json`): the inputs
// the run described, its settings, every statistic, the timing split and the per-position file.
ResultsEnvelope KlResultsEnvelope(const KlEvalResult& result, const KlEvalOptions& options);
ResultsEnvelope KlResultsEnvelope(const KlEvalResult& result, const KlTwoModelOptions& options);
// A readable table, one row per result (same reference). With a `floor` (the dump's, see
// eval/runners/dump_floor.h), it comes first and every row gets its paired difference against it
// and a verdict ("at floor", "worse", "better").
std::string FormatKlTable(const std::vector<KlEvalResult>& results,
                          const KlEvalResult* floor = nullptr);
// What FormatKlTable's columns mean (docs/statistics.md), for the mode of `results` (and the
// floor's columns when the table has them).
std::string KlLegend(const std::vector<KlEvalResult>& results, bool with_floor = false);

}  // namespace proctor
