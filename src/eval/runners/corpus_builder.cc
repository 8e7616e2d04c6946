#include "eval/runners/corpus_builder.h"

#include <span>

#include <fmt/format.h>

#include "eval/formats/corpus.h"
#include "eval/runners/token_stream.h"
#include "eval/runners/vocab_check.h"
#include "model/load.h"
#include "util/error.h"
#include "util/file.h"
#include "util/timing.h"

namespace proctor {
namespace {

constexpr const char* kComponent = "corpus";

// A path as given, else a cached Hugging Face id (model/load.h).
std::filesystem::path ResolveTokenizerPath(const std::string& spec) {
  if (std::filesystem::exists(spec)) return spec;
  return LocateModel(spec).path;
}

}  // namespace

CorpusBuildResult BuildCorpus(const CorpusBuildOptions& options) {
  const auto start = MonotonicSeconds();
  if (options.ctx_len < 1) Fail(kComponent, "--ctx-len must be >= 1, got {}", options.ctx_len);
  if (options.n_seqs < 1) Fail(kComponent, "--n-seqs must be >= 1, got {}", options.n_seqs);
  if (options.out_dir.empty()) Fail(kComponent, "no output directory given");
  const int64_t needed = options.ctx_len * options.n_seqs;

  CorpusBuildResult result;
  auto t0 = MonotonicSeconds();
  const TextRows rows = ReadTextRows(options.inputs);
  result.io_seconds += SecondsSince(t0);
  t0 = MonotonicSeconds();
  const std::filesystem::path tokenizer_path = ResolveTokenizerPath(options.tokenizer);
  const auto tokenizer = text::LoadTokenizer(tokenizer_path);
  result.load_seconds = SecondsSince(t0);
  const TokenStream stream =
      BuildTokenStream(rows, *tokenizer,
                       {.seed = options.seed,
                        .tokens_needed = needed,
                        .chat_model_dir = std::filesystem::is_directory(tokenizer_path)
                                              ? tokenizer_path
                                              : tokenizer_path.parent_path(),
                        .chat_template_file = options.chat_template_file,
                        .chat_now = options.chat_now,
                        .quiet = options.quiet});
  const auto have = static_cast<int64_t>(stream.tokens.size());
  if (have < needed) {
    Fail(kComponent,
         "not enough text: --n-seqs {} x --ctx-len {} needs {} tokens, but the {} row(s) of the "
         "inputs gave {} tokens ({} short); add text or lower --n-seqs / --ctx-len",
         options.n_seqs, options.ctx_len, needed, rows.rows.size(), have, needed - have);
  }
  const auto tokens = std::span<const int32_t>(stream.tokens).first(static_cast<size_t>(needed));
  for (size_t i = 0; i < tokens.size(); ++i) {
    // The tokenizer never yields ids outside its vocabulary; ReadCorpus checks this again.
    CHECK_MSG(tokens[i] >= 0 && static_cast<size_t>(tokens[i]) < tokenizer->VocabSize(),
              "token {} at {}", tokens[i], i);
  }

  nlohmann::ordered_json sources = nlohmann::ordered_json::array();
  for (const TextSource& s : rows.sources) {
    sources.push_back(
        {{"path", s.path.string()}, {"sha256", s.sha256}, {"bytes", s.bytes}, {"rows", s.rows}});
  }
  nlohmann::ordered_json chat_template = nullptr;
  if (stream.chat_rows_used > 0) {
    chat_template = {{"origin", stream.chat_template_origin},
                     {"sha256", stream.chat_template_sha256},
                     {"add_generation_prompt", false},
                     {"enable_thinking", false},
                     {"add_special_tokens", false}};
  }
  nlohmann::ordered_json descriptive;
  descriptive["tokenizer"] = options.tokenizer;
  descriptive["vocab_size"] = tokenizer->VocabSize();
  descriptive["tokenizer_sha256"] = TokenizerFingerprint(*tokenizer);  // checked by dump / kl
  descriptive["bos_id"] = tokenizer->BosId();
  descriptive["eos_id"] = tokenizer->EosId();
  descriptive["seed"] = options.seed;
  descriptive["chat_template"] = chat_template;
  descriptive["sources"] = sources;
  descriptive["notes"] = fmt::format(
      "proctor corpus: {} of {} rows taken in mulberry32 order (seed {}), {} of them chat; text "
      "rows encoded with special tokens plus EOS, chat rows rendered and encoded without; {} "
      "tokens tokenized, the first {} kept; tokenizer {}",
      stream.rows_used, rows.rows.size(), options.seed, stream.chat_rows_used, have, needed,
      tokenizer->Describe());
  t0 = MonotonicSeconds();
  result.manifest = WriteCorpus(options.out_dir, tokens, options.ctx_len, descriptive);
  result.out_dir = options.out_dir;
  result.tokenizer = tokenizer->Describe();
  result.tokenizer_path = tokenizer_path;
  result.vocab_size = static_cast<int64_t>(tokenizer->VocabSize());
  result.ctx_len = options.ctx_len;
  result.n_seqs = options.n_seqs;
  result.n_tokens = needed;
  result.rows_total = static_cast<int64_t>(rows.rows.size());
  result.rows_used = stream.rows_used;
  result.chat_rows_used = stream.chat_rows_used;
  result.tokens_tokenized = have;
  result.tokens_sha256 = result.manifest["tokens_sha256"].get<std::string>();
  result.io_seconds += SecondsSince(t0);
  result.elapsed_seconds = SecondsSince(start);
  return result;
}

nlohmann::ordered_json CorpusBuildResultToJson(const CorpusBuildResult& r) {
  nlohmann::ordered_json j;
  j["out"] = r.out_dir.string();
  j["tokenizer"] = r.tokenizer;
  j["vocab_size"] = r.vocab_size;
  j["ctx_len"] = r.ctx_len;
  j["n_seqs"] = r.n_seqs;
  j["n_tokens"] = r.n_tokens;
  j["tokens_sha256"] = r.tokens_sha256;
  j["rows_total"] = r.rows_total;
  j["rows_used"] = r.rows_used;
  j["chat_rows_used"] = r.chat_rows_used;
  j["tokens_tokenized"] = r.tokens_tokenized;
  j["elapsed_seconds"] = r.elapsed_seconds;
  j["tokenize_seconds"] = r.elapsed_seconds - r.load_seconds - r.io_seconds;
  j["manifest"] = r.manifest;
  return j;
}

ResultsEnvelope CorpusResultsEnvelope(const CorpusBuildResult& result,
                                      const CorpusBuildOptions& options) {
  ResultsEnvelope env{.command = "corpus"};
  double hash_seconds = 0;
  {
    ScopedSeconds hashing(&hash_seconds);
    const std::filesystem::path& tok = result.tokenizer_path;
    if (std::filesystem::is_regular_file(tok)) {
      env.inputs.push_back(DescribeFileInput("tokenizer", tok));
    } else {
      for (const char* name : {"tokenizer.json", "tokenizer_config.json"}) {
        if (std::filesystem::exists(tok / name)) {
          env.inputs.push_back(DescribeFileInput("tokenizer", tok / name));
        }
      }
    }
    if (!options.chat_template_file.empty()) {
      env.inputs.push_back(DescribeFileInput("chat_template", options.chat_template_file));
    }
    for (const auto& input : options.inputs) {
      env.inputs.push_back(DescribeFileInput("input", input));
    }
    env.outputs.push_back(DescribeCorpusInput("corpus", options.out_dir));
  }
  env.settings = {{"ctx_len", options.ctx_len}, {"n_seqs", options.n_seqs}, {"seed", options.seed}};
  env.results = CorpusBuildResultToJson(result);
  env.timings.total_seconds = result.elapsed_seconds + hash_seconds;
  env.timings.io_seconds = result.io_seconds;
  env.timings.load_seconds = result.load_seconds;
  env.timings.hash_seconds = hash_seconds;
  return env;
}

}  // namespace proctor
