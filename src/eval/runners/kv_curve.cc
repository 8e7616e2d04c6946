// `proctor kv-curve` (kv_curve.h).
#include "eval/runners/kv_curve.h"

#include <fmt/format.h>

#include "eval/runners/eval_model.h"
#include "eval/runners/kl_diff.h"
#include "eval/runners/logits_chunks.h"
#include "eval/scoring/paired_difference.h"
#include "util/error.h"
#include "util/timing.h"

namespace proctor {
namespace {

constexpr const char* kComponent = "kv-curve";

}  // namespace

std::vector<std::string> DefaultKvCurveSchemes(int head_dim) {
  std::vector<std::string> schemes = {"f32", "bf16", "f16"};
  if (head_dim % 32 == 0) {  // llama.cpp's cache types: 32-element blocks within a head
    schemes.insert(schemes.end(), {"ggml:q8_0", "ggml:q4_0"});
  }
  for (const int group : {64, 32}) {
    if (head_dim % group != 0) continue;
    for (const int bits : {8, 6, 4, 3, 2})
      schemes.push_back(fmt::format("affine:{}:g{}", bits, group));
    break;
  }
  if (head_dim >= 32 && (head_dim & (head_dim - 1)) == 0) {  // TurboQuant rotates a whole head
    for (const char* bits : {"k8v8", "k8v4", "k8v3", "k8v2", "k4v3", "k4v2"})
      schemes.push_back(fmt::format("turbo:{}", bits));
  }
  return schemes;
}

KvCurveResult RunKvCurve(const KvCurveOptions& options) {
  const double start = MonotonicSeconds();
  CheckChunkSize(options.chunk_size, kComponent);
  if (options.max_seqs < 0) Fail(kComponent, "--n must be >= 0, got {}", options.max_seqs);
  if (options.decode_steps < 1) {
    Fail(kComponent, "--decode-steps must be >= 1, got {}", options.decode_steps);
  }
  KvCurveResult result;
  result.model = options.model;
  std::shared_ptr<const EvalModel> model;
  {
    ScopedSeconds load(&result.timings.load_seconds);
    model = options.opened ? options.opened : EvalModel::Open(options.model);
  }
  const ModelConfig& config = model->config();
  const std::vector<std::string> names =
      options.schemes.empty() ? DefaultKvCurveSchemes(config.head_dim) : options.schemes;
  std::vector<KvScheme> schemes;
  for (const std::string& name : names) {
    schemes.push_back(ParseKvScheme(name));
    CheckKvSchemeFits(schemes.back(), config.head_dim, config.num_layers);
  }
  const int64_t kv_dim = int64_t{config.num_kv_heads} * config.head_dim;
  std::shared_ptr<const PromptSet> prompts;
  if (!options.prompts_file.empty()) {
    if (model->tokenizer() == nullptr) {
      Fail(kComponent, "--prompts '{}': model '{}' has no tokenizer to encode them",
           options.prompts_file.string(), options.model);
    }
    PromptSetOptions prompt_options = options.prompt_options;
    prompt_options.max_prompts = options.max_seqs;
    prompt_options.min_tokens = options.decode_steps + 2;
    prompt_options.chat_model_dir = model->chat_template_source();
    prompt_options.component = kComponent;
    prompt_options.quiet = options.quiet;
    ScopedSeconds io(&result.timings.io_seconds);
    prompts = std::make_shared<const PromptSet>(
        ReadPromptSet(options.prompts_file, *model->tokenizer(), prompt_options));
    result.prompts = PromptSetSummary(*prompts, prompt_options.min_tokens);
  }
  for (size_t i = 0; i < schemes.size(); ++i) {
    if (!options.quiet) {
      fmt::print(stderr, "kv-curve: {} ({} of {})\n", schemes[i].Name(), i + 1, schemes.size());
    }
    RuntimeOptions reference_runtime, candidate_runtime;  // the f32 cache, and the scheme's
    reference_runtime.compute = candidate_runtime.compute = options.compute;
    candidate_runtime.kv = schemes[i];
    const KlEvalResult run = EvaluateKlTwoModels({.reference = options.model,
                                                  .candidate = options.model,
                                                  .corpus_dir = options.corpus_dir,
                                                  .max_seqs = options.max_seqs,
                                                  .chunk_size = options.chunk_size,
                                                  .decode_steps = options.decode_steps,
                                                  .prompts = prompts,
                                                  .opened = model,
                                                  .runtime = candidate_runtime,
                                                  .reference_runtime = reference_runtime,
                                                  .quiet = options.quiet});
    result.sequences = run.stats.sequences;
    result.ctx_len = run.manifest.ctx_len;
    result.threads = run.threads;
    result.timings.forward_seconds += run.timings.forward_seconds;
    result.timings.scoring_seconds += run.timings.scoring_seconds;
    result.timings.io_seconds += run.timings.io_seconds;
    result.rows.push_back(
        {.scheme = schemes[i],
         .effective_bits = schemes[i].EffectiveBits(),
         .bytes_per_token = KvBytesPerToken(schemes[i], kv_dim, config.num_layers,
                                            config.layer_uses_linear_attention),
         .stats = run.stats,
         .sequence_mean_kl = run.sequence_mean_kl,
         .sequence_top1 = run.sequence_top1,
         .sequence_mean_nll = run.sequence_mean_nll,
         .decode_tokens_per_second =
             run.candidate_decode_seconds > 0
                 ? static_cast<double>(run.decode_steps_run) / run.candidate_decode_seconds
                 : 0.0});
  }
  result.decode_steps = options.decode_steps;
  result.prefill = prompts ? -1 : result.ctx_len - 1 - options.decode_steps;
  result.timings.total_seconds = MonotonicSeconds() - start;
  DescribeInputsAfterRun(options.describe_inputs, result.timings, [&] {
    result.inputs.push_back(model->Describe("model"));
    if (prompts) {
      result.inputs.push_back(DescribePromptsInput("prompts", *prompts));
    } else {
      result.inputs.push_back(DescribeCorpusInput("corpus", options.corpus_dir));
    }
  });
  return result;
}

std::string FormatKvCurveTable(const KvCurveResult& r) {
  std::string out =
      r.prompts.is_null()
          ? fmt::format(
                "kv-curve: {}, {} sequences, each a {}-token prefill at full precision then {} "
                "decode steps, against the f32 cache\n",
                r.model, r.sequences, r.prefill, r.decode_steps)
          : fmt::format(
                "kv-curve: {}, {} prompts of {} to {} tokens from '{}' ({} shorter than {} "
                "skipped), each prefilled at full precision but for its last {} tokens, then {} "
                "decode steps, against the f32 cache\n",
                r.model, r.sequences, r.prompts["shortest"].get<int64_t>(),
                r.prompts["longest"].get<int64_t>(), r.prompts["path"].get<std::string>(),
                r.prompts["skipped_short"].get<int64_t>(), r.prompts["min_tokens"].get<int64_t>(),
                r.decode_steps + 1, r.decode_steps);
  out += fmt::format("{:<14}  {:>6}  {:>11}  {:>21}  {:>20}  {:>8}  {:>9}  {:>9}  {:>7}  {:>9}\n",
                     "scheme", "bits", "bytes/token", "KL mean +- SE", "dKL vs above +- SE",
                     "verdict", "median", "p95", "top-1", "decode/s");
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const KvCurveRow& row = r.rows[i];
    const KlRunStats& s = row.stats;
    // The f32 cache against itself scores exactly 0: the floor, and the row above the first.
    const std::vector<double> f32(row.sequence_mean_kl.size(), 0.0);
    const RowAgainstAbove v = CompareRowWithAbove(
        f32, i == 0 ? f32 : r.rows[i - 1].sequence_mean_kl, row.sequence_mean_kl);
    out += fmt::format(
        "{:<14}  {:>6.2f}  {:>11}  {:>21}  {:>20}  {:>8}  {:>9.2e}  {:>9.2e}  {:>7.4f}  {:>9.2f}\n",
        row.scheme.Name(), row.effective_bits, row.bytes_per_token,
        fmt::format("{:.3e} +- {:.1e}", s.kl.mean, s.kl.standard_error),
        RowAgainstAboveText(v, "+-"), v.verdict, s.kl.median, s.kl.p95, s.top1_agreement,
        row.decode_tokens_per_second);
  }
  out +=
      "bits: stored bits per key or value element (affine: codes, f32 scale and bias per group)\n"
      "bytes/token: keys and values of one position in every layer\n"
      "KL: KL(f32 cache || scheme) over the full vocabulary at each decode step: mean over\n"
      "    sequences +- standard error; median and p95 over steps (f32 against itself: 0)\n"
      "dKL vs above: the row's mean KL minus the row above's (the first row: minus the f32\n"
      "    cache's 0), paired over the same sequences, +- the paired standard error\n"
      "verdict: at floor when the paired 95% interval against the f32 cache includes 0, else\n"
      "    worse / better when the interval against the row above excludes 0, same when not\n"
      "top-1: both arms' argmax agree; decode/s: the scheme arm's one-token steps per second\n";
  return out;
}

