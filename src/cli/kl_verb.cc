// `proctor kl`: scores a candidate model against a teacher: a saved teacher
// (`--reference-logits DIR`, a reference-logits dump) or a resident one (`--reference MODEL
// --corpus DIR`, full-vocabulary KL; `--kv-arm SCHEME`: the model itself with the f32 cache;
// `--decode-steps S`: the decode path; `--self LEVER=A:B`: one model, one engine lever set two
// ways). Per-position KL, top-1, captured mass, tail-aware KL;
// `--per-position FILE` keeps every position, `--json FILE` every statistic.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cli/engine_flags.h"
#include "cli/verbs.h"
#include "eval/formats/corpus.h"
#include "eval/formats/ref_logits.h"
#include "eval/runners/dump_floor.h"
#include "eval/runners/kl_eval.h"
#include "eval/runners/kl_shards.h"
#include "eval/runners/kl_where_report.h"
#include "eval/runners/llama_kld_eval.h"
#include "eval/runners/results_json.h"
#include "model/load.h"
#include "text/tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace proctor::cli {
namespace {

// --self LEVER=A:B: one engine lever, the reference arm's value A and the candidate arm's B.
struct SelfAb {
  std::string lever, a, b;
};

// A thread count of --self threads=A:B, or a forward chunk of --self chunk=A:B (a whole number
// >= 1), or nullopt.
std::optional<int> ParseThreadCount(const std::string& value) {
  int n = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (ec != std::errc() || end != value.data() + value.size() || n < 1) return std::nullopt;
  return n;
}

bool ValidLeverValue(const std::string& lever, const std::string& value) {
  try {
    if (lever == "compute") ParseComputeMode(value);
    if (lever == "kv") ParseKvScheme(value);
    if (lever == "threads" || lever == "chunk") return ParseThreadCount(value).has_value();
    return true;
  } catch (const Error&) {
    return false;
  }
}

// Splits at the one ':' that leaves a valid value on both sides (KV schemes hold ':' themselves).
SelfAb ParseSelfAb(const std::string& text) {
  const size_t eq = text.find('=');
  const std::string lever = text.substr(0, eq);
  if (eq == std::string::npos ||
      (lever != "compute" && lever != "kv" && lever != "threads" && lever != "chunk")) {
    Fail("cli",
         "--self {}: expected LEVER=A:B with LEVER compute, kv, threads or chunk (e.g. --self "
         "compute=f32:bf16, --self kv=f32:affine:4, --self threads=1:2, --self chunk=512:1)",
         text);
  }
  const std::string values = text.substr(eq + 1);
  std::vector<SelfAb> splits;
  for (size_t colon = values.find(':'); colon != std::string::npos;
       colon = values.find(':', colon + 1)) {
    SelfAb s{lever, values.substr(0, colon), values.substr(colon + 1)};
    if (ValidLeverValue(lever, s.a) && ValidLeverValue(lever, s.b)) splits.push_back(s);
  }
  if (splits.size() != 1) {
    Fail("cli", "--self {}: '{}' is {} two valid {} values A:B", text, values,
         splits.empty() ? "not" : "ambiguous as", lever);
  }
  return splits.front();
}

// Where the KL lives, the worst positions' tokens as text when the candidate has a tokenizer.
// A shard's `where` numbers its sequences from 0; their text is the run's sequences from its
// first.
void PrintKlWhere(const KlEvalResult& result, const std::string& reference_logits,
                  const std::string& corpus_dir, const std::string& candidate,
                  int64_t decode_steps) {
  const int64_t first = result.shard_seqs.first;
  KlWhereContext context;
  std::unique_ptr<text::Tokenizer> tokenizer;
  try {
    tokenizer = text::LoadTokenizer(LocateModel(candidate).path);
  } catch (const Error&) {  // no tokenizer: token ids are shown
  }
  context.tokenizer = tokenizer.get();
  if (!reference_logits.empty()) {
    auto dump = std::make_shared<ReferenceLogitsDump>(ReferenceLogitsDump::Open(reference_logits));
    context.tokens = [dump, first](int64_t seq) { return dump->Tokens(first + seq); };
  } else if (!corpus_dir.empty()) {  // over --prompts no context is shown
    auto corpus = std::make_shared<Corpus>(ReadCorpus(corpus_dir));
    context.tokens = [corpus, first](int64_t seq) {
      const std::span<const int32_t> tokens = corpus->Sequence(first + seq);
      return std::vector<int32_t>(tokens.begin(), tokens.end());
    };
    if (decode_steps > 0) context.first_predicted = corpus->ctx_len - decode_steps;
  }
  fmt::print("\n{}", FormatKlWhere(result.where, context));
}

}  // namespace

