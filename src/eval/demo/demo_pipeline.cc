#include "eval/demo/demo_pipeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "eval/demo/demo_teacher.h"
#include "eval/demo/demo_texts.h"
#include "eval/formats/corpus.h"
#include "eval/runners/eval_model.h"
#include "eval/runners/vocab_check.h"
#include "model/load.h"
#include "model/mlx_export.h"
#include "ops/logits_stats.h"
#include "text/tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/timing.h"

namespace proctor {
namespace {

constexpr const char* kComponent = "demo";

// Every stored value of a model (block types count their values).
int64_t CountParameters(const WeightStore& weights) {
  int64_t n = 0;
  for (const auto& name : weights.Names()) n += weights.Get(name).NumElements();
  return n;
}

// 8 * stored bytes / parameters (mlx-lm's bits per weight).
double BitsPerWeight(const WeightStore& weights) {
  const int64_t params = CountParameters(weights);
  return params > 0 ? 8.0 * static_cast<double>(weights.TotalBytes()) / static_cast<double>(params)
                    : 0.0;
}

// -log softmax(row)[target], as the demo has always computed it.
double NextTokenNll(const float* row, int64_t vocab, int32_t target) {
  const ops::RowStats stats = ops::ComputeRowStats(row, vocab);
  CHECK(target >= 0 && target < vocab);
  return static_cast<double>(stats.max) + static_cast<double>(stats.log_sum_exp_shifted) -
         static_cast<double>(row[target]);
}

// A stepper that hands every chunk on unchanged and records the next-token negative
// log-likelihood of every position that has a next token, in position order. A chunk's last row
// waits for the next chunk's first token; the sequence's last position has none and is dropped.
class NllRecordingStepper final : public LogitsStepper {
 public:
  NllRecordingStepper(std::unique_ptr<LogitsStepper> inner, std::vector<double>* nll)
      : inner_(std::move(inner)), nll_(nll) {}

  MatView Step(std::span<const int32_t> tokens) override {
    const MatView logits = inner_->Step(tokens);
    if (!pending_.empty() && !tokens.empty()) {
      nll_->push_back(NextTokenNll(pending_.data(), logits.cols, tokens[0]));
    }
    pending_.clear();
    for (int64_t r = 0; r + 1 < logits.rows; ++r) {
      nll_->push_back(
          NextTokenNll(logits.RowAs<float>(r), logits.cols, tokens[static_cast<size_t>(r + 1)]));
    }
    if (logits.rows > 0) {
      const float* last = logits.RowAs<float>(logits.rows - 1);
      pending_.assign(last, last + logits.cols);
    }
    return logits;
  }

