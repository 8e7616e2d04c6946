// Scoring a candidate against a reference-logits dump: the saved-teacher KL evaluation.
//
// EvaluateKlVsReferenceLogits runs the candidate's teacher-forced forward over the dump's
// tokens (an injected forward, or the engine's for a model path), and scores each chunk as it
// arrives against the matching records, streamed from disk (FORMATS.md sections 2-3).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/kl_score.h"
#include "eval/kl_stats.h"
#include "eval/ref_logits.h"
#include "eval/teacher_forced.h"
#include "model/runtime_model.h"
#include "util/thread_pool.h"

namespace proctor {

struct KlEvalOptions {
  std::filesystem::path reference_dir{};
  std::string candidate{};        // model path (or a display name with an injected forward)
  int64_t max_seqs = 0;           // score the first N sequences; 0 = all
  int64_t chunk_size = 512;       // positions per forward chunk
  TeacherForcedLogits forward{};  // empty: MakeCandidateForward(candidate, runtime)
  RuntimeOptions runtime{};       // engine options for a loaded candidate
  ThreadPool* pool = nullptr;     // rows of a chunk are scored across it; null = Global()
  bool quiet = false;             // no progress on stderr
};

struct KlEvalResult {
  std::string label;              // ref-logits:<model> top<K> (<dir>)
  std::string candidate;
  ReferenceLogitsManifest manifest;
  int64_t positions_per_seq = 0;  // records per sequence in the dump
  int64_t candidate_vocab = 0;
  int64_t chunk_size = 0;
  int threads = 0;
  KlRunStats stats;
  std::vector<double> sequence_mean_kl;  // per scored sequence
  std::vector<std::string> warnings;
};

KlEvalResult EvaluateKlVsReferenceLogits(const KlEvalOptions& options);

// Every statistic, the label, proctor's version and the thread count.
nlohmann::ordered_json KlEvalResultToJson(const KlEvalResult& result);
// A readable table, one row per result (same reference).
std::string FormatKlTable(const std::vector<KlEvalResult>& results);

}  // namespace proctor
