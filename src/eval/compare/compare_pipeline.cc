#include "eval/compare/compare_pipeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <set>

#include "eval/compare/compare_table.h"
#include "eval/compare/step_records.h"
#include "eval/formats/corpus.h"
#include "eval/formats/ref_logits.h"
#include "eval/runners/corpus_builder.h"
#include "eval/runners/eval_model.h"
#include "eval/runners/kv_curve.h"
#include "eval/runners/vocab_check.h"
#include "eval/runs/run_database.h"
#include "model/gguf_quantize.h"
#include "model/gguf_source.h"
#include "model/load.h"
#include "model/mlx_export.h"
#include "model/model_summary.h"
#include "model/quantize_spec.h"
#include "text/tokenizer/gguf_to_hf.h"
#include "text/tokenizer/hf_to_gguf_vocab.h"
#include "text/tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/sha256.h"
#include "util/timing.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

constexpr const char* kComponent = "compare";

std::string ShortDType(const std::string& stored) {
  if (stored == "bfloat16") return "bf16";
  if (stored == "float16") return "f16";
  if (stored == "float32") return "f32";
  return stored;
}

// A file-name-safe form of a row's name, with a hash of its identity against collisions.
std::string StepSlug(const std::string& kind, const std::string& name, const std::string& model) {
  std::string slug;
  for (const char c : name) slug += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (slug.size() > 48) slug.resize(48);
  return fmt::format("score-{}-{}-{}", kind, slug, Sha256Hex(kind + "\n" + model).substr(0, 8));
}

// A stepper that hands every chunk on unchanged and records the next-token NLL of every position
// that has a next token (ppl.h's NextTokenNll), in position order. A chunk's last row waits for
// the next chunk's first token; a sequence's last position has none and is dropped.
class NllRecordingStepper final : public LogitsStepper {
 public:
  NllRecordingStepper(std::unique_ptr<LogitsStepper> inner, std::vector<double>* nll)
      : inner_(std::move(inner)), nll_(nll) {}

  MatView Step(std::span<const int32_t> tokens) override {
    const MatView logits = inner_->Step(tokens);
    const auto row = [&](int64_t r) {
      return std::span<const float>(logits.RowAs<float>(r), static_cast<size_t>(logits.cols));
    };
    if (!pending_.empty() && !tokens.empty()) nll_->push_back(NextTokenNll(pending_, tokens[0]));
    pending_.clear();
    for (int64_t r = 0; r + 1 < logits.rows; ++r) {
      nll_->push_back(NextTokenNll(row(r), tokens[static_cast<size_t>(r + 1)]));
    }
    if (logits.rows > 0) {
      const auto last = row(logits.rows - 1);
      pending_.assign(last.begin(), last.end());
    }
    return logits;
  }

 private:
  std::unique_ptr<LogitsStepper> inner_;
  std::vector<double>* nll_;
  std::vector<float> pending_;  // the last row of the previous chunk
};

// One model, identified by the sha256 of its files.
struct OpenedModel {
  std::shared_ptr<const EvalModel> model;
  Json description;  // EvalModel::Describe
  std::string sha256;
};

OpenedModel OpenModel(const std::string& spec, const std::string& role) {
  OpenedModel m;
  m.model = EvalModel::Open(spec);
  m.description = m.model->Describe(role);
  m.sha256 = ModelIdentity(m.description).first;
  return m;
}

Json PerplexityToJson(const PerplexityStats& p) {
  return {{"perplexity", p.ppl},
          {"standard_error", p.standard_error},
          {"mean_nll", p.mean_nll},
          {"nll_std", p.nll_std},
          {"positions", p.positions},
          {"rows", p.rows},
          {"standard_error_rows", p.standard_error_rows}};
}

// JSON writes NaN (a standard deviation of one value) as null.
double NumberOrNaN(const Json& j) {
  return j.is_number() ? j.get<double>() : std::numeric_limits<double>::quiet_NaN();
}

PerplexityStats PerplexityFromJson(const Json& j) {
  return {.rows = j.at("rows").get<int64_t>(),
          .positions = j.at("positions").get<int64_t>(),
          .mean_nll = NumberOrNaN(j.at("mean_nll")),
          .nll_std = NumberOrNaN(j.at("nll_std")),
          .ppl = NumberOrNaN(j.at("perplexity")),
          .standard_error = NumberOrNaN(j.at("standard_error")),
          .standard_error_rows = NumberOrNaN(j.at("standard_error_rows"))};
}