ResultsEnvelope KvCurveResultsEnvelope(const KvCurveResult& r, const KvCurveOptions& options) {
  ResultsEnvelope env{.command = "kv-curve", .threads = r.threads};
  env.inputs = r.inputs;
  env.settings = {{"model", r.model},
                  {"max_seqs", options.max_seqs},
                  {"decode_steps", r.decode_steps},
                  {"prefill", r.prefill >= 0 ? nlohmann::ordered_json(r.prefill)
                                             : nlohmann::ordered_json(nullptr)},
                  {"chunk_size", options.chunk_size},
                  {"compute", std::string(ComputeModeName(options.compute))}};
  // A row's per-sequence lists as a kl result has them, for PairKlMetrics.
  const auto lists = [](const KvCurveRow& row) {
    return nlohmann::json{{"sequence_mean_kl", row.sequence_mean_kl},
                          {"sequence_top1", row.sequence_top1},
                          {"sequence_mean_nll", row.sequence_mean_nll}};
  };
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const KvCurveRow& row = r.rows[i];
    const KlRunStats& s = row.stats;
    nlohmann::ordered_json vs_above = nullptr;
    if (i > 0) {
      const KvCurveRow& above = r.rows[i - 1];
      vs_above = {{"kv", above.scheme.Name()},
                  {"bootstrap_draws", kDefaultBootstrapDraws},
                  {"seed", kDefaultBootstrapSeed},
                  {"metrics", KlDiffMetricsToJson(PairKlMetrics(
                                  lists(above), lists(row), above.scheme.Name(), row.scheme.Name(),
                                  kDefaultBootstrapDraws, kDefaultBootstrapSeed))}};
    }
    rows.push_back({{"kv", row.scheme.Name()},
                    {"effective_bits", row.effective_bits},
                    {"bytes_per_token", row.bytes_per_token},
                    {"kl",
                     {{"mean", s.kl.mean},
                      {"standard_error", s.kl.standard_error},
                      {"median", s.kl.median},
                      {"p95", s.kl.p95},
                      {"p99", s.kl.p99},
                      {"max", s.kl.max}}},
                    {"top1_agreement", s.top1_agreement},
                    {"positions", s.positions},
                    {"decode_tokens_per_second", row.decode_tokens_per_second},
                    {"vs_above", vs_above}});
  }
  if (!r.prompts.is_null()) {
    env.settings["prompts"] = r.prompts;
    env.settings["seq"] = options.prompt_options.max_tokens;
  }
  env.results = {{"sequences", r.sequences}, {"ctx_len", r.ctx_len}, {"rows", rows}};
  env.timings = r.timings;
  return env;
}

}  // namespace proctor
