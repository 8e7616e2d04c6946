#include "eval/kl_eval.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

#include "eval/candidate_forward.h"
#include "eval/per_position.h"
#include "eval/vocab_check.h"
#include "util/error.h"
#include "util/file.h"
#include "util/progress.h"

namespace proctor {
namespace {

constexpr const char* kComponent = "kl";

std::string FormatSci(double v) { return fmt::format("{:.3e}", v); }

}  // namespace

KlEvalResult EvaluateKlVsReferenceLogits(const KlEvalOptions& options) {
  const double start = MonotonicSeconds();
  if (options.chunk_size < 1) Fail(kComponent, "--chunk must be >= 1, got {}", options.chunk_size);
  if (options.max_seqs < 0) Fail(kComponent, "--n must be >= 0, got {}", options.max_seqs);
  KlEvalResult result;
  ResultsTimings& timings = result.timings;
  std::optional<ReferenceLogitsDump> opened;
  {
    ScopedSeconds io(&timings.io_seconds);
    opened.emplace(ReferenceLogitsDump::Open(options.reference_dir));
  }
  const ReferenceLogitsDump& dump = *opened;
  // What the dump's manifest records about the teacher's vocabulary (checked at the first chunk,
  // when the candidate's logits width is known).
  const bool check_vocabulary = options.check_tokenizer && !options.forward;
  VocabularyIdentity recorded, model;
  if (check_vocabulary) {
    ScopedSeconds load(&timings.load_seconds);
    recorded = RecordedVocabularyIdentity(
        nlohmann::json::parse(ReadFileToString(dump.ManifestPath())), dump.ManifestPath());
    model = ModelVocabularyIdentity(options.candidate, 0, "candidate");
  }
  ThreadPool& pool = options.pool != nullptr ? *options.pool : ThreadPool::Global();
  TeacherForcedLogits forward = options.forward;
  if (!forward) {
    ScopedSeconds load(&timings.load_seconds);
    forward = MakeCandidateForward(options.candidate, options.runtime);
  }

  result.label = dump.Label();
  result.candidate = options.candidate;
  result.reference = options.reference_dir.string();
  result.manifest = dump.manifest();
  result.positions_per_seq = dump.positions();
  result.chunk_size = options.chunk_size;
  result.threads = pool.num_threads();
  result.warnings = dump.warnings();
  const int64_t n_seqs =
      options.max_seqs > 0 ? std::min(options.max_seqs, dump.n_seqs()) : dump.n_seqs();
  const int64_t positions = dump.positions();

  Progress progress({.label = "kl",
                     .unit = "positions",
                     .total = static_cast<uint64_t>(n_seqs * positions),
                     .mode = options.quiet ? Progress::Mode::kQuiet : Progress::Mode::kAuto});
  std::vector<std::vector<PositionScore>> scores(static_cast<size_t>(n_seqs));
  ReferenceRecords records;
  double forward_and_callbacks = 0, callbacks = 0;
  for (int64_t s = 0; s < n_seqs; ++s) {
    std::vector<int32_t> tokens;
    {
      ScopedSeconds io(&timings.io_seconds);
      tokens = dump.Tokens(s);
    }
    const std::string where = fmt::format("'{}'", dump.SequencePath(s).string());
    auto& seq_scores = scores[s];
    seq_scores.resize(static_cast<size_t>(positions));
    int64_t next = 0;  // the first position not yet covered by a chunk
    const LogitsChunkFn on_chunk = [&](int64_t start_pos, const MatView& logits) {
      ScopedSeconds in_callback(&callbacks);
      if (logits.type != DType::kF32) {
        Fail(kComponent, "sequence {}: the forward gave {} logits; the scorer takes float32", s,
             Name(logits.type));
      }
      if (start_pos != next || logits.rows < 1 || start_pos + logits.rows > dump.ctx_len()) {
        Fail(kComponent,
             "sequence {}: the forward gave a chunk of {} rows at position {}, but the next "
             "uncovered position is {} (chunks must cover positions 0..{} in order, each once)",
             s, logits.rows, start_pos, next, dump.ctx_len() - 1);
      }
      if (result.candidate_vocab == 0) {
        result.candidate_vocab = logits.cols;
        if (check_vocabulary) {
          model.logits_vocab = logits.cols;
          CheckRecordedVocabulary(recorded, model);
        }
      }
      if (logits.cols != result.candidate_vocab) {
        Fail(kComponent, "sequence {}: a chunk has vocabulary {}, an earlier one {}", s,
             logits.cols, result.candidate_vocab);
      }
      next = start_pos + logits.rows;
      // The sequence's last position predicts no corpus token and has no record: drop it.
      const int64_t scored_end = std::min(next, positions);
      if (start_pos >= scored_end) return;
      const int64_t count = scored_end - start_pos;
      {
        ScopedSeconds io(&timings.io_seconds);
        dump.ReadRecords(s, start_pos, scored_end, &records);
      }
      {
        ScopedSeconds scoring(&timings.scoring_seconds);
        ScoreChunk(records, logits, count, where, pool, seq_scores.data() + start_pos,
                   tokens.data() + start_pos + 1);
      }
      progress.Advance(static_cast<uint64_t>(count));
    };
    {
      ScopedSeconds whole(&forward_and_callbacks);
      forward(std::span<const int32_t>(tokens), options.chunk_size, on_chunk);
    }
    if (next < positions) {
      Fail(kComponent,
           "sequence {}: the forward's chunks covered positions [0, {}) but the dump has "
           "records for [0, {})",
           s, next, positions);
    }
  }
  progress.Finish();
  timings.forward_seconds = std::max(0.0, forward_and_callbacks - callbacks);
  FinishKlRun(options.per_position,
              {.flags = 0,
               .positions_per_seq = static_cast<uint64_t>(positions),
               .top_k = static_cast<uint64_t>(dump.top_k()),
               .vocab = static_cast<uint64_t>(result.candidate_vocab)},
              scores, start, &result);
  return result;
}

void FinishKlRun(const std::filesystem::path& per_position, const PerPositionHeader& header,
                 const std::vector<std::vector<PositionScore>>& scores, double start,
                 KlEvalResult* result) {
  if (!per_position.empty()) {
    ScopedSeconds io(&result->timings.io_seconds);
    WritePerPositionFile(per_position, header, scores);
  }
  result->timings.total_seconds = MonotonicSeconds() - start;
  result->stats = AggregateKlRun(scores, result->timings.total_seconds);
  for (const auto& seq : scores) {
    if (seq.empty()) continue;
    double sum = 0;
    for (const auto& p : seq) sum += p.kl;
    result->sequence_mean_kl.push_back(sum / static_cast<double>(seq.size()));
  }
}

nlohmann::ordered_json KlEvalResultToJson(const KlEvalResult& r) {
  const auto summary = [](const DistributionSummary& d) {
    nlohmann::ordered_json j;
    j["mean"] = d.mean;
    j["standard_error"] = d.standard_error;
    j["median"] = d.median;
    j["p95"] = d.p95;
    j["p99"] = d.p99;
    j["max"] = d.max;
    return j;
  };
  const auto number_or_null = [](double v) {
    return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
  };
  nlohmann::ordered_json j;
  j["mode"] = r.mode;
  j["label"] = r.label;
  j["candidate"] = r.candidate;
  j["reference"] = {{"path", r.reference},
                    {"model", r.manifest.model},
                    {"corpus_sha256", r.manifest.corpus_sha256},
                    {"top_k", r.manifest.top_k},
                    {"ctx_len", r.manifest.ctx_len},
                    {"n_seqs", r.manifest.n_seqs},
                    {"positions_per_seq", r.positions_per_seq}};
  j["kl"] = summary(r.stats.kl);
  j["tail_kl"] = summary(r.stats.tail_kl);
  j["standard_error_over"] = "per-sequence means";
  j["top1_agreement"] = r.stats.top1_agreement;
  j["mean_captured_mass"] = r.stats.mean_mass;
  j["min_captured_mass"] = r.stats.min_mass;
  j["candidate_mean_nll"] = number_or_null(r.stats.candidate_mean_nll);
  j["candidate_ppl"] = number_or_null(std::exp(r.stats.candidate_mean_nll));
  j["teacher_mean_nll"] = number_or_null(r.stats.teacher_mean_nll);
  j["teacher_nll_positions"] = r.stats.teacher_nll_positions;
  j["positions"] = r.stats.positions;
  j["sequences"] = r.stats.sequences;
  j["sequence_mean_kl"] = r.sequence_mean_kl;
  j["candidate_vocab"] = r.candidate_vocab;
  j["chunk_size"] = r.chunk_size;
  j["elapsed_seconds"] = r.stats.elapsed_seconds;
  j["positions_per_second"] = r.stats.positions_per_second;
  j["threads"] = r.threads;
  j["scoring_positions_per_second"] =
      r.timings.scoring_seconds > 0
          ? static_cast<double>(r.stats.positions) / r.timings.scoring_seconds
          : 0.0;
  if (r.mode == "two-model") j["reference_forward_seconds"] = r.reference_forward_seconds;
  return j;
}

std::string FormatKlTable(const std::vector<KlEvalResult>& results) {
  std::string out;
  if (results.empty()) return out;
  out += fmt::format("reference: {}\n", results.front().label);
  size_t width = 9;
  for (const auto& r : results) width = std::max(width, r.candidate.size());
  out += fmt::format(
      "{:<{}}  {:>21}  {:>9}  {:>9}  {:>9}  {:>9}  {:>9}  {:>7}  {:>6}  {:>6}  {:>9}  {:>8}\n",
      "candidate", width, "KL mean +- SE", "median", "p95", "p99", "max", "tail KL", "top-1",
      "mass", "min m.", "positions", "pos/s");
  for (const auto& r : results) {
    const KlRunStats& s = r.stats;
    out += fmt::format(
        "{:<{}}  {:>21}  {:>9}  {:>9}  {:>9}  {:>9}  {:>9}  {:>7.4f}  {:>6.4f}  {:>6.4f}  {:>9}  "
        "{:>8.0f}\n",
        r.candidate, width,
        FormatSci(s.kl.mean) + " +- " + fmt::format("{:.1e}", s.kl.standard_error),
        FormatSci(s.kl.median), FormatSci(s.kl.p95), FormatSci(s.kl.p99), FormatSci(s.kl.max),
        FormatSci(s.tail_kl.mean), s.top1_agreement, s.mean_mass, s.min_mass, s.positions,
        s.positions_per_second);
  }
  return out;
}

}  // namespace proctor