Json RowToJson(const CompareRow& r) {
  return {{"candidate", r.candidate},
          {"kind", r.kind},
          {"model", r.model},
          {"bits_per_weight", r.bits_per_weight},
          {"kl", r.kl},
          {"perplexity", PerplexityToJson(r.perplexity)},
          {"prepare_seconds", r.prepare_seconds},
          {"seconds", r.seconds},
          {"per_position", r.per_position}};
}

CompareRow RowFromJson(const Json& j) {
  return {.candidate = j.at("candidate").get<std::string>(),
          .kind = j.at("kind").get<std::string>(),
          .model = j.at("model").get<std::string>(),
          .bits_per_weight = j.at("bits_per_weight").get<double>(),
          .kl = j.at("kl"),
          .perplexity = PerplexityFromJson(j.at("perplexity")),
          .prepare_seconds = j.at("prepare_seconds").get<double>(),
          .seconds = j.at("seconds").get<double>(),
          .reused = true,
          .per_position = j.value("per_position", "")};
}

struct Candidate {
  std::string name;  // the row's name
  std::string kind;  // "model" or "quantized"
  std::string spec;  // the model spec, or the QuantizeSpec name
  MlxQuantizeOptions quantize{};
  std::string gguf_type{};  // a GGUF of this llama.cpp file type instead of an MLX directory
};

// Every candidate, checked and named, before anything is created.
std::vector<Candidate> PlanCandidates(const CompareOptions& options) {
  std::vector<Candidate> plan;
  std::set<std::string> names;
  for (const auto& spec : options.candidates) {
    LocateModel(spec);  // a missing model is an error now, not after the dump
    std::string name = fs::path(spec).filename().string();
    if (name.empty() || names.contains(name)) name = spec;
    if (!names.insert(name).second) Fail(kComponent, "--candidate {} is given twice", spec);
    plan.push_back({.name = name, .kind = "model", .spec = spec});
  }
  // A GGUF teacher is its own GGUF source; a safetensors one is converted, which is checked
  // (once) before anything is made.
  bool gguf_source_checked = LocateModel(options.teacher).format == ModelFormat::kGguf;
  for (const auto& spelling : options.quantize) {
    const QuantizeSpec q = ParseQuantizeSpec(spelling);
    if (!names.insert(q.name).second) {
      Fail(kComponent, "--quantize {} is given twice (or names a --candidate)", spelling);
    }
    if (!q.gguf_type.empty() && !gguf_source_checked) {
      try {
        OpenGgufSource(options.teacher, text::AddHfTokenizerAsGgufVocab);
      } catch (const Error& e) {
        Fail(kComponent, "--quantize {} needs a GGUF of the teacher: {}", spelling, e.what());
      }
      gguf_source_checked = true;
    }
    plan.push_back({.name = q.name,
                    .kind = "quantized",
                    .spec = q.name,
                    .quantize = q.options,
                    .gguf_type = q.gguf_type});
  }
  return plan;
}

void CheckOptions(const CompareOptions& o) {
  if (o.out_dir.empty()) Fail(kComponent, "no output directory given");
  if (o.teacher.empty()) Fail(kComponent, "no teacher given");
  for (const std::string& scheme : o.kv_schemes) ParseKvScheme(scheme);
  if (!o.kv_schemes.empty() && (o.kv_decode_steps < 1 || o.kv_decode_steps > o.ctx_len - 2)) {
    Fail(kComponent, "--kv-decode-steps {} must be between 1 and --ctx-len - 2 ({})",
         o.kv_decode_steps, o.ctx_len - 2);
  }
  if (o.ctx_len < 2 || o.n_seqs < 1 || o.top_k < 1 || o.chunk_size < 1) {
    Fail(kComponent,
         "need --ctx-len >= 2, --n-seqs >= 1, --top-k >= 1, --chunk >= 1 (got {}, {}, {}, {})",
         o.ctx_len, o.n_seqs, o.top_k, o.chunk_size);
  }
  if (o.data.empty() == o.texts.empty()) {
    Fail(kComponent, "give the data to compare on (--data FILE...)");
  }
  for (const auto& file : o.data) {
    std::error_code ec;
    if (!fs::is_regular_file(file, ec)) {
      Fail(kComponent, "--data {}: {}", file.string(),
           fs::exists(file, ec) ? "not a regular file" : "no such file");
    }
  }
  std::error_code ec;
  if (fs::exists(o.out_dir, ec) && !fs::is_directory(o.out_dir, ec)) {
    Fail(kComponent, "--out {} exists and is not a directory", o.out_dir.string());
  }
}