 private:
  std::unique_ptr<LogitsStepper> inner_;
  std::vector<double>* nll_;
  std::vector<float> pending_;  // the last row of the previous chunk
};

TeacherForcedLogits WithNll(TeacherForcedLogits inner,
                            const std::shared_ptr<std::vector<double>>& nll) {
  return [inner = std::move(inner), nll](int64_t max_positions) -> std::unique_ptr<LogitsStepper> {
    return std::make_unique<NllRecordingStepper>(inner(max_positions), nll.get());
  };
}

DemoPerplexity SummarizeNll(std::vector<double> nll) {
  DemoPerplexity p;
  p.positions = static_cast<int64_t>(nll.size());
  if (nll.empty()) return p;
  double sum = 0;
  for (const double v : nll) sum += v;
  p.mean_nll = sum / static_cast<double>(nll.size());
  double squares = 0;
  for (const double v : nll) squares += (v - p.mean_nll) * (v - p.mean_nll);
  const double variance = nll.size() > 1 ? squares / static_cast<double>(nll.size() - 1) : 0.0;
  p.perplexity = std::exp(p.mean_nll);
  p.standard_error = p.perplexity * std::sqrt(variance / static_cast<double>(nll.size()));
  p.per_position_nll = std::move(nll);
  return p;
}

// Scores one model against the dump, with its perplexity from the same pass.
DemoRow ScoreRow(const DemoOptions& options, const std::filesystem::path& dump_dir,
                 const std::string& name, TeacherForcedLogits forward) {
  const auto start = MonotonicSeconds();
  auto nll = std::make_shared<std::vector<double>>();
  DemoRow row;
  row.candidate = name;
  row.kl = EvaluateKlVsReferenceLogits({.reference_dir = dump_dir,
                                        .candidate = name,
                                        .chunk_size = options.chunk_size,
                                        .forward = WithNll(std::move(forward), nll),
                                        .runtime = options.runtime,
                                        .pool = options.runtime.pool,
                                        .quiet = options.quiet});
  row.perplexity = SummarizeNll(std::move(*nll));
  row.seconds = SecondsSince(start);
  return row;
}

std::string ShortDType(const std::string& stored) {
  if (stored == "bfloat16") return "bf16";
  if (stored == "float16") return "f16";
  if (stored == "float32") return "f32";
  return stored;
}

}  // namespace

DemoResult RunDemo(const DemoOptions& options) {
  const auto start = MonotonicSeconds();
  if (options.work_dir.empty()) Fail(kComponent, "no work directory given");
  if (options.ctx_len < 2 || options.n_seqs < 1 || options.top_k < 1 || options.chunk_size < 1) {
    Fail(kComponent, "need ctx_len >= 2, n_seqs >= 1, top_k >= 1, chunk >= 1 (got {}, {}, {}, {})",
         options.ctx_len, options.n_seqs, options.top_k, options.chunk_size);
  }
  const auto log = [&](const std::string& line) {
    if (options.log) options.log(line);
  };
  std::filesystem::create_directories(options.work_dir);
  DemoResult result;
  result.group_size = options.group_size;
  result.threads =
      (options.runtime.pool ? *options.runtime.pool : ThreadPool::Global()).num_threads();
  const std::vector<EmbeddedText> texts = DemoTexts();
  if (texts.empty()) Fail(kComponent, "no embedded texts (the build found no docs/*.md)");

  // 1. The teacher.
  auto phase = MonotonicSeconds();
  if (options.model.empty()) {
    std::vector<std::string_view> training;
    training.reserve(texts.size());
    for (const auto& t : texts) training.push_back(t.text);
    const DemoTeacherInfo info = WriteDemoTeacher(options.work_dir / "teacher", training);
    result.teacher = info.dir.string();
    result.teacher_summary = fmt::format(
        "{}\n   generated: byte-level BPE trained on the embedded docs, seeded weights fitted to "
        "their bigrams\n   (the bigram table's own perplexity on them: {:.1f})",
        info.summary, info.bigram_perplexity);
    result.generated_teacher = true;
  } else {
    result.teacher = options.model;
  }
  // Opened once: its shapes, tokenizer, vocabulary identity and forward.
  const std::shared_ptr<const EvalModel> teacher = EvalModel::Open(result.teacher);
  const int64_t vocab = teacher->config().vocab_size;
  const std::string stored_dtype = teacher->config().stored_dtype;
  result.teacher_bits_per_weight = BitsPerWeight(teacher->weights());
  if (!result.generated_teacher) {
    result.teacher_summary =
        fmt::format("{} ({:.2f}M parameters)", teacher->config().Summary(),
                    static_cast<double>(CountParameters(teacher->weights())) / 1e6);
  }
  const text::Tokenizer* tokenizer = teacher->tokenizer();
  if (tokenizer == nullptr) {
    Fail(kComponent,
         "model '{}' has no tokenizer (no tokenizer.json beside its weights, no vocabulary in its "
         ".gguf): the demo builds its corpus with the model's own tokenizer",
         result.teacher);
  }
  result.tokenizer = tokenizer->Describe();
  result.teacher_seconds = SecondsSince(phase);
  log(fmt::format("1. teacher: {}\n   {}", result.teacher, result.teacher_summary));

  // 2. The corpus, recording the teacher's vocabulary (dump and kl check it).
  phase = MonotonicSeconds();
  std::vector<int32_t> tokens;
  for (const auto& t : texts) {
    const std::vector<int32_t> ids = tokenizer->Encode(t.text, true);
    tokens.insert(tokens.end(), ids.begin(), ids.end());
    result.corpus_sources.emplace_back(t.name);
  }
  const int64_t available = static_cast<int64_t>(tokens.size()) / options.ctx_len;
  if (available < 1) {
    Fail(kComponent,
         "the embedded texts give {} tokens with this tokenizer; one sequence of "
         "ctx_len {} needs {}",
         tokens.size(), options.ctx_len, options.ctx_len);
  }
  result.n_seqs = std::min(options.n_seqs, available);
  result.ctx_len = options.ctx_len;
  tokens.resize(static_cast<size_t>(result.n_seqs * result.ctx_len));
  result.corpus_dir = options.work_dir / "corpus";
  nlohmann::ordered_json manifest = teacher->Identity("teacher").ToJson();
  manifest["tokenizer"] = result.teacher;
  manifest["sources"] = result.corpus_sources;
  manifest["notes"] =
      "proctor demo: the project's docs, BOS before each file, concatenated, cut "
      "into rows in order";
  result.corpus_sha256 =
      WriteCorpus(result.corpus_dir, tokens, result.ctx_len, manifest)["tokens_sha256"]
          .get<std::string>();
  result.corpus_seconds = SecondsSince(phase);
  log(
      fmt::format("2. corpus: {} sequences x {} tokens from the project's docs ({} files, "
                  "embedded) -> {}",
                  result.n_seqs, result.ctx_len, texts.size(), result.corpus_dir.string()));

  // 3. The teacher's dump (as `proctor dump`).
  result.top_k = std::min<int64_t>(options.top_k, vocab);
  result.dump_dir = options.work_dir / "dump";
  std::filesystem::remove_all(result.dump_dir);
  result.dump = DumpTeacher({.teacher = result.teacher,
                             .corpus_dir = result.corpus_dir,
                             .out_dir = result.dump_dir,
                             .top_k = result.top_k,
                             .chunk_size = options.chunk_size,
                             .runtime = options.runtime,
                             .quiet = options.quiet});
  log(fmt::format("3. dumped the teacher's top-{} logits: {} positions in {:.2f} s -> {}",
                  result.top_k, result.dump.positions_written, result.dump.elapsed_seconds,
                  result.dump_dir.string()));

  // 4. Scoring: the teacher itself (the fp16 storage floor), then each candidate, quantized
  //    to an MLX directory (as `proctor quantize`) and loaded back by the engine.
  DemoRow self =
      ScoreRow(options, result.dump_dir, fmt::format("teacher ({})", ShortDType(stored_dtype)),
               teacher->Forward(options.runtime));
  self.bits_per_weight = result.teacher_bits_per_weight;
  result.rows.push_back(std::move(self));
  log(fmt::format("4. scored the teacher against its own dump (the floor) in {:.2f} s",
                  result.rows.back().seconds));
  for (const int bits : options.bits) {
    const auto q_start = MonotonicSeconds();
    const std::filesystem::path dir =
        options.work_dir / "candidates" / fmt::format("mlx-{}bit-g{}", bits, options.group_size);
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir.parent_path());
    const MlxQuantizeReport report =
        QuantizeModelToMlx(result.teacher, dir, {.bits = bits, .group_size = options.group_size});
    const double prepare_seconds = SecondsSince(q_start);
    DemoRow row =
        ScoreRow(options, result.dump_dir, fmt::format("mlx {}-bit g{}", bits, options.group_size),
                 EvalModel::Open(dir.string())->Forward(options.runtime));
    row.model = dir.string();
    row.bits = bits;
    row.bits_per_weight = report.bits_per_weight;
    row.prepare_seconds = prepare_seconds;
    log(
        fmt::format("   quantized {} ({} tensors quantized, {} kept) in {:.2f} s -> {}; scored "
                    "in {:.2f} s",
                    row.candidate, report.quantized_count, report.kept_count, prepare_seconds,
                    dir.string(), row.seconds));
    result.rows.push_back(std::move(row));
  }
  result.total_seconds = SecondsSince(start);
  return result;
}

