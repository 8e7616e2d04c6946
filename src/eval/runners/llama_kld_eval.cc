#include "eval/runners/llama_kld_eval.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "eval/formats/llama_kld.h"
#include "eval/runners/eval_model.h"
#include "eval/runners/logits_chunks.h"
#include "util/error.h"

namespace proctor {
namespace {

constexpr const char* kComponent = "kl";

std::string DescribeChunkStart(int32_t token) {
  return token >= 0 ? fmt::format("token {} (BOS) at position 0 of every chunk", token)
                    : std::string("chunks evaluated as stored (no BOS substitution)");
}

}  // namespace

int32_t LlamaKldChunkStartToken(const text::Tokenizer* tokenizer) {
  if (tokenizer == nullptr) return kChunkStartKeep;
  const int32_t bos = tokenizer->BosId();
  if (bos < 0) return kChunkStartKeep;
  const std::vector<int32_t> ids = tokenizer->Encode("a", /*add_special_tokens=*/true);
  return !ids.empty() && ids.front() == bos ? bos : kChunkStartKeep;
}

int32_t ChunkStartOf(const EvalModel& model, const std::string& role) {
  if (model.tokenizer() == nullptr) {
    Fail(kComponent,
         "{} '{}' has no tokenizer, so whether llama.cpp evaluates each chunk from BOS is "
         "unknown: give the model with its tokenizer (tokenizer.json beside the weights, or the "
         ".gguf)",
         role, model.spec());
  }
  return LlamaKldChunkStartToken(model.tokenizer());
}

bool IsLlamaKldReference(const std::filesystem::path& path) {
  std::error_code ec;
  if (path.empty() || !std::filesystem::is_regular_file(path, ec)) return false;
  return path.extension() == ".kld" || LooksLikeLlamaKld(path);
}

LlamaKldEvalResult EvaluateKlVsLlamaKld(const LlamaKldEvalOptions& options) {
  const double start = MonotonicSeconds();
  CheckChunkSize(options.chunk_size, kComponent);
  if (options.max_chunks < 0) Fail(kComponent, "--n must be >= 0, got {}", options.max_chunks);
  LlamaKldEvalResult result;
  ResultsTimings& timings = result.timings;
  std::optional<LlamaKldFile> opened;
  {
    ScopedSeconds io(&timings.io_seconds);
    opened = LlamaKldFile::Open(options.base_file);
  }
  const LlamaKldFile& file = *opened;
  result.base_file = options.base_file;
  result.candidate = options.candidate;
  result.n_ctx = file.n_ctx();
  result.n_vocab = file.n_vocab();
  result.n_chunk = file.n_chunk();
  result.chunk_size = options.chunk_size;
  TeacherForcedLogits forward = options.forward;
  std::shared_ptr<const EvalModel> model;
  {
    ScopedSeconds load(&timings.load_seconds);
    if (!forward || options.chunk_start_token == kChunkStartFromModel) {
      model = EvalModel::Open(options.candidate);
    }
    result.chunk_start_token = options.chunk_start_token == kChunkStartFromModel
                                   ? ChunkStartOf(*model, "candidate")
                                   : options.chunk_start_token;
    if (!forward) forward = model->Forward(options.runtime);
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

  LogitsChunkDriver driver({{fmt::format("candidate '{}'", options.candidate), forward}},
                           {.component = kComponent,
                            .chunk_size = options.chunk_size,
                            .progress_label = "kl",
                            .total_positions = static_cast<uint64_t>(n_chunks * per_chunk),
                            .pool = options.pool,
                            .quiet = options.quiet});
  result.threads = driver.pool().num_threads();
  driver.OnVocabulary([&](int64_t vocab) {
    if (vocab != file.n_vocab()) {
      Fail(kComponent,
           "'{}' was written for a vocabulary of {} (n_vocab) but candidate '{}' has {}: a "
           "different model family or tokenizer",
           options.base_file.string(), file.n_vocab(), options.candidate, vocab);
    }
  });
  // [n_chunks * per_chunk] in position order; summed in that order at the end.
  std::vector<LlamaPositionScore> scores(static_cast<size_t>(n_chunks * per_chunk));
  LlamaKldRecords records;
  for (int64_t c = 0; c < n_chunks; ++c) {
    const std::span<const int32_t> stored = file.Tokens(c);
    std::vector<int32_t> tokens(stored.begin(), stored.end());
    if (result.chunk_start_token >= 0) tokens[0] = result.chunk_start_token;
    const std::string where = fmt::format("'{}' chunk {}", options.base_file.string(), c);
    LlamaPositionScore* chunk_scores = scores.data() + c * per_chunk;
    // Scored positions: [first, n_ctx - 1).
    driver.RunSequence(tokens, file.n_ctx() - 1, where, [&](const LogitsChunk& chunk) {
      const int64_t lo = std::max(chunk.start, first);
      const int64_t hi = chunk.start + chunk.scored;
      if (lo >= hi) return;
      {
        ScopedSeconds io(&timings.io_seconds);
        file.ReadRecords(c, lo - first, hi - first, &records);
      }
      ScopedSeconds scoring(&timings.scoring_seconds);
      const MatView& logits = chunk[0];
      driver.pool().ParallelFor(static_cast<size_t>(hi - lo), [&](size_t b, size_t e, int) {
        for (size_t i = b; i < e; ++i) {
          const int64_t pos = lo + static_cast<int64_t>(i);
          chunk_scores[pos - first] =
              ScoreLlamaPosition(logits.RowAs<float>(pos - chunk.start), logits.cols,
                                 records.Row(static_cast<int64_t>(i)),
                                 stored[static_cast<size_t>(pos + 1)], where, pos);
        }
      });
    });
  }
  driver.Finish();
  timings.forward_seconds = driver.forward_seconds();
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
  DescribeInputsAfterRun(options.describe_inputs, timings, [&] {
    result.inputs.push_back(DescribeFileInput("reference_llama_kld", options.base_file));
    result.inputs.push_back(EvalModel::Describe(model.get(), "candidate", options.candidate));
  });
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

ResultsEnvelope LlamaKldResultsEnvelope(const LlamaKldEvalResult& result,
                                        const LlamaKldEvalOptions& options) {
  ResultsEnvelope env{.command = "kl", .threads = result.threads};
  env.inputs = result.inputs;
  env.settings = {{"mode", "llama.cpp-kld"},
                  {"chunk_size", options.chunk_size},
                  {"max_chunks", options.max_chunks},
                  {"compute", std::string(ComputeModeName(options.runtime.compute))},
                  {"kv", options.runtime.kv.Name()},
                  {"chunk_start_token", result.chunk_start_token}};
  env.results = LlamaKlStatsToJson(result.stats);
  env.results["base"] = {{"n_ctx", result.n_ctx},
                         {"n_vocab", result.n_vocab},
                         {"n_chunk", result.n_chunk},
                         {"chunks_scored", result.chunks_scored},
                         {"first_position", LlamaKldFirstPosition(result.n_ctx)}};
  env.timings = result.timings;
  return env;
}

}  // namespace proctor