// The run's state shared by its steps.
class CompareRun {
 public:
  CompareRun(const CompareOptions& options, CompareResult* result)
      : o_(options), r_(*result), steps_(options.out_dir / "steps") {}

  void Run(const std::vector<Candidate>& plan) {
    OpenTeacher();  // its checks come before the study directory exists
    fs::create_directories(o_.out_dir);
    BuildCorpusStep();
    DumpStep();
    ScoreTeacher();
    for (const auto& candidate : plan) ScoreCandidate(candidate);
    if (!o_.kv_schemes.empty()) KvCurveStep();
    // The teacher first, then by bits per weight, most first (stable: the order given on ties).
    std::stable_sort(r_.rows.begin() + 1, r_.rows.end(), [](const auto& a, const auto& b) {
      return a.bits_per_weight > b.bits_per_weight;
    });
  }

 private:
  void Log(const std::string& line) const {
    if (o_.log) o_.log(line);
  }

  void OpenTeacher() {
    teacher_ = OpenModel(o_.teacher, "teacher");
    const EvalModel& t = *teacher_.model;
    r_.teacher = o_.teacher;
    r_.teacher_sha256 = teacher_.sha256;
    r_.teacher_description = teacher_.description;
    r_.teacher_parameters = static_cast<double>(CountModelParameters(t.config(), t.weights()));
    r_.teacher_summary =
        fmt::format("{} ({:.2f}M parameters)", t.config().Summary(), r_.teacher_parameters / 1e6);
    if (!o_.teacher_note.empty()) r_.teacher_summary += "\n   " + o_.teacher_note;
    if (t.tokenizer() == nullptr) {
      Fail(kComponent,
           "teacher '{}' has no tokenizer (no tokenizer.json beside its weights, no vocabulary "
           "in its .gguf): compare builds its corpus with the teacher's own tokenizer",
           o_.teacher);
    }
    r_.tokenizer = t.tokenizer()->Describe();
    for (const std::string& scheme : o_.kv_schemes) {
      CheckKvSchemeFits(ParseKvScheme(scheme), t.config().head_dim, t.config().num_layers);
    }
    Log(fmt::format("1. teacher: {}\n   {}", r_.teacher, r_.teacher_summary));
  }

  Json CorpusKey() const {
    Json key = {
        {"teacher_sha256", teacher_.sha256}, {"ctx_len", o_.ctx_len}, {"n_seqs", o_.n_seqs}};
    if (!o_.data.empty()) {
      Json files = Json::array();
      for (const auto& f : o_.data) {
        files.push_back({{"path", f.string()}, {"sha256", Sha256FileHex(f)}});
      }
      key["data"] = std::move(files);
      key["seed"] = o_.seed;
    } else {
      Sha256 texts;
      for (const auto& t : o_.texts) {
        texts.Update(t.name);
        texts.Update(std::string_view("\n", 1));
        texts.Update(t.text);
      }
      key["texts_sha256"] = texts.HexDigest();
      key["fit_n_seqs"] = o_.fit_n_seqs_to_texts;
    }
    return key;
  }

  void BuildCorpusStep() {
    const double start = MonotonicSeconds();
    r_.corpus_dir = o_.out_dir / "corpus";
    const Json key = CorpusKey();
    if (const auto done = steps_.Find("corpus", key)) {
      try {
        const Corpus corpus = ReadCorpus(r_.corpus_dir);
        if (corpus.tokens_sha256 == done->at("tokens_sha256").get<std::string>()) {
          r_.corpus_sha256 = corpus.tokens_sha256;
          r_.n_seqs = corpus.n_seqs;
          r_.ctx_len = corpus.ctx_len;
          r_.corpus_description = done->at("description").get<std::string>();
          r_.corpus_reused = true;
        }
      } catch (const Error&) {
        // Damaged or gone: built again below.
      }
    }
    if (!r_.corpus_reused) {
      fs::remove_all(r_.corpus_dir);
      if (!o_.data.empty()) {
        BuildFromData();
      } else {
        BuildFromTexts();
      }
      steps_.Record("corpus", key,
                    {{"tokens_sha256", r_.corpus_sha256}, {"description", r_.corpus_description}});
    }
    r_.corpus_seconds = SecondsSince(start);
    Log(fmt::format("2. corpus: {} sequences x {} tokens from {}{} -> {}", r_.n_seqs, r_.ctx_len,
                    r_.corpus_description, r_.corpus_reused ? " (reused)" : "",
                    r_.corpus_dir.string()));
  }

