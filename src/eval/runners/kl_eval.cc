#include "eval/runners/kl_eval.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>

#include "eval/formats/per_position.h"
#include "eval/formats/ref_logits_integrity.h"
#include "eval/runners/dump_floor.h"
#include "eval/runners/eval_model.h"
#include "eval/runners/logits_chunks.h"
#include "eval/runners/vocab_check.h"
#include "util/error.h"
#include "util/file.h"

namespace proctor {
namespace {

constexpr const char* kComponent = "kl";

std::string FormatSci(double v) { return fmt::format("{:.3e}", v); }

}  // namespace

KlEvalResult EvaluateKlVsReferenceLogits(const KlEvalOptions& options) {
  const double start = MonotonicSeconds();
  CheckChunkSize(options.chunk_size, kComponent);
  if (options.max_seqs < 0) Fail(kComponent, "--n must be >= 0, got {}", options.max_seqs);
  KlEvalResult result;
  ResultsTimings& timings = result.timings;
  std::optional<ReferenceLogitsDump> opened;
  {
    ScopedSeconds io(&timings.io_seconds);
    opened.emplace(ReferenceLogitsDump::Open(options.reference_dir));
  }
  const ReferenceLogitsDump& dump = *opened;
  TeacherForcedLogits forward = options.forward;
  // The candidate, opened once (unless injected).
  std::shared_ptr<const EvalModel> model = options.opened;
  if (!forward) {
    ScopedSeconds load(&timings.load_seconds);
    if (!model) model = EvalModel::Open(options.candidate);
    forward = model->Forward(options.runtime);
  }

  result.label = dump.Label();
  result.candidate = options.candidate;
  result.reference = options.reference_dir.string();
  result.manifest = dump.manifest();
  result.positions_per_seq = dump.positions();
  result.chunk_size = options.chunk_size;
  result.warnings = dump.warnings();
  const int64_t run_seqs =
      options.max_seqs > 0 ? std::min(options.max_seqs, dump.n_seqs()) : dump.n_seqs();
  const ItemRange seqs = ItemsOf(options.shard, run_seqs);
  result.shard = options.shard;
  result.shard_seqs = seqs;
  result.seqs_total = run_seqs;
  const int64_t n_seqs = seqs.size();
  const int64_t positions = dump.positions();

  LogitsChunkDriver driver({{fmt::format("candidate '{}'", options.candidate), forward}},
                           {.component = kComponent,
                            .chunk_size = options.chunk_size,
                            .progress_label = "kl",
                            .total_positions = static_cast<uint64_t>(n_seqs * positions),
                            .pool = options.pool,
                            .quiet = options.quiet});
  result.threads = driver.pool().num_threads();
  // What the dump's manifest records about the teacher's vocabulary, against the candidate.
  if (options.check_tokenizer && model) {
    driver.OnVocabulary([&](int64_t) {
      CheckRecordedVocabulary(RecordedVocabularyIdentity(dump.manifest(), dump.ManifestPath()),
                              model->Identity("candidate"));
    });
  }
  std::vector<std::vector<PositionScore>> scores(static_cast<size_t>(n_seqs));
  ReferenceRecords records;
  std::vector<uint8_t> seen;  // CheckReferenceRecord's scratch
  for (int64_t s = seqs.first; s < seqs.end; ++s) {
    std::vector<int32_t> tokens;
    {
      ScopedSeconds io(&timings.io_seconds);
      tokens = dump.Tokens(s);
    }
    const std::string where = fmt::format("'{}'", dump.SequencePath(s).string());
    auto& seq_scores = scores[static_cast<size_t>(s - seqs.first)];
    seq_scores.resize(static_cast<size_t>(positions));
    // The sequence's last position predicts no corpus token and has no record: it is not scored.
    driver.RunSequence(tokens, positions, where, [&](const LogitsChunk& chunk) {
      {
        ScopedSeconds io(&timings.io_seconds);
        dump.ReadRecords(s, chunk.start, chunk.start + chunk.scored, &records);
      }
      {
        // The record checks of `proctor inspect`, on every record scored (O(top-k) each).
        ScopedSeconds scoring(&timings.scoring_seconds);
        for (int64_t r = 0; r < records.count; ++r) {
          CheckReferenceRecord(records, r, dump.SequencePath(s).string(), chunk.start + r, &seen);
        }
      }
      ScopedSeconds scoring(&timings.scoring_seconds);
      ScoreChunk(records, chunk[0], chunk.scored, where, driver.pool(),
                 seq_scores.data() + chunk.start, tokens.data() + chunk.start + 1);
    });
  }
  driver.Finish();
  result.candidate_vocab = driver.vocab();
  timings.forward_seconds = driver.forward_seconds();
  FinishKlRun(options.per_position,
              {.flags = 0,
               .positions_per_seq = static_cast<uint64_t>(positions),
               .top_k = static_cast<uint64_t>(dump.top_k()),
               .vocab = static_cast<uint64_t>(result.candidate_vocab)},
              scores, start, options.worst, &result);
  DescribeInputsAfterRun(options.describe_inputs, timings, [&] {
    result.inputs.push_back(DescribeReferenceLogitsInput("reference_logits", dump));
    result.inputs.push_back(EvalModel::Describe(model.get(), "candidate", options.candidate));
  });
  return result;
}

void FinishKlRun(const std::filesystem::path& per_position, const PerPositionHeader& header,
                 const std::vector<std::vector<PositionScore>>& scores, double start, int worst,
                 KlEvalResult* result) {
  if (!per_position.empty()) {
    ScopedSeconds io(&result->timings.io_seconds);
    WritePerPositionFile(per_position, header, scores);
  }
  {
    ScopedSeconds scoring(&result->timings.scoring_seconds);
    result->where = ComputeKlWhere(scores, worst);
  }
  result->timings.total_seconds = MonotonicSeconds() - start;
  result->stats = AggregateKlRun(scores, result->timings.total_seconds);
  for (const auto& seq : scores) {
    if (seq.empty()) continue;
    double kl = 0, nll = 0;
    int64_t hits = 0, known = 0;
    for (const auto& p : seq) {
      kl += p.kl;
      hits += p.top1 ? 1 : 0;
      if (!std::isnan(p.candidate_nll)) {
        nll += p.candidate_nll;
        ++known;
      }
    }
    const double n = static_cast<double>(seq.size());
    result->sequence_mean_kl.push_back(kl / n);
    result->sequence_top1.push_back(static_cast<double>(hits) / n);
    result->sequence_mean_nll.push_back(known == 0 ? std::numeric_limits<double>::quiet_NaN()
                                                   : nll / static_cast<double>(known));
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
  j["sequence_top1"] = r.sequence_top1;
  nlohmann::ordered_json nll = nlohmann::ordered_json::array();
  for (const double v : r.sequence_mean_nll) nll.push_back(number_or_null(v));
  j["sequence_mean_nll"] = nll;
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
  j["where"] = KlWhereToJson(r.where);
  return j;
}

KlEvalResult KlEvalResultFromJson(const nlohmann::json& j, const std::string& source) {
  auto field = [&](const nlohmann::json& object, const char* name) -> const nlohmann::json& {
    if (!object.is_object() || !object.contains(name)) {
      Fail("results", "'{}' has no '{}' (a `proctor kl` result was expected)", source, name);
    }
    return object.at(name);
  };
  auto number = [&](const nlohmann::json& object, const char* name) {
    const nlohmann::json& v = field(object, name);
    if (v.is_null()) return std::numeric_limits<double>::quiet_NaN();
    if (!v.is_number()) Fail("results", "'{}': '{}' is not a number", source, name);
    return v.get<double>();
  };
  auto numbers = [&](const nlohmann::json& object, const char* name) {
    const nlohmann::json& v = field(object, name);
    if (!v.is_array()) Fail("results", "'{}': '{}' is not a list", source, name);
    std::vector<double> out;
    for (const nlohmann::json& x : v) {
      out.push_back(x.is_null() ? std::numeric_limits<double>::quiet_NaN() : x.get<double>());
    }
    return out;
  };
  auto summary = [&](const char* name) {
    const nlohmann::json& d = field(j, name);
    return DistributionSummary{.mean = number(d, "mean"),
                               .standard_error = number(d, "standard_error"),
                               .median = number(d, "median"),
                               .p95 = number(d, "p95"),
                               .p99 = number(d, "p99"),
                               .max = number(d, "max")};
  };
  try {
    KlEvalResult r;
    r.mode = field(j, "mode").get<std::string>();
    r.label = field(j, "label").get<std::string>();
    r.candidate = field(j, "candidate").get<std::string>();
    const nlohmann::json& reference = field(j, "reference");
    r.reference = field(reference, "path").get<std::string>();
    r.manifest.model = field(reference, "model").get<std::string>();
    r.manifest.corpus_sha256 = field(reference, "corpus_sha256").get<std::string>();
    r.manifest.top_k = field(reference, "top_k").get<int64_t>();
    r.manifest.ctx_len = field(reference, "ctx_len").get<int64_t>();
    r.manifest.n_seqs = field(reference, "n_seqs").get<int64_t>();
    r.positions_per_seq = field(reference, "positions_per_seq").get<int64_t>();
    r.stats.kl = summary("kl");
    r.stats.tail_kl = summary("tail_kl");
    r.stats.top1_agreement = number(j, "top1_agreement");
    r.stats.mean_mass = number(j, "mean_captured_mass");
    r.stats.min_mass = number(j, "min_captured_mass");
    r.stats.candidate_mean_nll = number(j, "candidate_mean_nll");
    r.stats.teacher_mean_nll = number(j, "teacher_mean_nll");
    r.stats.teacher_nll_positions = field(j, "teacher_nll_positions").get<int64_t>();
    r.stats.positions = field(j, "positions").get<int64_t>();
    r.stats.sequences = field(j, "sequences").get<int64_t>();
    r.stats.elapsed_seconds = number(j, "elapsed_seconds");
    r.stats.positions_per_second = number(j, "positions_per_second");
    r.sequence_mean_kl = numbers(j, "sequence_mean_kl");
    r.sequence_top1 = numbers(j, "sequence_top1");
    r.sequence_mean_nll = numbers(j, "sequence_mean_nll");
    r.candidate_vocab = field(j, "candidate_vocab").get<int64_t>();
    r.chunk_size = field(j, "chunk_size").get<int64_t>();
    r.threads = field(j, "threads").get<int>();
    return r;
  } catch (const nlohmann::json::exception& e) {
    Fail("results", "'{}' is not a `proctor kl` result: {}", source, e.what());
  }
}

namespace {

// What both KL envelopes share: results, timings, warnings, the per-position output.
ResultsEnvelope KlEnvelope(const KlEvalResult& result, const std::filesystem::path& per_position) {
  ResultsEnvelope env{.command = "kl", .threads = result.threads};
  env.inputs = result.inputs;
  env.results = KlEvalResultToJson(result);
  env.timings = result.timings;
  env.warnings = result.warnings;
  if (!per_position.empty()) {
    env.outputs.push_back({{"role", "per_position"}, {"path", per_position.string()}});
  }
  return env;
}

}  // namespace

ResultsEnvelope KlResultsEnvelope(const KlEvalResult& result, const KlEvalOptions& options) {
  ResultsEnvelope env = KlEnvelope(result, options.per_position);
  env.settings = {{"mode", result.mode},
                  {"chunk_size", options.chunk_size},
                  {"max_seqs", options.max_seqs},
                  {"compute", std::string(ComputeModeName(options.runtime.compute))},
                  {"kv", options.runtime.kv.Name()},
                  {"reference_compute", nullptr},
                  {"reference_kv", nullptr},
                  {"top_k", result.manifest.top_k},
                  {"full_vocabulary", false}};
  // A quantized cache converts when a step ends with --kv-start positions held.
  if (options.runtime.kv.quantized()) env.settings["kv_start"] = options.runtime.kv.start;
  return env;
}

ResultsEnvelope KlResultsEnvelope(const KlEvalResult& result, const KlTwoModelOptions& options) {
  ResultsEnvelope env = KlEnvelope(result, options.per_position);
  env.settings = {
      {"mode", result.mode},
      {"chunk_size", options.chunk_size},
      {"max_seqs", options.max_seqs},
      {"compute", std::string(ComputeModeName(options.runtime.compute))},
      {"kv", options.runtime.kv.Name()},
      {"reference_compute", std::string(ComputeModeName(options.reference_runtime.compute))},
      {"reference_kv", options.reference_runtime.kv.Name()},
      {"top_k", result.manifest.top_k},
      {"full_vocabulary", true},
      {"decode_steps", options.decode_steps}};
  // When an affine cache converts: at the end of the prefill on the decode path, else --kv-start.
  const auto kv_start = [&](const RuntimeOptions& runtime, bool candidate) -> nlohmann::json {
    if (!runtime.kv.quantized()) return nullptr;
    if (candidate && options.decode_steps > 0) {
      // Over prompts each converts at its own prefill's end (length - 1 - decode_steps).
      if (!result.prompts.is_null()) return nullptr;
      return result.manifest.ctx_len - 1 - options.decode_steps;
    }
    return runtime.kv.start;
  };
  env.settings["kv_start"] = kv_start(options.runtime, true);
  env.settings["reference_kv_start"] = kv_start(options.reference_runtime, false);
  if (!result.prompts.is_null()) {
    env.settings["prompts"] = result.prompts;
    env.settings["seq"] = options.prompt_options.max_tokens;
  }
  return env;
}

std::string KlLegend(const std::vector<KlEvalResult>& results, bool with_floor) {
  if (results.empty()) return "";
  const bool two_model = results.front().mode == "two-model" || results.front().mode == "decode";
  const std::string over =
      two_model ? "over the full vocabulary"
                : fmt::format("over the reference's top-{} logits", results.front().manifest.top_k);
  return fmt::format(
      "How to read it:\n"
      "  KL          KL(reference || candidate) {},\n"
      "              nats per position: mean of the per-sequence means +- its standard error;\n"
      "              median, p95, p99 and max over all positions\n"
      "  tail KL     mean of the KL with one more bin for the probability outside the top-k (a\n"
      "              lower bound on the full-vocabulary KL; equal to KL over the full vocabulary)\n"
      "  top-1       how often the candidate's argmax is the reference's\n"
      "  mass        mean reference probability inside the kept logits (1 over the full\n"
      "              vocabulary); min m.: its smallest value at any position\n"
      "  pos/s       positions scored per second, forward included\n{}",
      over,
      with_floor
          ? "  floor       the teacher scored against its own dump when it was written: what "
            "storing\n"
            "              the top-k logits in fp16 costs (the dump's floor.json)\n"
            "  dKL vs floor the row's KL minus the floor's, paired over the same sequences +- SE;\n"
            "              verdict: at floor when its 95% interval includes 0, else worse/better\n"
          : "");
}

std::string FormatKlTable(const std::vector<KlEvalResult>& results, const KlEvalResult* floor) {
  std::string out;
  if (results.empty()) return out;
  out += fmt::format("reference: {}\n", results.front().label);
  // The floor's row is named for what it is; its own row has no verdict columns' values.
  std::vector<std::pair<std::string, const KlEvalResult*>> rows;
  if (floor) rows.emplace_back("floor (teacher vs its dump)", floor);
  for (const auto& r : results) rows.emplace_back(r.candidate, &r);
  size_t width = 9;
  for (const auto& [name, r] : rows) width = std::max(width, name.size());
  const std::string floor_header =
      floor ? fmt::format("  {:>21}  {:>8}", "dKL vs floor +- SE", "verdict") : "";
  out += fmt::format(
      "{:<{}}  {:>21}{}  {:>9}  {:>9}  {:>9}  {:>9}  {:>9}  {:>7}  {:>6}  {:>6}  {:>9}  {:>8}\n",
      "candidate", width, "KL mean +- SE", floor_header, "median", "p95", "p99", "max", "tail KL",
      "top-1", "mass", "min m.", "positions", "pos/s");
  for (const auto& [name, r] : rows) {
    const KlRunStats& s = r->stats;
    std::string against;
    if (floor && r == floor) {
      against = fmt::format("  {:>21}  {:>8}", "-", "floor");
    } else if (floor) {
      const RowAgainstAbove vs = CompareWithFloor(*floor, *r);
      against = fmt::format("  {:>21}  {:>8}", RowAgainstAboveText(vs, "+-"), vs.verdict);
    }
    // The floor was scored inside the dump: it has no speed of its own.
    const std::string speed = r == floor ? "-" : fmt::format("{:.0f}", s.positions_per_second);
    out += fmt::format(
        "{:<{}}  {:>21}{}  {:>9}  {:>9}  {:>9}  {:>9}  {:>9}  {:>7.4f}  {:>6.4f}  {:>6.4f}  {:>9}  "
        "{:>8}\n",
        name, width, FormatSci(s.kl.mean) + " +- " + fmt::format("{:.1e}", s.kl.standard_error),
        against, FormatSci(s.kl.median), FormatSci(s.kl.p95), FormatSci(s.kl.p99),
        FormatSci(s.kl.max), FormatSci(s.tail_kl.mean), s.top1_agreement, s.mean_mass, s.min_mass,
        s.positions, speed);
  }
  return out;
}

}  // namespace proctor