std::string FormatDemoTable(const DemoResult& result) {
  size_t width = 9;
  for (const auto& r : result.rows) width = std::max(width, r.candidate.size());
  std::string out = fmt::format(
      "{:<{}}  {:>6}  {:>21}  {:>9}  {:>9}  {:>7}  {:>6}  {:>17}  {:>7}\n", "candidate", width,
      "bits/w", "KL mean +- SE", "median", "p95", "top-1", "mass", "perplexity +- SE", "seconds");
  for (const auto& r : result.rows) {
    const KlRunStats& s = r.kl.stats;
    out += fmt::format(
        "{:<{}}  {:>6.2f}  {:>21}  {:>9.3e}  {:>9.3e}  {:>7.4f}  {:>6.4f}  {:>17}  {:>7.2f}\n",
        r.candidate, width, r.bits_per_weight,
        fmt::format("{:.3e} +- {:.1e}", s.kl.mean, s.kl.standard_error), s.kl.median, s.kl.p95,
        s.top1_agreement, s.mean_mass,
        fmt::format("{:.3f} +- {:.3f}", r.perplexity.perplexity, r.perplexity.standard_error),
        r.seconds);
  }
  return out;
}

nlohmann::ordered_json DemoResultToJson(const DemoResult& result) {
  nlohmann::ordered_json j;
  j["teacher"] = {{"model", result.teacher},
                  {"summary", result.teacher_summary},
                  {"generated", result.generated_teacher},
                  {"tokenizer", result.tokenizer}};
  j["corpus"] = {{"dir", result.corpus_dir.string()},
                 {"tokens_sha256", result.corpus_sha256},
                 {"n_seqs", result.n_seqs},
                 {"ctx_len", result.ctx_len},
                 {"sources", result.corpus_sources}};
  j["dump"] = {{"dir", result.dump_dir.string()},
               {"top_k", result.top_k},
               {"positions", result.dump.positions_written},
               {"vocab", result.dump.vocab},
               {"seconds", result.dump.elapsed_seconds}};
  j["quantization"] = {{"method", "mlx affine (proctor quantize)"},
                       {"group_size", result.group_size}};
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& r : result.rows) {
    nlohmann::ordered_json row;
    row["candidate"] = r.candidate;
    row["model"] = r.model;
    row["bits"] = r.bits;
    row["bits_per_weight"] = r.bits_per_weight;
    row["kl"] = KlEvalResultToJson(r.kl);
    row["perplexity"] = {{"perplexity", r.perplexity.perplexity},
                         {"standard_error", r.perplexity.standard_error},
                         {"mean_nll", r.perplexity.mean_nll},
                         {"positions", r.perplexity.positions}};
    row["prepare_seconds"] = r.prepare_seconds;
    row["seconds"] = r.seconds;
    rows.push_back(std::move(row));
  }
  j["candidates"] = std::move(rows);
  j["timings"] = {{"teacher_seconds", result.teacher_seconds},
                  {"corpus_seconds", result.corpus_seconds},
                  {"dump_seconds", result.dump.elapsed_seconds},
                  {"total_seconds", result.total_seconds}};
  j["threads"] = result.threads;
  return j;
}