  void BuildFromData() {
    CorpusBuildOptions build{.tokenizer = o_.teacher,
                             .inputs = o_.data,
                             .out_dir = r_.corpus_dir,
                             .ctx_len = o_.ctx_len,
                             .n_seqs = o_.n_seqs,
                             .seed = o_.seed,
                             .quiet = o_.quiet};
    const CorpusBuildResult built = BuildCorpus(build);
    r_.corpus_sha256 = built.tokens_sha256;
    r_.n_seqs = built.n_seqs;
    r_.ctx_len = built.ctx_len;
    r_.corpus_description =
        fmt::format("{} file{} ({} of {} rows, shuffled with seed {})", o_.data.size(),
                    o_.data.size() == 1 ? "" : "s", built.rows_used, built.rows_total, o_.seed);
  }

  // BOS before each text, concatenated in order, cut into rows.
  void BuildFromTexts() {
    const text::Tokenizer& tokenizer = *teacher_.model->tokenizer();
    std::vector<int32_t> tokens;
    std::vector<std::string> sources;
    for (const auto& t : o_.texts) {
      const std::vector<int32_t> ids = tokenizer.Encode(t.text, true);
      tokens.insert(tokens.end(), ids.begin(), ids.end());
      sources.emplace_back(t.name);
    }
    const int64_t available = static_cast<int64_t>(tokens.size()) / o_.ctx_len;
    const int64_t n_seqs = o_.fit_n_seqs_to_texts ? std::min(o_.n_seqs, available) : o_.n_seqs;
    if (available < std::max<int64_t>(n_seqs, 1)) {
      Fail(kComponent, "{} give {} tokens with this tokenizer; {} sequences of {} need {}",
           o_.texts_label, tokens.size(), std::max<int64_t>(n_seqs, 1), o_.ctx_len,
           std::max<int64_t>(n_seqs, 1) * o_.ctx_len);
    }
    tokens.resize(static_cast<size_t>(n_seqs * o_.ctx_len));
    Json manifest = teacher_.model->Identity("teacher").ToJson();
    manifest["tokenizer"] = o_.teacher;
    manifest["sources"] = sources;
    manifest["notes"] =
        fmt::format("proctor: {}, BOS before each, concatenated, cut into rows", o_.texts_label);
    r_.corpus_sha256 = WriteCorpus(r_.corpus_dir, tokens, o_.ctx_len, manifest)["tokens_sha256"]
                           .get<std::string>();
    r_.n_seqs = n_seqs;
    r_.ctx_len = o_.ctx_len;
    r_.corpus_description = fmt::format("{} ({} texts)", o_.texts_label, o_.texts.size());
  }

  Json DumpKey() const {
    return {{"corpus_sha256", r_.corpus_sha256},
            {"teacher_sha256", teacher_.sha256},
            {"top_k", r_.top_k},
            {"chunk_size", o_.chunk_size},
            {"compute", std::string(ComputeModeName(o_.runtime.compute))},
            {"kv", o_.runtime.kv.Name()},
            {"kv_start", o_.runtime.kv.start}};
  }

