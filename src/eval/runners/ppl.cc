#include "eval/runners/ppl.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "eval/formats/corpus.h"
#include "eval/runners/eval_model.h"
#include "eval/runners/logits_chunks.h"
#include "eval/runners/token_stream.h"
#include "eval/runners/vocab_check.h"
#include "ops/sum_exp.h"
#include "text/tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/file.h"
#include "util/sha256.h"

namespace proctor {
namespace {

constexpr const char* kComponent = "ppl";
constexpr int64_t kDefaultSequenceLength = 512;

// Sample standard deviation (ddof 1) around `mean`; NaN for fewer than 2 values.
double SampleStd(std::span<const double> values, double mean) {
  if (values.size() < 2) return std::numeric_limits<double>::quiet_NaN();
  double sum_sq = 0;
  for (double v : values) sum_sq += (v - mean) * (v - mean);
  return std::sqrt(sum_sq / static_cast<double>(values.size() - 1));
}

double Mean(std::span<const double> values) {
  double sum = 0;
  for (double v : values) sum += v;
  return values.empty() ? 0.0 : sum / static_cast<double>(values.size());
}

bool IsCorpusDir(const std::filesystem::path& path) {
  return std::filesystem::is_directory(path) && std::filesystem::exists(path / "manifest.json");
}

// stats and row_mean_nll of nlls [rows, per_row] (nothing for no rows: a shard may have none).
void SetStatistics(std::span<const double> nlls, int64_t per_row, PplResult& r) {
  r.row_mean_nll.clear();
  if (nlls.empty()) return;
  r.stats = PerplexityFromNlls(nlls, per_row);
  for (int64_t row = 0; row < r.stats.rows; ++row) {
    r.row_mean_nll.push_back(
        Mean(nlls.subspan(static_cast<size_t>(row * per_row), static_cast<size_t>(per_row))));
  }
}

// The envelope's settings: the run's, the compute mode and the KV cache scheme.
nlohmann::ordered_json EnvelopeSettings(const PplResult& result, const RuntimeOptions& runtime) {
  nlohmann::ordered_json settings = PplSettingsToJson(result);
  settings["compute"] = std::string(ComputeModeName(runtime.compute));
  settings["kv"] = runtime.kv.Name();
  return settings;
}

// A ppl partial results file, read back: every PplResult field a merge or a rerun needs, with
// the envelope's settings. Errors name the file.
struct PplPartial {
  std::filesystem::path path;
  nlohmann::json envelope;
  PplResult result;
};

PplPartial ReadPplPartial(const std::filesystem::path& path, std::string_view component) {
  PplPartial p{.path = path, .envelope = ReadPartialEnvelope(path, "ppl", component), .result = {}};
  const nlohmann::json& env = p.envelope;
  try {
    const nlohmann::json& j = env.at("results");
    const nlohmann::json& settings = env.at("settings");
    PplResult& r = p.result;
    r.model = j.at("model").get<std::string>();
    r.tokenizer = j.at("tokenizer").get<std::string>();
    r.data = j.at("data");
    r.sequence_length = settings.at("sequence_length").get<int64_t>();
    r.num_samples = settings.at("num_samples").get<int64_t>();
    r.seed = settings.at("seed").get<uint32_t>();
    r.batch_size = settings.at("batch_size").get<int64_t>();
    r.chunk_size = settings.at("chunk_size").get<int64_t>();
    r.rows_available = j.at("rows_available").get<int64_t>();
    r.data_rows_used = j.at("data_rows_used").get<int64_t>();
    r.rows_sha256 = j.at("rows_sha256").get<std::string>();
    r.data_seconds = j.at("data_seconds").get<double>();
    r.threads = j.at("threads").get<int>();
    r.timings = ResultsTimingsFromJson(env.at("timings"));
    r.warnings = env.at("warnings").get<std::vector<std::string>>();
    r.inputs = env.at("inputs");
    const nlohmann::json& shard = j.at("shard");
    r.shard =
        Shard{.index = shard.at("index").get<int64_t>(), .count = shard.at("count").get<int64_t>()};
    r.shard_rows = {.first = shard.at("rows").at(0).get<int64_t>(),
                    .end = shard.at("rows").at(1).get<int64_t>()};
    r.rows_total = shard.at("rows_total").get<int64_t>();
    r.nlls = j.at("nlls").get<std::vector<double>>();
  } catch (const nlohmann::json::exception& e) {
    Fail(component, "'{}': a field of the partial ppl result is missing or malformed: {}",
         path.string(), e.what());
  }
  const PplResult& r = p.result;
  if (r.sequence_length < 2) {
    Fail(component, "'{}': rows of {} tokens are impossible (at least 2)", path.string(),
         r.sequence_length);
  }
  CheckShardHolds(*r.shard, r.rows_total, r.shard_rows, "rows", path.string(), component);
  const auto nlls_expected = static_cast<size_t>(r.shard_rows.size() * (r.sequence_length - 1));
  if (r.nlls.size() != nlls_expected) {
    Fail(component,
         "'{}': shard {} holds rows [{}, {}) of {} tokens, which need {} NLLs; it has {}",
         path.string(), r.shard->Name(), r.shard_rows.first, r.shard_rows.end, r.sequence_length,
         nlls_expected, r.nlls.size());
  }
  return p;
}

}  // namespace

std::vector<int32_t> PackPerplexityRows(std::span<const int32_t> stream, int64_t sequence_length,
                                        int64_t num_samples) {
  if (sequence_length < 1) {
    Fail(kComponent, "--ctx-len must be >= 1, got {}", sequence_length);
  }
  if (num_samples == 0 || num_samples < -1) {
    Fail(kComponent, "--n-seqs must be positive or -1 (all rows), got {}", num_samples);
  }
  int64_t rows = static_cast<int64_t>(stream.size()) / sequence_length;
  if (num_samples > 0) rows = std::min(rows, num_samples);
  const auto n = static_cast<size_t>(rows * sequence_length);
  return std::vector<int32_t>(stream.begin(), stream.begin() + static_cast<std::ptrdiff_t>(n));
}

double NextTokenNll(std::span<const float> logits, int32_t target) {
  if (target < 0 || static_cast<size_t>(target) >= logits.size()) {
    Fail(kComponent, "target token {} is outside the model's vocabulary [0, {})", target,
         logits.size());
  }
  // Branch-free so the compiler vectorizes it: a NaN compares unequal to itself.
  float max = -std::numeric_limits<float>::infinity();
  int nan = 0;
  for (const float x : logits) {
    nan |= static_cast<int>(x != x);
    max = x > max ? x : max;
  }
  if (nan || !std::isfinite(max)) {
    Fail(kComponent, "the model's logits hold {} (max {}): perplexity is undefined",
         nan ? "NaN" : "no finite value", max);
  }
  const double sum =
      SumExpShifted(logits.data(), static_cast<int64_t>(logits.size()), max);  // >= 1
  return static_cast<double>(max) + std::log(sum) - static_cast<double>(logits[target]);
}

void NextTokenNlls(const MatView& logits, int64_t count, std::span<const int32_t> targets,
                   ThreadPool& pool, double* out) {
  CHECK(count <= logits.rows && static_cast<size_t>(count) <= targets.size());
  pool.ParallelFor(static_cast<size_t>(count), [&](size_t b, size_t e, int) {
    for (size_t i = b; i < e; ++i) {
      out[i] = NextTokenNll(std::span<const float>(logits.RowAs<float>(static_cast<int64_t>(i)),
                                                   static_cast<size_t>(logits.cols)),
                            targets[i]);
    }
  });
}

PerplexityStats PerplexityFromNlls(std::span<const double> nlls, int64_t positions_per_row) {
  CHECK_MSG(positions_per_row > 0 && nlls.size() % static_cast<size_t>(positions_per_row) == 0,
            "nlls {} per row {}", nlls.size(), positions_per_row);
  PerplexityStats s;
  s.positions = static_cast<int64_t>(nlls.size());
  s.rows = s.positions / positions_per_row;
  if (s.positions == 0) return s;
  s.mean_nll = Mean(nlls);
  s.nll_std = SampleStd(nlls, s.mean_nll);
  s.ppl = std::exp(s.mean_nll);
  s.standard_error = s.ppl * s.nll_std / std::sqrt(static_cast<double>(s.positions));
  std::vector<double> row_means(static_cast<size_t>(s.rows));
  for (int64_t r = 0; r < s.rows; ++r) {
    row_means[r] = Mean(nlls.subspan(static_cast<size_t>(r * positions_per_row),
                                     static_cast<size_t>(positions_per_row)));
  }
  // Equal-length rows: the mean of row means is mean_nll, so the delta method applies alike.
  s.standard_error_rows =
      s.ppl * SampleStd(row_means, s.mean_nll) / std::sqrt(static_cast<double>(s.rows));
  return s;
}

PerplexityScores ScorePerplexityRows(std::span<const int32_t> rows, int64_t sequence_length,
                                     const TeacherForcedLogits& forward,
                                     const PerplexityScoreOptions& options) {
  if (sequence_length < 2) {
    Fail(kComponent, "--ctx-len must be >= 2 to score a next token, got {}", sequence_length);
  }
  CHECK(rows.size() % static_cast<size_t>(sequence_length) == 0);
  if (options.batch_size < 1) {
    Fail(kComponent, "--batch-size must be >= 1, got {}", options.batch_size);
  }
  const int64_t n_rows = static_cast<int64_t>(rows.size()) / sequence_length;
  const int64_t positions = sequence_length - 1;  // scored per row
  PerplexityScores out;
  out.nlls.assign(static_cast<size_t>(n_rows * positions), 0.0);
  LogitsChunkDriver driver({{"the model", forward}},
                           {.component = kComponent,
                            .chunk_size = options.chunk_size,
                            .progress_label = "ppl",
                            .total_positions = static_cast<uint64_t>(n_rows * positions),
                            .pool = options.pool,
                            .quiet = options.quiet});
  for (int64_t r = 0; r < n_rows; ++r) {
    const auto row = rows.subspan(static_cast<size_t>(r * sequence_length),
                                  static_cast<size_t>(sequence_length));
    double* row_nll = out.nlls.data() + r * positions;
    // mlx_lm's way: the row's last token is only a target, never an input.
    driver.RunSequence(row.first(static_cast<size_t>(positions)), positions,
                       fmt::format("row {}", r), [&](const LogitsChunk& chunk) {
                         NextTokenNlls(chunk[0], chunk.scored,
                                       row.subspan(static_cast<size_t>(chunk.start + 1)),
                                       driver.pool(), row_nll + chunk.start);
                       });
  }
  driver.Finish();
  out.forward_seconds = driver.forward_seconds();
  out.scoring_seconds = driver.callback_seconds();
  return out;
}

PplResult EvaluatePerplexity(const PplOptions& options) {
  const double start = MonotonicSeconds();
  PplResult result;
  result.model = options.model;
  result.num_samples = options.num_samples;
  result.seed = options.seed;
  result.batch_size = options.batch_size;
  result.chunk_size = options.chunk_size;
  CheckChunkSize(options.chunk_size, kComponent);
  if (options.data.empty()) Fail(kComponent, "no --data given");
  if (options.num_samples == 0 || options.num_samples < -1) {
    Fail(kComponent, "--n-seqs must be positive or -1 (all rows), got {}", options.num_samples);
  }
  const bool corpus_data = IsCorpusDir(options.data.front());
  if (corpus_data && options.data.size() != 1) {
    Fail(kComponent, "--data '{}' is a corpus directory; give it alone",
         options.data.front().string());
  }

  // The model, opened once: its forward (unless injected), its vocabulary against a corpus'
  // record, and its tokenizer for text data (unless --tokenizer names another).
  std::shared_ptr<const EvalModel> model;
  const bool needs_model_tokenizer = !corpus_data && options.tokenizer.empty();
  if (!options.forward || needs_model_tokenizer) {
    ScopedSeconds load(&result.timings.load_seconds);
    model = EvalModel::Open(options.model);
  }

  std::vector<int32_t> rows;
  std::optional<Corpus> corpus;
  result.data = nlohmann::ordered_json::array();
  if (corpus_data) {
    // A tokenized corpus: its sequences are the rows (already shuffled and packed).
    {
      ScopedSeconds io(&result.timings.io_seconds);
      corpus.emplace(ReadCorpus(options.data.front()));
    }
    result.data_seconds = result.timings.io_seconds;
    if (model && !options.forward) {  // a model with another tokenizer than the corpus' is an error
      CheckRecordedVocabulary(RecordedVocabularyIdentity(*corpus), model->Identity("model"));
    }
    if (options.sequence_length != 0 && options.sequence_length != corpus->ctx_len) {
      Fail(kComponent, "--ctx-len {} differs from the corpus' ctx_len {} ('{}')",
           options.sequence_length, corpus->ctx_len, corpus->dir.string());
    }
    result.sequence_length = corpus->ctx_len;
    result.rows_available = corpus->n_seqs;
    rows = PackPerplexityRows(corpus->tokens, corpus->ctx_len, options.num_samples);
    result.data.push_back({{"path", corpus->dir.string()},
                           {"kind", "corpus"},
                           {"tokens_sha256", corpus->tokens_sha256},
                           {"tokenizer", corpus->tokenizer},
                           {"n_seqs", corpus->n_seqs},
                           {"ctx_len", corpus->ctx_len}});
  } else {
    result.sequence_length =
        options.sequence_length != 0 ? options.sequence_length : kDefaultSequenceLength;
    if (result.sequence_length < 2) {
      Fail(kComponent, "--ctx-len must be >= 2, got {}", result.sequence_length);
    }
    std::unique_ptr<text::Tokenizer> own;  // --tokenizer
    const text::Tokenizer* tokenizer = nullptr;
    {
      ScopedSeconds load(&result.timings.load_seconds);
      if (!options.tokenizer.empty()) {
        own = text::LoadTokenizer(options.tokenizer);
        tokenizer = own.get();
        result.tokenizer_path = options.tokenizer;
      } else {
        tokenizer = model->tokenizer();
        result.tokenizer_path = model->path();
        if (tokenizer == nullptr) {
          Fail(kComponent,
               "model '{}' has no tokenizer (no tokenizer.json beside its weights, no vocabulary "
               "in its .gguf): pass --tokenizer, or a corpus directory as --data",
               options.model);
        }
      }
    }
    result.tokenizer = tokenizer->Describe();
    const double t0 = MonotonicSeconds();
    const TextRows text_rows = ReadTextRows(options.data);
    const int64_t needed =
        options.num_samples > 0 ? options.num_samples * result.sequence_length : -1;
    const std::filesystem::path& tokenizer_path = result.tokenizer_path;
    const TokenStream stream =
        BuildTokenStream(text_rows, *tokenizer,
                         {.seed = options.seed,
                          .tokens_needed = needed,
                          .chat_model_dir = std::filesystem::is_directory(tokenizer_path)
                                                ? tokenizer_path
                                                : tokenizer_path.parent_path(),
                          .chat_now = options.chat_now,
                          .quiet = options.quiet});
    result.data_rows_used = stream.rows_used;
    result.rows_available = static_cast<int64_t>(stream.tokens.size()) / result.sequence_length;
    rows = PackPerplexityRows(stream.tokens, result.sequence_length, options.num_samples);
    for (const TextSource& s : text_rows.sources) {
      result.data.push_back({{"path", s.path.string()},
                             {"kind", "text"},
                             {"sha256", s.sha256},
                             {"bytes", s.bytes},
                             {"rows", s.rows}});
    }
    if (rows.empty()) {
      Fail(kComponent,
           "not enough text: one row of --ctx-len {} needs {} tokens, but the {} row(s) "
           "of the data gave {}",
           result.sequence_length, result.sequence_length, text_rows.rows.size(),
           stream.tokens.size());
    }
    result.data_seconds = MonotonicSeconds() - t0;
  }
  const int64_t n_rows = static_cast<int64_t>(rows.size()) / result.sequence_length;
  if (!corpus_data && options.num_samples > 0 && n_rows < options.num_samples) {
    result.warnings.push_back(
        fmt::format("the data fills {} rows of {} tokens, fewer than --n-seqs {}: scoring all {}",
                    n_rows, result.sequence_length, options.num_samples, n_rows));
  }
  result.rows_sha256 = Sha256Hex(std::span<const uint8_t>(
      reinterpret_cast<const uint8_t*>(rows.data()), rows.size() * sizeof(int32_t)));
  // A shard scores its share of the rows; a rerun of a finished shard reads its file back.
  std::span<const int32_t> scored = rows;
  result.rows_total = n_rows;
  if (options.shard) {
    result.shard = options.shard;
    result.shard_rows = ShardItems(*options.shard, n_rows);
    scored = scored.subspan(static_cast<size_t>(result.shard_rows.first * result.sequence_length),
                            static_cast<size_t>(result.shard_rows.size() * result.sequence_length));
    if (!options.finished_partial.empty() && std::filesystem::exists(options.finished_partial)) {
      PplPartial done = ReadPplPartial(options.finished_partial, kComponent);
      const bool same =
          done.result.shard == options.shard && done.result.rows_sha256 == result.rows_sha256 &&
          done.result.model == result.model &&
          done.envelope.at("settings") == nlohmann::json(EnvelopeSettings(result, options.runtime));
      if (same) {
        done.result.reused = true;
        return done.result;
      }
    }
  }

  TeacherForcedLogits forward = options.forward;
  if (!forward) {
    ScopedSeconds load(&result.timings.load_seconds);
    forward = model->Forward(options.runtime);
  }
  ThreadPool& pool = options.pool != nullptr ? *options.pool : ThreadPool::Global();
  result.threads = pool.num_threads();
  PerplexityScores scores = ScorePerplexityRows(scored, result.sequence_length, forward,
                                                {.chunk_size = options.chunk_size,
                                                 .batch_size = options.batch_size,
                                                 .pool = &pool,
                                                 .quiet = options.quiet});
  SetStatistics(scores.nlls, result.sequence_length - 1, result);
  result.timings.forward_seconds = scores.forward_seconds;
  result.timings.scoring_seconds = scores.scoring_seconds;
  const double scored_seconds = scores.forward_seconds + scores.scoring_seconds;
  result.tokens_per_second =
      scored_seconds > 0 ? static_cast<double>(result.stats.positions) / scored_seconds : 0;
  if (result.shard) result.nlls = std::move(scores.nlls);
  result.timings.total_seconds = MonotonicSeconds() - start;
  DescribeInputsAfterRun(options.describe_inputs, result.timings, [&] {
    result.inputs.push_back(EvalModel::Describe(model.get(), "model", options.model));
    if (corpus) {
      result.inputs.push_back(DescribeCorpusInput("data", *corpus));
    } else {
      for (const auto& d : options.data) result.inputs.push_back(DescribeFileInput("data", d));
    }
    if (!options.tokenizer.empty() && std::filesystem::is_regular_file(options.tokenizer)) {
      result.inputs.push_back(DescribeFileInput("tokenizer", options.tokenizer));
    }
  });
  return result;
}

ResultsEnvelope PplResultsEnvelope(const PplResult& result, const PplOptions& options) {
  ResultsEnvelope env{.command = "ppl", .threads = result.threads};
  env.inputs = result.inputs;
  env.settings = EnvelopeSettings(result, options.runtime);
  env.results = PplResultToJson(result);
  env.timings = result.timings;
  env.warnings = result.warnings;
  return env;
}

nlohmann::ordered_json PplResultToJson(const PplResult& r) {
  nlohmann::ordered_json j;
  j["model"] = r.model;
  j["tokenizer"] = r.tokenizer;
  j["data"] = r.data;
  j["rows_available"] = r.rows_available;
  j["data_rows_used"] = r.data_rows_used;
  j["rows_sha256"] = r.rows_sha256;
  j["rows"] = r.stats.rows;
  j["positions"] = r.stats.positions;
  j["ppl"] = r.stats.ppl;
  j["standard_error"] = r.stats.standard_error;
  j["standard_error_over"] = "positions (mlx_lm)";
  j["standard_error_rows"] = r.stats.standard_error_rows;
  j["mean_nll"] = r.stats.mean_nll;
  j["nll_std"] = r.stats.nll_std;
  j["row_mean_nll"] = r.row_mean_nll;
  j["data_seconds"] = r.data_seconds;
  j["tokens_per_second"] = r.tokens_per_second;
  j["threads"] = r.threads;
  if (r.shard) {
    j["shard"] = {{"index", r.shard->index},
                  {"count", r.shard->count},
                  {"rows", {r.shard_rows.first, r.shard_rows.end}},
                  {"rows_total", r.rows_total}};
    j["nlls"] = r.nlls;
  }
  return j;
}

PplMerge MergePplPartials(const std::vector<std::filesystem::path>& partials) {
  constexpr std::string_view kMerge = "merge";
  if (partials.empty()) Fail(kMerge, "no partial results given");
  std::vector<PplPartial> parts;
  parts.reserve(partials.size());
  for (const auto& path : partials) parts.push_back(ReadPplPartial(path, kMerge));
  const PplPartial& first = parts.front();
  std::vector<ShardPart> shards;
  shards.reserve(parts.size());
  for (const PplPartial& p : parts) {
    const PplResult& r = p.result;
    const auto differs = [&](std::string_view what, const std::string& mine,
                             const std::string& theirs) {
      Fail(kMerge, "'{}' is from another run than '{}': {} {} vs {}", p.path.string(),
           first.path.string(), what, mine, theirs);
    };
    if (r.model != first.result.model) differs("model", r.model, first.result.model);
    if (r.data != first.result.data) {
      differs("data", r.data.dump(), first.result.data.dump());
    }
    if (r.rows_sha256 != first.result.rows_sha256) {
      differs("scored rows' sha256", r.rows_sha256, first.result.rows_sha256);
    }
    CheckSameRun(p.envelope, p.path.string(), first.envelope, first.path.string());
    shards.push_back({.shard = *r.shard, .name = p.path.string()});
  }
  std::vector<const PplPartial*> by_index;
  by_index.reserve(parts.size());
  for (const size_t i : OrderShardParts(shards)) by_index.push_back(&parts[i]);

  PplMerge merge;
  PplResult& m = merge.result;
  m = first.result;
  m.shard.reset();
  m.nlls.clear();
  m.reused = false;
  m.timings = {};
  m.data_seconds = 0;
  std::vector<double> nlls;
  for (const PplPartial* p : by_index) {
    nlls.insert(nlls.end(), p->result.nlls.begin(), p->result.nlls.end());
    m.timings += p->result.timings;
    m.data_seconds += p->result.data_seconds;
  }
  SetStatistics(nlls, m.sequence_length - 1, m);
  const double scored_seconds = m.timings.forward_seconds + m.timings.scoring_seconds;
  m.tokens_per_second =
      scored_seconds > 0 ? static_cast<double>(m.stats.positions) / scored_seconds : 0;
  merge.envelope = ResultsEnvelope{.command = "ppl", .threads = m.threads};
  const InputsAndSettings in_file_order = ReadInFileOrder(first.path);
  merge.envelope.inputs = in_file_order.inputs;
  merge.envelope.settings = in_file_order.settings;
  merge.envelope.results = PplResultToJson(m);
  merge.envelope.timings = m.timings;
  merge.envelope.warnings = m.warnings;
  return merge;
}

nlohmann::ordered_json PplSettingsToJson(const PplResult& r) {
  return {{"sequence_length", r.sequence_length},
          {"num_samples", r.num_samples},
          {"seed", r.seed},
          {"batch_size", r.batch_size},
          {"chunk_size", r.chunk_size}};
}

std::string FormatPplSummary(const PplResult& r) {
  std::string out;
  out += fmt::format("Model: {}\n", r.model);
  out += fmt::format("Perplexity: {:.3f} ± {:.3f} (rows as units: ± {:.3f})\n", r.stats.ppl,
                     r.stats.standard_error, r.stats.standard_error_rows);
  out += fmt::format("Mean NLL: {:.6f} nats/token over {} positions ({} rows of {} tokens)\n",
                     r.stats.mean_nll, r.stats.positions, r.stats.rows, r.sequence_length);
  out += fmt::format(
      "Time: {:.2f} s forward, {:.2f} s scoring, {:.2f} s total; {:.0f} tokens/s "
      "({} threads)\n",
      r.timings.forward_seconds, r.timings.scoring_seconds, r.timings.total_seconds,
      r.tokens_per_second, r.threads);
  for (const auto& w : r.warnings) out += fmt::format("warning: {}\n", w);
  return out;
}

}  // namespace proctor
