#include "eval/llama_kld_eval.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "eval/candidate_forward.h"
#include "model/load.h"
#include "text/tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/progress.h"

namespace proctor {
namespace {

constexpr const char* kComponent = "kl";

std::string DescribeChunkStart(int32_t token) {
  return token >= 0 ? fmt::format("token {} (BOS) at position 0 of every chunk", token)
                    : std::string("chunks evaluated as stored (no BOS substitution)");
}

}  // namespace

int32_t LlamaKldChunkStartToken(const std::string& model_spec) {
  const LocatedModel located = LocateModel(model_spec);
  const auto tokenizer = text::LoadTokenizer(located.path);
  const int32_t bos = tokenizer->BosId();
  if (bos < 0) return kChunkStartKeep;
  const std::vector<int32_t> ids = tokenizer->Encode("a", /*add_special_tokens=*/true);
  return !ids.empty() && ids.front() == bos ? bos : kChunkStartKeep;
}

LlamaKldEvalResult EvaluateKlVsLlamaKld(const LlamaKldEvalOptions& options) {
  const double start = MonotonicSeconds();
  if (options.chunk_size < 1) Fail(kComponent, "--chunk must be >= 1, got {}", options.chunk_size);
  if (options.max_chunks < 0) Fail(kComponent, "--n must be >= 0, got {}", options.max_chunks);
  LlamaKldEvalResult result;
  ResultsTimings& timings = result.timings;
  std::optional<LlamaKldFile> opened;
  {
    ScopedSeconds io(&timings.io_seconds);
    opened = LlamaKldFile::Open(options.base_file);
  }
  const LlamaKldFile& file = *opened;
  ThreadPool& pool = options.pool != nullptr ? *options.pool : ThreadPool::Global();
  result.base_file = options.base_file;
  result.candidate = options.candidate;
  result.n_ctx = file.n_ctx();
  result.n_vocab = file.n_vocab();
  result.n_chunk = file.n_chunk();
  result.chunk_size = options.chunk_size;
  result.threads = pool.num_threads();
  TeacherForcedLogits forward = options.forward;
  {
    ScopedSeconds load(&timings.load_seconds);
    result.chunk_start_token = options.chunk_start_token == kChunkStartFromModel
                                   ? LlamaKldChunkStartToken(options.candidate)
                                   : options.chunk_start_token;
    if (!forward) forward = MakeCandidateForward(options.candidate, options.runtime);
  }
  if (result.chunk_start_token >= file.n_vocab()) {
    Fail(kComponent, "the candidate's BOS id {} is outside the vocabulary [0, {}) of '{}'",
         result.chunk_start_token, file.n_vocab(), options.base_file.string());
  }
  const int64_t n_chunks =
      options.max_chunks > 0 ? std::min(options.max_chunks, file.n_chunk()) : file.n_chunk();
  result.chunks_scored = n_chunks;
  const int64_t first = file.first_position();
  const int64_t per_chunk = file.records_per_chunk();

  Progress progress({.label = "kl",
                     .unit = "positions",
                     .total = static_cast<uint64_t>(n_chunks * per_chunk),
                     .mode = options.quiet ? Progress::Mode::kQuiet : Progress::Mode::kAuto});
  // [n_chunks * per_chunk] in position order; summed in that order at the end.
  std::vector<LlamaPositionScore> scores(static_cast<size_t>(n_chunks * per_chunk));
  LlamaKldRecords records;
  double forward_and_callbacks = 0, callbacks = 0;
  for (int64_t c = 0; c < n_chunks; ++c) {
    const std::span<const int32_t> stored = file.Tokens(c);
    std::vector<int32_t> tokens(stored.begin(), stored.end());
    if (result.chunk_start_token >= 0) tokens[0] = result.chunk_start_token;
    const std::string where = fmt::format("'{}' chunk {}", options.base_file.string(), c);
    LlamaPositionScore* chunk_scores = scores.data() + c * per_chunk;
    int64_t next = 0;  // the first position not yet covered by a forward chunk
    const LogitsChunkFn on_chunk = [&](int64_t start_pos, const MatView& logits) {
      ScopedSeconds in_callback(&callbacks);
      if (logits.type != DType::kF32) {
        Fail(kComponent, "{}: the forward gave {} logits; the scorer takes float32", where,
             Name(logits.type));
      }
      if (start_pos != next || logits.rows < 1 || start_pos + logits.rows > file.n_ctx()) {
        Fail(kComponent,
             "{}: the forward gave a chunk of {} rows at position {}, but the next "
             "uncovered position is {}",
             where, logits.rows, start_pos, next);
      }
      if (logits.cols != file.n_vocab()) {
        Fail(kComponent,
             "'{}' was written for a vocabulary of {} (n_vocab) but candidate '{}' "
             "has {}: a different model family or tokenizer",
             options.base_file.string(), file.n_vocab(), options.candidate, logits.cols);
      }
      next = start_pos + logits.rows;
      // Scored positions: [first, n_ctx - 1).
      const int64_t lo = std::max(start_pos, first);
      const int64_t hi = std::min(next, file.n_ctx() - 1);
      if (lo >= hi) return;
      {
        ScopedSeconds io(&timings.io_seconds);
        file.ReadRecords(c, lo - first, hi - first, &records);
      }
      ScopedSeconds scoring(&timings.scoring_seconds);
      pool.ParallelFor(static_cast<size_t>(hi - lo), [&](size_t b, size_t e, int) {
        for (size_t i = b; i < e; ++i) {
          const int64_t pos = lo + static_cast<int64_t>(i);
          chunk_scores[pos - first] =
              ScoreLlamaPosition(logits.RowAs<float>(pos - start_pos), logits.cols,
                                 records.Row(static_cast<int64_t>(i)),
                                 stored[static_cast<size_t>(pos + 1)], where, pos);
        }
      });
      progress.Advance(static_cast<uint64_t>(hi - lo));
    };
    {
      ScopedSeconds whole(&forward_and_callbacks);
      forward(std::span<const int32_t>(tokens), options.chunk_size, on_chunk);
    }
    if (next < file.n_ctx() - 1) {
      Fail(kComponent,
           "{}: the forward's chunks covered positions [0, {}) but the file scores "
           "up to position {}",
           where, next, file.n_ctx() - 2);
    }
  }
  progress.Finish();
  timings.forward_seconds = std::max(0.0, forward_and_callbacks - callbacks);
  {
    ScopedSeconds scoring(&timings.scoring_seconds);
    std::vector<float> kld_values, p_diff_values;
    kld_values.reserve(scores.size());
    p_diff_values.reserve(scores.size());
    for (const LlamaPositionScore& s : scores) {
      result.sums.Add(s);
      kld_values.push_back(static_cast<float>(s.kld));
      p_diff_values.push_back(s.p_diff);
    }
    result.stats =
        ComputeLlamaKlStats(result.sums, std::move(kld_values), std::move(p_diff_values));
  }
  result.elapsed_seconds = MonotonicSeconds() - start;
  timings.total_seconds = result.elapsed_seconds;
  return result;
}

std::string FormatLlamaKldReport(const LlamaKldEvalResult& r) {
  std::string out = fmt::format(
      "base: {} (llama.cpp KL-divergence base: n_ctx {}, n_vocab {}, {} of {} chunks, "
      "positions {}..{} of each)\ncandidate: {}\n{}; {} positions scored in {:.1f} s\n"
      "statistics as llama-perplexity --kl-divergence computes them; PPL(base) is from the "
      "file's quantized log-probabilities\n\n",
      r.base_file.string(), r.n_ctx, r.n_vocab, r.chunks_scored, r.n_chunk,
      LlamaKldFirstPosition(r.n_ctx), r.n_ctx - 2, r.candidate,
      DescribeChunkStart(r.chunk_start_token), r.stats.count, r.elapsed_seconds);
  out += FormatLlamaKlStats(r.stats);
  return out;
}

nlohmann::ordered_json LlamaKlStatsToJson(const LlamaKlStats& s) {
  const auto pair = [](const ValueAndUncertainty& v) {
    return nlohmann::ordered_json::array({v.value, v.uncertainty});
  };
  nlohmann::ordered_json j;
  j["convention"] = "llama.cpp llama-perplexity --kl-divergence";
  j["positions"] = s.count;
  j["ppl"] = pair(s.ppl);  // [value, uncertainty], as printed
  j["ppl_base"] = pair(s.ppl_base);
  j["ppl_base_source"] = "the base file's quantized log-probabilities";
  j["ln_ppl_correlation"] = s.ln_ppl_correlation;
  j["ln_ppl_ratio"] = pair(s.ln_ppl_ratio);
  j["ppl_ratio"] = pair(s.ppl_ratio);
  j["ppl_diff"] = pair(s.ppl_diff);
  j["kld"] = {{"mean", pair(s.kld)},    {"max", s.kld_max},  {"p99.9", s.kld_p999},
              {"p99", s.kld_p99},       {"p95", s.kld_p95},  {"p90", s.kld_p90},
              {"median", s.kld_median}, {"p10", s.kld_p10},  {"p5", s.kld_p5},
              {"p1", s.kld_p1},         {"p0.1", s.kld_p01}, {"min", s.kld_min}};
  j["delta_p"] = {
      {"mean", pair(s.p_diff)}, {"max", s.p_diff_max},       {"p99.9", s.p_diff_p999},
      {"p99", s.p_diff_p99},    {"p95", s.p_diff_p95},       {"p90", s.p_diff_p90},
      {"p75", s.p_diff_p75},    {"median", s.p_diff_median}, {"p25", s.p_diff_p25},
      {"p10", s.p_diff_p10},    {"p5", s.p_diff_p5},         {"p1", s.p_diff_p1},
      {"p0.1", s.p_diff_p01},   {"min", s.p_diff_min},       {"rms", pair(s.p_diff_rms)}};
  j["same_top"] = pair(s.same_top);
  return j;
}

}  // namespace proctor