  void DumpStep() {
    r_.dump_dir = o_.out_dir / "dump";
    r_.top_k = std::min<int64_t>(o_.top_k, teacher_.model->config().vocab_size);
    dump_key_ = DumpKey();
    bool resume = false;
    if (const auto done = steps_.Find("dump", dump_key_)) {
      if (done->at("complete").get<bool>()) {
        try {
          ReferenceLogitsDump::Open(r_.dump_dir);
          r_.dump_reused = true;
        } catch (const Error&) {
          // Damaged or gone: dumped again below.
        }
      } else {
        resume = fs::exists(r_.dump_dir / ".in-progress.json");
      }
    }
    if (!r_.dump_reused) {
      if (!resume) fs::remove_all(r_.dump_dir);
      steps_.Record("dump", dump_key_, {{"complete", false}});
      const std::string per_position = PerPositionPath(TeacherStep());
      fs::create_directories(o_.out_dir / "positions");
      r_.dump = DumpTeacher({.teacher = o_.teacher,
                             .corpus_dir = r_.corpus_dir,
                             .out_dir = r_.dump_dir,
                             .top_k = r_.top_k,
                             .chunk_size = o_.chunk_size,
                             .resume = resume,
                             .runtime = o_.runtime,
                             .quiet = o_.quiet,
                             .opened = teacher_.model,
                             .model_sha256 = teacher_.sha256,
                             .floor_perplexity = true,
                             .floor_per_position = o_.out_dir / per_position});
      steps_.Record("dump", dump_key_, {{"complete", true}});
      TeacherRowFromFloor(per_position);
    }
    Log(r_.dump_reused
            ? fmt::format("3. the teacher's top-{} logits: reused -> {}", r_.top_k,
                          r_.dump_dir.string())
            : fmt::format("3. dumped the teacher's top-{} logits: {} positions{} in {:.2f} s -> {}",
                          r_.top_k, r_.dump.positions_written,
                          r_.dump.sequences_resumed > 0
                              ? fmt::format(" ({} sequences resumed)", r_.dump.sequences_resumed)
                              : "",
                          r_.dump.elapsed_seconds, r_.dump_dir.string()));
  }

  static std::string PerPositionPath(const std::string& step) {
    return "positions/" + step + ".kl";
  }
  Json ScoreKey(const OpenedModel& model) const {
    return {{"dump", dump_key_}, {"candidate_sha256", model.sha256}};
  }
  std::string TeacherName() const {
    return fmt::format("teacher ({})", ShortDType(teacher_.model->config().stored_dtype));
  }
  std::string TeacherStep() const { return StepSlug("teacher", TeacherName(), o_.teacher); }

  // The teacher's row from the dump just written: its floor is the teacher scored against its
  // own records, and the dump kept the floor's per-position scores and the teacher's perplexity,
  // so the row needs no second teacher pass. Recorded as the teacher's scoring step.
  void TeacherRowFromFloor(const std::string& per_position) {
    CHECK(r_.dump.floor && r_.dump.floor_perplexity);
    KlEvalResult floor = *r_.dump.floor;
    floor.candidate = TeacherName();
    CompareRow row{.candidate = TeacherName(),
                   .kind = "teacher",
                   .model = o_.teacher,
                   .bits_per_weight = 8.0 *
                                      static_cast<double>(teacher_.model->weights().TotalBytes()) /
                                      r_.teacher_parameters,
                   .kl = KlEvalResultToJson(floor),
                   .perplexity = *r_.dump.floor_perplexity,
                   .seconds = r_.dump.elapsed_seconds,
                   .per_position = per_position};
    steps_.Record(TeacherStep(), ScoreKey(teacher_), RowToJson(row));
    teacher_row_ = std::move(row);
  }

  // Scores `model` against the dump with its perplexity, or reuses the recorded row.
  CompareRow Score(const std::string& name, const std::string& kind, const OpenedModel& model,
                   const std::string& spec) {
    const Json key = ScoreKey(model);
    const std::string step = StepSlug(kind, name, spec);
    if (const auto done = steps_.Find(step, key)) return RowFromJson(*done);
    const double start = MonotonicSeconds();
    CheckVocabulary(*model.model, name);
    const std::string per_position = PerPositionPath(step);
    fs::create_directories(o_.out_dir / "positions");
    auto nll = std::make_shared<std::vector<double>>();
    TeacherForcedLogits forward = [inner = model.model->Forward(o_.runtime),
                                   nll](int64_t max_positions) {
      return std::unique_ptr<LogitsStepper>(
          std::make_unique<NllRecordingStepper>(inner(max_positions), nll.get()));
    };
    const KlEvalResult kl =
        EvaluateKlVsReferenceLogits({.reference_dir = r_.dump_dir,
                                     .candidate = name,
                                     .chunk_size = o_.chunk_size,
                                     .forward = std::move(forward),
                                     .opened = model.model,
                                     .runtime = o_.runtime,
                                     .pool = o_.runtime.pool,
                                     .quiet = o_.quiet,
                                     .per_position = o_.out_dir / per_position});
    const int64_t per_row = r_.ctx_len - 1;
    CHECK_MSG(static_cast<int64_t>(nll->size()) == r_.n_seqs * per_row,
              "{} NLLs for {} x {} positions", nll->size(), r_.n_seqs, per_row);
    CompareRow row{
        .candidate = name,
        .kind = kind,
        .model = spec,
        .bits_per_weight =
            8.0 * static_cast<double>(model.model->weights().TotalBytes()) / r_.teacher_parameters,
        .kl = KlEvalResultToJson(kl),
        .perplexity = PerplexityFromNlls(*nll, per_row),
        .seconds = SecondsSince(start),
        .per_position = per_position};
    steps_.Record(step, key, RowToJson(row));
    return row;
  }