void RegisterKlVerb(CLI::App& app) {
  struct Args {
    std::string reference_logits;
    std::string reference;
    std::string corpus;
    std::string prompts;  // the decode path over prompts of their own lengths
    int64_t seq = 256;
    std::string candidate;
    int64_t n = 0;
    std::string json;
    std::string per_position;
    std::string reference_compute;  // empty: the candidate's --compute
    std::string reference_kv;       // empty: the candidate's --kv
    std::string kv_arm;             // KV-arm A/B: the candidate's scheme, the reference f32
    std::string self_ab;            // --self LEVER=A:B
    int64_t decode_steps = 0;
    bool where = false;
    int worst = 20;
    std::string shard;  // --shard I/N
    EngineFlags engine;
  };
  auto args = std::make_shared<Args>();
  auto* verb = app.add_subcommand(
      "kl",
      "Score a candidate model against a teacher: a reference-logits dump (--reference-logits) "
      "or a resident reference model over a corpus (--reference --corpus)");
  auto* saved = verb->add_option("--reference-logits", args->reference_logits,
                                 "Reference-logits dump directory (saved teacher), or a "
                                 "llama.cpp KL-divergence base file (.kld)");
  auto* resident = verb->add_option(
      "--reference", args->reference,
      "Reference model (two-model mode: both resident, full-vocabulary KL over --corpus)");
  auto* corpus = verb->add_option("--corpus", args->corpus,
                                  "Corpus directory (tokens.bin + manifest.json) for --reference");
  auto* prompts = verb->add_option(
      "--prompts", args->prompts,
      "With --decode-steps S, instead of --corpus: a .jsonl file ({\"text\"} or {\"messages\"} "
      "rows, tokenized as `proctor corpus` does, a chat row with the reference's template) or a "
      "text file; each row is a prompt of its own length, prefilled but for its last S + 1 "
      "tokens, then decoded; rows shorter than S + 2 tokens are skipped and counted. The first "
      "--n-seqs (default 64) prompts are scored");
  verb->add_option("--seq", args->seq,
                   "With --prompts: a longer prompt keeps its first N tokens (default 256)")
      ->check(CLI::PositiveNumber)
      ->needs(prompts);
  auto* kv_arm = verb->add_option(
      "--kv-arm", args->kv_arm,
      "KV-arm A/B over --corpus: the reference is the candidate model itself with the f32 cache, "
      "the candidate arm runs with this --kv scheme (one load), e.g. --kv-arm affine:4");
  auto* self_ab = verb->add_option(
      "--self", args->self_ab,
      "Self A/B of one engine lever over --corpus, one load: LEVER=A:B with LEVER compute "
      "(f32, bf16), kv (any --kv scheme), threads (N) or chunk (positions per forward; the "
      "positions are scored in chunks of the larger); the reference arm runs A, the candidate "
      "arm B, e.g. --self kv=f32:affine:4 (A = B scores exactly 0)");
  saved->excludes(resident)->excludes(corpus)->excludes(kv_arm)->excludes(self_ab);
  prompts->excludes(corpus)->excludes(saved);
  resident->excludes(kv_arm)->excludes(self_ab);
  kv_arm->excludes(self_ab);
  verb->add_option("model,--model,--candidate", args->candidate,
                   "Candidate model: directory, .gguf file or cached HF id")
      ->required();
  verb->add_option("--decode-steps", args->decode_steps,
                   "With --corpus: the decode path. Each sequence's prompt is prefilled, then its "
                   "last S scored positions run one token per step (a quantized candidate cache is "
                   "converted when the prefill ends) and only they are scored")
      ->check(CLI::PositiveNumber);
  verb->add_option("--n-seqs", args->n,
                   "Score only the first N sequences (default: all) or prompts (default 64)")
      ->check(CLI::NonNegativeNumber);
  verb->add_option("--json", args->json,
                   "Also write the results JSON (docs/results-json.md) to this file");
  verb->add_option("--per-position", args->per_position,
                   "Write every position's scores to this file (docs/formats.md)");
  verb->add_flag("--where", args->where,
                 "Also print where the KL lives: by the teacher's confidence, by position in the "
                 "context, top-1 flips against the corpus, and the --worst positions with their "
                 "text (always in --json)");
  verb->add_option("--worst", args->worst,
                   "How many positions of largest KL --where and --json list (default 20)")
      ->check(CLI::Range(0, 100000));
  verb->add_option("--reference-compute", args->reference_compute,
                   "Two-model mode: the reference's --compute (default: the candidate's); with "
                   "the same model on both sides this is a self A/B of the switch")
      ->check(CLI::IsMember({"f32", "bf16", "q8"}))
      ->needs(resident);
  verb->add_option("--reference-kv", args->reference_kv,
                   "Two-model mode: the reference's --kv scheme (default: the candidate's)")
      ->needs(resident);
  verb->add_option("--shard", args->shard,
                   "I/N: with --json FILE, score only shard I of N (0-based) of the sequences or "
                   "prompts, a contiguous share, into a partial results file (its per-position "
                   "scores beside it, FILE.positions, or --per-position) for `proctor merge`; "
                   "rerun, a finished shard is kept");
  args->engine.Add(*verb);
  verb->footer(
      "Examples:\n"
      "  proctor kl --reference-logits teacher-dump/ --candidate q4.gguf --json q4.json\n"
      "  proctor kl --reference teacher.gguf --corpus corpus/ --candidate q4.gguf\n"
      "  proctor kl --model model.gguf --kv-arm affine:4 --corpus corpus/ --decode-steps 32\n"
      "  for i in 0 1 2 3; do proctor kl --reference-logits teacher-dump/ --candidate q4.gguf \\\n"
      "      --shard $i/4 --json part$i.json; done; proctor merge q4.json part*.json");
  kv_arm->excludes(verb->get_option("--kv"));
  verb->get_option("--reference-compute")->excludes(self_ab);
  verb->get_option("--reference-kv")->excludes(self_ab);
  auto old = std::make_shared<OldSpellings>();
  old->Add(*verb, "--n", "--n-seqs", args->n);
  verb->callback([args, verb, old] {
    old->Check(*verb);
    if (!args->kv_arm.empty()) {  // one model, two caches
      args->reference = args->candidate;
      args->reference_kv = "f32";
      args->engine.kv = args->kv_arm;
    }
    // --self threads=A:B: each arm's forward on its own pool (scoring stays on the global one).
    std::unique_ptr<ThreadPool> reference_pool, candidate_pool;
    int64_t reference_forward_chunk = 0, candidate_forward_chunk = 0;  // --self chunk=A:B
    if (!args->self_ab.empty()) {  // one model, one lever set two ways
      const SelfAb ab = ParseSelfAb(args->self_ab);
      if ((ab.lever == "compute" && verb->count("--compute") > 0) ||
          (ab.lever == "kv" && verb->count("--kv") > 0) ||
          (ab.lever == "chunk" && verb->count("--chunk") > 0)) {
        Fail("cli", "--self {} sets --{} for both arms; leave --{} out", args->self_ab, ab.lever,
             ab.lever);
      }
      args->reference = args->candidate;
      if (ab.lever == "compute") {
        args->reference_compute = ab.a;
        args->engine.compute = ab.b;
      } else if (ab.lever == "kv") {
        args->reference_kv = ab.a;
        args->engine.kv = ab.b;
      } else if (ab.lever == "chunk") {
        reference_forward_chunk = *ParseThreadCount(ab.a);
        candidate_forward_chunk = *ParseThreadCount(ab.b);
        args->engine.chunk = std::max(reference_forward_chunk, candidate_forward_chunk);
      } else {
        reference_pool = std::make_unique<ThreadPool>(*ParseThreadCount(ab.a));
        candidate_pool = std::make_unique<ThreadPool>(*ParseThreadCount(ab.b));
      }
    }
    if (args->reference_logits.empty() && args->reference.empty()) {
      Fail("cli",
           "kl needs a teacher: --reference-logits DIR, --reference MODEL --corpus DIR, or "
           "--kv-arm SCHEME --corpus DIR");
    }
    if (!args->prompts.empty() && args->decode_steps == 0) {
      Fail("cli", "--prompts needs --decode-steps S: prompts are scored on the decode path");
    }
    if (!args->reference.empty() && args->corpus.empty() && args->prompts.empty()) {
      Fail("cli", "{} needs --corpus DIR or --prompts FILE (the tokens both arms run over)",
           !args->kv_arm.empty()    ? "--kv-arm"
           : !args->self_ab.empty() ? "--self"
                                    : "--reference");
    }
    if (args->decode_steps > 0 && args->reference.empty()) {
      Fail("cli",
           "--decode-steps needs two resident arms (--reference MODEL or --kv-arm SCHEME, with "
           "--corpus DIR); a saved teacher was dumped teacher-forced in chunks");
    }
    std::optional<Shard> shard;
    if (!args->shard.empty()) {
      shard = ParseShard(args->shard, "--shard");
      if (args->json.empty()) {
        Fail("cli",
             "--shard {} writes a partial results file for `proctor merge`: give --json FILE",
             args->shard);
      }
      if (IsLlamaKldReference(args->reference_logits)) {
        Fail("cli", "--shard needs a proctor dump directory, not the llama.cpp base file '{}'",
             args->reference_logits);
      }
    }
    const bool quiet = Globals().quiet;
    const bool json = !args->json.empty();
    // A shard keeps its per-position scores beside its partial unless told where.
    const std::filesystem::path per_position = shard && args->per_position.empty()
                                                   ? KlShardPositionsPath(args->json)
                                                   : std::filesystem::path(args->per_position);
    // A rerun of a finished shard keeps its partial.
    const auto shard_done = [&](const nlohmann::json& settings, const std::string& reference,
                                const std::string& label) {
      if (!KlShardDone(args->json, *shard, settings, args->candidate, reference, label)) {
        return false;
      }
      fmt::print("Shard {} already done: '{}' holds it; not scored again\n", shard->Name(),
                 args->json);
      return true;
    };
    ResultsEnvelope envelope;
    if (IsLlamaKldReference(args->reference_logits)) {
      if (!args->per_position.empty()) {
        Fail("cli",
             "--per-position is not available with a llama.cpp base file ('{}'); it needs a "
             "proctor dump directory",
             args->reference_logits);
      }
      const LlamaKldEvalOptions options{.base_file = args->reference_logits,
                                        .candidate = args->candidate,
                                        .max_chunks = args->n,
                                        .chunk_size = args->engine.chunk,
                                        .runtime = args->engine.Options(args->candidate),
                                        .quiet = quiet,
                                        .describe_inputs = json};
      const LlamaKldEvalResult result = EvaluateKlVsLlamaKld(options);
      fmt::print("{}", FormatLlamaKldReport(result));
      if (!quiet) fmt::print(stderr, "{}", FormatTimings(result.timings));
      if (json) envelope = LlamaKldResultsEnvelope(result, options);
    } else {
      KlEvalResult result;
      if (!args->reference.empty()) {
        EngineFlags reference_engine = args->engine;
        if (!args->reference_compute.empty()) reference_engine.compute = args->reference_compute;
        if (!args->reference_kv.empty()) {  // the reference's own scheme, whole
          reference_engine.kv = args->reference_kv;
          reference_engine.kv_k.clear();
          reference_engine.kv_v.clear();
        }
        KlTwoModelOptions options{
            .reference = args->reference,
            .candidate = args->candidate,
            .corpus_dir = args->corpus,
            .max_seqs = args->n,
            .shard = shard,
            .chunk_size = args->engine.chunk,
            .decode_steps = args->decode_steps,
            .prompts_file = args->prompts,
            .prompt_options = {.max_prompts = args->n > 0 ? args->n : 64, .max_tokens = args->seq},
            .runtime = args->engine.Options(args->candidate),
            .reference_runtime = reference_engine.Options(),
            .quiet = quiet,
            .per_position = per_position,
            .worst = args->worst,
            .describe_inputs = json};
        options.runtime.pool = candidate_pool.get();
        options.reference_runtime.pool = reference_pool.get();
        options.runtime.forward_chunk = candidate_forward_chunk;
        options.reference_runtime.forward_chunk = reference_forward_chunk;
        // The settings of the run: the options', and the lever a --self run sets two ways.
        const auto settings_of = [&](const KlEvalResult& r) {
          nlohmann::ordered_json settings = KlResultsEnvelope(r, options).settings;
          if (!args->self_ab.empty()) settings["self"] = args->self_ab;
          return settings;
        };
        if (shard) {
          KlEvalResult probe;
          probe.mode = args->decode_steps > 0 ? "decode" : "two-model";
          nlohmann::ordered_json settings = settings_of(probe);
          // What the run reads from its inputs; the label names the corpus or prompts file.
          settings.erase("kv_start");
          settings.erase("prompts");
          if (shard_done(settings, args->reference, KlTwoModelLabel(options))) return;
        }
        result = EvaluateKlTwoModels(options);
        if (json) {
          envelope = KlResultsEnvelope(result, options);
          envelope.settings = settings_of(result);
        }
        if (!result.prompts.is_null()) {
          const auto& p = result.prompts;
          fmt::print(
              "prompts: {} scored of {} rows in '{}' ({} shorter than {} tokens skipped, {} cut to "
              "--seq {}; {} to {} tokens)\n",
              p["scored"].get<int64_t>(), p["rows"].get<int64_t>(), p["path"].get<std::string>(),
              p["skipped_short"].get<int64_t>(), p["min_tokens"].get<int64_t>(),
              p["truncated"].get<int64_t>(), args->seq, p["shortest"].get<int64_t>(),
              p["longest"].get<int64_t>());
        }
      } else {
        const KlEvalOptions options{.reference_dir = args->reference_logits,
                                    .candidate = args->candidate,
                                    .max_seqs = args->n,
                                    .shard = shard,
                                    .chunk_size = args->engine.chunk,
                                    .runtime = args->engine.Options(args->candidate),
                                    .quiet = quiet,
                                    .per_position = per_position,
                                    .worst = args->worst,
                                    .describe_inputs = json};
        if (shard) {
          // The settings as this run writes them.
          KlEvalResult probe;
          const ReferenceLogitsDump dump = ReferenceLogitsDump::Open(args->reference_logits);
          probe.manifest = dump.manifest();
          if (shard_done(KlResultsEnvelope(probe, options).settings, args->reference_logits,
                         dump.Label())) {
            return;
          }
        }
        result = EvaluateKlVsReferenceLogits(options);
        if (json) envelope = KlResultsEnvelope(result, options);
      }
      if (shard) {
        fmt::print("Shard {}: sequences [{}, {}) of {}\n", shard->Name(), result.shard_seqs.first,
                   result.shard_seqs.end, result.seqs_total);
        envelope.results["shard"] = KlShardToJson(result, args->worst, per_position, args->json);
      }
      for (const auto& w : result.warnings) fmt::print(stderr, "warning: {}\n", w);
      // A saved teacher's dump carries its floor: shown first, the candidate paired against it.
      std::optional<KlEvalResult> floor;
      // A shard's sequences cannot be paired with the floor's on their own: the merge pairs them.
      if (!shard && !args->reference_logits.empty() &&
          !IsLlamaKldReference(args->reference_logits)) {
        std::string why;
        floor = ReadDumpFloor(args->reference_logits, &why);
        if (!floor && !quiet) fmt::print(stderr, "note: no floor row: {}\n", why);
        if (floor && json) {
          envelope.results["floor"] = FloorComparisonToJson(*floor, result, args->reference_logits);
        }
      }
      fmt::print("{}", FormatKlTable({result}, floor ? &*floor : nullptr));
      if (!quiet) fmt::print("\n{}", KlLegend({result}, floor.has_value()));
      if (args->where) {
        PrintKlWhere(result, args->reference_logits, args->corpus, args->candidate,
                     args->decode_steps);
      }
      if (!quiet) fmt::print(stderr, "{}", FormatTimings(result.timings));
      if (!per_position.empty() && !quiet) fmt::print(stderr, "wrote {}\n", per_position.string());
    }
    if (!json) return;
    WriteResultsJson(args->json, envelope);
    if (!quiet) fmt::print(stderr, "wrote {}\n", args->json);
  });
}

}  // namespace proctor::cli