ResultsEnvelope DemoResultsEnvelope(const DemoResult& result, const DemoOptions& options) {
  ResultsEnvelope env{.command = "demo", .threads = result.threads};
  double hash_seconds = 0;
  {
    ScopedSeconds hashing(&hash_seconds);
    if (std::filesystem::exists(result.teacher) || !result.generated_teacher) {
      env.inputs.push_back(DescribeModelInput("teacher", result.teacher));
    }
    if (std::filesystem::exists(result.corpus_dir / "manifest.json")) {
      env.outputs.push_back(DescribeCorpusInput("corpus", result.corpus_dir));
    }
    if (std::filesystem::exists(result.dump_dir / "manifest.json")) {
      env.outputs.push_back(DescribeReferenceLogitsInput("reference_logits", result.dump_dir));
    }
    for (const auto& row : result.rows) {
      if (!row.model.empty() && std::filesystem::exists(row.model)) {
        env.outputs.push_back(DescribeModelInput("candidate", row.model));
      }
    }
  }
  env.settings = {{"generated_teacher", result.generated_teacher},
                  {"bits", options.bits},
                  {"group_size", options.group_size},
                  {"quantization", "mlx affine (proctor quantize)"},
                  {"n_seqs", result.n_seqs},
                  {"ctx_len", result.ctx_len},
                  {"top_k", result.top_k},
                  {"chunk_size", options.chunk_size},
                  {"compute", std::string(ComputeModeName(options.runtime.compute))}};
  env.results = DemoResultToJson(result);
  ResultsTimings& t = env.timings;
  const auto add = [&t](const ResultsTimings& part) {
    t.forward_seconds += part.forward_seconds;
    t.scoring_seconds += part.scoring_seconds;
    t.io_seconds += part.io_seconds;
  };
  add(result.dump.timings);
  for (const auto& row : result.rows) add(row.kl.timings);
  t.total_seconds = result.total_seconds;
  t.load_seconds = result.teacher_seconds;
  t.hash_seconds = hash_seconds;
  for (const auto& row : result.rows) {
    for (const auto& w : row.kl.warnings) env.warnings.push_back(row.candidate + ": " + w);
  }
  return env;
}

}  // namespace proctor