  // The candidate's vocabulary against the teacher's, before its pass.
  void CheckVocabulary(const EvalModel& model, const std::string& name) const {
    if (&model == teacher_.model.get()) return;
    CheckSameVocabulary(teacher_.model->Identity(fmt::format("teacher '{}'", o_.teacher)),
                        model.Identity(fmt::format("candidate '{}'", name)));
  }

  // The teacher's row: the floor of the dump just written, a recorded row, or (a dump reused
  // without its teacher row) the teacher scored against its own dump.
  void ScoreTeacher() {
    if (teacher_row_) {
      Log("4. the teacher against its own dump (the floor): scored while dumping");
      r_.rows.push_back(std::move(*teacher_row_));
      return;
    }
    CompareRow row = Score(TeacherName(), "teacher", teacher_, o_.teacher);
    Log(fmt::format("4. scored the teacher against its own dump (the floor){}",
                    row.reused ? ": reused" : fmt::format(" in {:.2f} s", row.seconds)));
    r_.rows.push_back(std::move(row));
  }

  // The teacher's KV cache schemes on the decode path (`proctor kv-curve` on the study's corpus),
  // or the recorded results of the same step.
  void KvCurveStep() {
    const Json key = {{"dump", dump_key_},
                      {"schemes", o_.kv_schemes},
                      {"decode_steps", o_.kv_decode_steps},
                      {"compute", ComputeModeName(o_.runtime.compute)}};
    if (const auto done = steps_.Find("kv-curve", key)) {
      r_.kv_curve = done->at("results");
      r_.kv_curve_table = done->at("table").get<std::string>();
      Log("5. the teacher's KV cache schemes: reused");
      return;
    }
    const KvCurveOptions options{.model = o_.teacher,
                                 .corpus_dir = r_.corpus_dir,
                                 .schemes = o_.kv_schemes,
                                 .max_seqs = r_.n_seqs,
                                 .decode_steps = o_.kv_decode_steps,
                                 .chunk_size = o_.chunk_size,
                                 .compute = o_.runtime.compute,
                                 .quiet = o_.quiet,
                                 .opened = teacher_.model};
    const KvCurveResult kv = RunKvCurve(options);
    r_.kv_curve = KvCurveResultsEnvelope(kv, options).results;
    r_.kv_curve_table = FormatKvCurveTable(kv);
    steps_.Record("kv-curve", key, {{"results", r_.kv_curve}, {"table", r_.kv_curve_table}});
    Log(fmt::format("5. ran the teacher's {} KV cache schemes on the decode path ({} steps)",
                    o_.kv_schemes.size(), o_.kv_decode_steps));
  }

  void ScoreCandidate(const Candidate& c) {
    std::string spec = c.spec;
    double prepare_seconds = 0;
    if (c.kind == "quantized") {
      const double start = MonotonicSeconds();
      const bool gguf = !c.gguf_type.empty();
      const fs::path dir = o_.out_dir / "candidates" / (gguf ? c.name + ".gguf" : c.name);
      const Json key = {{"teacher_sha256", teacher_.sha256}, {"spec", c.name}};
      const std::string step = "quantize-" + c.name;
      const auto done = steps_.Find(step, key);
      if (!done || !fs::exists(gguf ? dir : dir / "config.json")) {
        const fs::path partial = dir.string() + ".partial";
        fs::remove_all(partial);
        fs::remove_all(dir);
        fs::create_directories(dir.parent_path());
        if (gguf) {
          QuantizeModelToGguf(o_.teacher, dir,
                              GgufQuantizeOptions{.type = c.gguf_type,
                                                  .vocabulary = text::AddHfTokenizerAsGgufVocab});
        } else {
          MlxQuantizeOptions mlx = c.quantize;
          if (const LocatedModel located = LocateModel(o_.teacher);
              located.format == ModelFormat::kGguf) {
            mlx.extra_files = text::HfTokenizerFilesOf(located.path, &mlx.no_tokenizer_reason);
          }
          QuantizeModelToMlx(o_.teacher, partial, mlx);
          fs::rename(partial, dir);
        }
        prepare_seconds = SecondsSince(start);
        steps_.Record(step, key, {{"seconds", prepare_seconds}});
        Log(fmt::format("   quantized {} in {:.2f} s -> {}", c.name, prepare_seconds,
                        dir.string()));
      } else {
        prepare_seconds = done->at("seconds").get<double>();
      }
      spec = dir.string();
    }
    CompareRow row = Score(c.name, c.kind, OpenModel(spec, "candidate"), spec);
    row.prepare_seconds = prepare_seconds;
    Log(fmt::format("   scored {}{}", c.name,
                    row.reused ? ": reused" : fmt::format(" in {:.2f} s", row.seconds)));
    r_.rows.push_back(std::move(row));
  }

  const CompareOptions& o_;
  CompareResult& r_;
  StepRecords steps_;
  OpenedModel teacher_;
  Json dump_key_;
  std::optional<CompareRow> teacher_row_;  // from the floor of the dump this run wrote
};

}  // namespace

CompareResult RunCompare(const CompareOptions& options) {
  const double start = MonotonicSeconds();
  CheckOptions(options);
  const std::vector<Candidate> plan = PlanCandidates(options);  // checked before anything exists
  CompareResult result;
  result.out_dir = options.out_dir;
  result.chunk_size = options.chunk_size;
  result.compute = std::string(ComputeModeName(options.runtime.compute));
  result.kv = options.runtime.kv.Name();
  result.threads =
      (options.runtime.pool ? *options.runtime.pool : ThreadPool::Global()).num_threads();
  CompareRun(options, &result).Run(plan);
  result.total_seconds = SecondsSince(start);
  return result;
}

nlohmann::ordered_json CompareResultToJson(const CompareResult& result) {
  Json j;
  j["out_dir"] = result.out_dir.string();
  j["teacher"] = {{"model", result.teacher},
                  {"summary", result.teacher_summary},
                  {"sha256", result.teacher_sha256},
                  {"tokenizer", result.tokenizer},
                  {"parameters", result.teacher_parameters}};
  j["corpus"] = {{"dir", result.corpus_dir.string()},
                 {"description", result.corpus_description},
                 {"tokens_sha256", result.corpus_sha256},
                 {"n_seqs", result.n_seqs},
                 {"ctx_len", result.ctx_len},
                 {"reused", result.corpus_reused}};
  j["dump"] = {{"dir", result.dump_dir.string()},
               {"top_k", result.top_k},
               {"reused", result.dump_reused},
               {"positions_written", result.dump.positions_written},
               {"sequences_resumed", result.dump.sequences_resumed},
               {"seconds", result.dump.elapsed_seconds}};
  const double teacher_ppl = result.rows.empty() ? 0.0 : result.rows.front().perplexity.ppl;
  Json rows = Json::array();
  for (size_t i = 0; i < result.rows.size(); ++i) {
    const CompareRow& r = result.rows[i];
    Json row = RowToJson(r);
    row["delta_perplexity"] = r.perplexity.ppl - teacher_ppl;
    row["reused"] = r.reused;
    const auto paired = PairedWithAbove(result, i);
    row["vs_above"] = paired ? Json{{"candidate", result.rows[i - 1].candidate},
                                    {"bootstrap_draws", kDefaultBootstrapDraws},
                                    {"seed", kDefaultBootstrapSeed},
                                    {"metrics", KlDiffMetricsToJson(*paired)}}
                             : Json(nullptr);
    rows.push_back(std::move(row));
  }
  j["candidates"] = std::move(rows);
  if (!result.kv_curve.is_null()) j["kv_curve"] = result.kv_curve;
  j["settings"] = {{"compute", result.compute},
                   {"kv", result.kv},
                   {"chunk_size", result.chunk_size},
                   {"threads", result.threads}};
  j["timings"] = {{"corpus_seconds", result.corpus_seconds},
                  {"total_seconds", result.total_seconds}};
  return j;
}

CompareResult CompareResultFromJson(const nlohmann::ordered_json& results,
                                    const std::string& source) {
  try {
    CompareResult r;
    r.out_dir = results.value("out_dir", "");
    const Json& teacher = results.at("teacher");
    r.teacher = teacher.at("model").get<std::string>();
    r.teacher_summary = teacher.at("summary").get<std::string>();
    r.teacher_sha256 = teacher.at("sha256").get<std::string>();
    r.tokenizer = teacher.at("tokenizer").get<std::string>();
    r.teacher_parameters = teacher.at("parameters").get<double>();
    const Json& corpus = results.at("corpus");
    r.corpus_dir = corpus.at("dir").get<std::string>();
    r.corpus_description = corpus.at("description").get<std::string>();
    r.corpus_sha256 = corpus.at("tokens_sha256").get<std::string>();
    r.n_seqs = corpus.at("n_seqs").get<int64_t>();
    r.ctx_len = corpus.at("ctx_len").get<int64_t>();
    r.corpus_reused = corpus.at("reused").get<bool>();
    const Json& dump = results.at("dump");
    r.dump_dir = dump.at("dir").get<std::string>();
    r.top_k = dump.at("top_k").get<int64_t>();
    r.dump_reused = dump.at("reused").get<bool>();
    const Json& settings = results.at("settings");
    r.compute = settings.at("compute").get<std::string>();
    r.kv = settings.at("kv").get<std::string>();
    r.chunk_size = settings.at("chunk_size").get<int64_t>();
    r.threads = settings.at("threads").get<int>();
    for (const Json& row : results.at("candidates")) {
      CompareRow parsed = RowFromJson(row);
      parsed.reused = row.at("reused").get<bool>();
      r.rows.push_back(std::move(parsed));
    }
    if (results.contains("kv_curve")) r.kv_curve = results.at("kv_curve");
    r.corpus_seconds = results.at("timings").at("corpus_seconds").get<double>();
    r.total_seconds = results.at("timings").at("total_seconds").get<double>();
    return r;
  } catch (const nlohmann::json::exception& e) {
    Fail(kComponent, "{}: not the results of `proctor compare` or `demo` ({})", source, e.what());
  }
}

ResultsEnvelope CompareResultsEnvelope(const CompareResult& result, const CompareOptions& options,
                                       const std::string& command) {
  ResultsEnvelope env{.command = command, .threads = result.threads};
  double hash_seconds = 0;
  {
    ScopedSeconds hashing(&hash_seconds);
    env.inputs.push_back(result.teacher_description);  // hashed when the teacher was opened
    for (const auto& file : options.data) env.inputs.push_back(DescribeFileInput("data", file));
    if (fs::exists(result.corpus_dir / "manifest.json")) {
      env.outputs.push_back(DescribeCorpusInput("corpus", result.corpus_dir));
    }
    if (fs::exists(result.dump_dir / "manifest.json")) {
      env.outputs.push_back(DescribeReferenceLogitsInput("reference_logits", result.dump_dir));
    }
    for (const auto& row : result.rows) {
      if (row.kind == "quantized" && fs::exists(row.model)) {
        env.outputs.push_back(DescribeModelInput("candidate", row.model));
      }
    }
  }
  env.settings = {{"n_seqs", options.n_seqs},
                  {"ctx_len", options.ctx_len},
                  {"top_k", options.top_k},
                  {"seed", options.seed},
                  {"candidates", options.candidates},
                  {"quantize", options.quantize},
                  {"chunk_size", options.chunk_size},
                  {"compute", result.compute},
                  {"kv", result.kv},
                  {"kv_start", options.runtime.kv.start},
                  {"kv_curve", options.kv_schemes},
                  {"kv_decode_steps", options.kv_decode_steps}};
  env.results = CompareResultToJson(result);
  ResultsTimings& t = env.timings;
  t.forward_seconds = result.dump.timings.forward_seconds;
  t.scoring_seconds = result.dump.timings.scoring_seconds;
  t.io_seconds = result.dump.timings.io_seconds;
  t.total_seconds = result.total_seconds;
  t.hash_seconds = hash_seconds;
  for (const auto& row : result.rows) {
    if (row.kl.contains("warnings")) {
      for (const auto& w : row.kl["warnings"]) {
        env.warnings.push_back(row.candidate + ": " + w.get<std::string>());
      }
    }
  }
  return env;
}

}  // namespace proctor
