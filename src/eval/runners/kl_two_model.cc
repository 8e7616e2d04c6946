// Two-model KL (kl_eval.h): teacher and candidate both resident, run in lockstep over a corpus,
// scored over the full vocabulary.
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "eval/formats/corpus.h"
#include "eval/formats/per_position.h"
#include "eval/runners/eval_model.h"
#include "eval/runners/kl_eval.h"
#include "eval/runners/logits_chunks.h"
#include "eval/runners/prompt_set.h"
#include "eval/runners/vocab_check.h"
#include "util/error.h"
#include "util/file.h"

namespace proctor {
namespace {

constexpr const char* kComponent = "kl";

}  // namespace

std::string KlTwoModelLabel(const KlTwoModelOptions& options) {
  const bool decode = options.decode_steps > 0;
  const std::filesystem::path prompts =
      options.prompts ? options.prompts->path : options.prompts_file;
  const std::string source =
      prompts.empty() ? options.corpus_dir.string() : fmt::format("prompts '{}'", prompts.string());
  return fmt::format("{}:{} full-vocab{} ({})", decode ? "decode" : "two-model", options.reference,
                     decode ? fmt::format(", last {} steps", options.decode_steps) : "", source);
}

KlEvalResult EvaluateKlTwoModels(const KlTwoModelOptions& options) {
  const double start = MonotonicSeconds();
  CheckChunkSize(options.chunk_size, kComponent);
  if (options.max_seqs < 0) Fail(kComponent, "--n must be >= 0, got {}", options.max_seqs);
  const bool over_prompts = options.prompts != nullptr || !options.prompts_file.empty();
  if (over_prompts && options.decode_steps < 1) {
    Fail(kComponent, "--prompts needs --decode-steps: prompts are scored on the decode path");
  }
  if (options.decode_steps < 0) {
    Fail(kComponent, "--decode-steps must be >= 1, got {}", options.decode_steps);
  }
  KlEvalResult result;
  ResultsTimings& timings = result.timings;
  std::optional<Corpus> read;
  if (!over_prompts) {
    {
      ScopedSeconds io(&timings.io_seconds);
      read.emplace(ReadCorpus(options.corpus_dir));
    }
    if (read->ctx_len < 2) {
      Fail(kComponent, "corpus '{}' has ctx_len {}: scoring needs at least 2 tokens per sequence",
           read->dir.string(), read->ctx_len);
    }
    // The decode path: prefill [0, decode_from) in chunks, then one token per step.
    if (options.decode_steps > 0 && read->ctx_len - 1 - options.decode_steps < 1) {
      Fail(kComponent,
           "--decode-steps {}: the corpus' sequences of {} tokens allow 1 to {} decode steps (at "
           "least one token of prefill, and each step predicts a corpus token)",
           options.decode_steps, read->ctx_len, read->ctx_len - 2);
    }
  }

  // Open both models once (or take the injected forwards) and compare their vocabularies: with
  // each other, and with what the corpus recorded. The same spec on both sides (a self A/B of a
  // runtime switch) is opened once.
  TeacherForcedLogits reference_forward = options.reference_forward;
  TeacherForcedLogits candidate_forward = options.candidate_forward;
  std::shared_ptr<const EvalModel> reference, candidate;
  {
    ScopedSeconds load(&timings.load_seconds);
    const auto open = [&](const std::string& spec) {
      return options.opened ? options.opened : EvalModel::Open(spec);
    };
    if (!reference_forward) reference = open(options.reference);
    if (!candidate_forward) {
      candidate =
          options.reference == options.candidate && reference ? reference : open(options.candidate);
    }
  }
  if (options.check_tokenizer && reference && candidate) {
    CheckSameVocabulary(reference->Identity("reference"), candidate->Identity("candidate"));
  }
  if (options.check_tokenizer && read) {
    const VocabularyIdentity recorded = RecordedVocabularyIdentity(*read);
    if (reference) CheckRecordedVocabulary(recorded, reference->Identity("reference"));
    if (candidate) CheckRecordedVocabulary(recorded, candidate->Identity("candidate"));
  }
  std::shared_ptr<const PromptSet> prompts = options.prompts;
  if (over_prompts && !prompts) {
    const EvalModel* model = reference ? reference.get() : candidate.get();
    if (model == nullptr || model->tokenizer() == nullptr) {
      Fail(kComponent, "--prompts '{}': the reference '{}' has no tokenizer to encode them",
           options.prompts_file.string(), options.reference);
    }
    PromptSetOptions prompt_options = options.prompt_options;
    prompt_options.min_tokens = options.decode_steps + 2;
    prompt_options.chat_model_dir = model->chat_template_source();
    prompt_options.quiet = options.quiet;
    ScopedSeconds io(&timings.io_seconds);
    prompts = std::make_shared<const PromptSet>(
        ReadPromptSet(options.prompts_file, *model->tokenizer(), prompt_options));
  }
  const RuntimeOptions& candidate_runtime = options.runtime;
  // The candidate's forward for a sequence whose decode path begins at decode_from: its
  // quantized cache converts when the prefill ends.
  const auto candidate_forward_from = [&](int64_t decode_from) {
    RuntimeOptions runtime = candidate_runtime;
    if (decode_from > 0) runtime.kv.start = decode_from;
    return candidate->Forward(runtime);
  };
  if (reference) reference_forward = reference->Forward(options.reference_runtime);

  // The sequences scored: the corpus' (every one ctx_len tokens) or the prompts.
  const int64_t available = prompts ? prompts->size() : read->n_seqs;
  const int64_t run_seqs =
      options.max_seqs > 0 && !prompts ? std::min(options.max_seqs, available) : available;
  // A shard scores its share of them (eval/runners/shard.h), under its own numbers from 0.
  const ItemRange seqs = ItemsOf(options.shard, run_seqs);
  result.shard = options.shard;
  result.shard_seqs = seqs;
  result.seqs_total = run_seqs;
  const int64_t n_seqs = seqs.size();
  const auto sequence = [&](int64_t s) { return prompts ? prompts->Prompt(s) : read->Sequence(s); };
  const auto where_of = [&](int64_t s) {
    if (!prompts) return fmt::format("sequence {} of corpus '{}'", s, read->dir.string());
    return fmt::format("prompt {} ('{}' line {})", s, prompts->path.string(),
                       prompts->lines[static_cast<size_t>(s)]);
  };
  const auto decode_from_of = [&](int64_t s) -> int64_t {
    if (options.decode_steps == 0) return -1;
    return static_cast<int64_t>(sequence(s).size()) - 1 - options.decode_steps;
  };
  // A corpus fixes one schedule for every sequence; prompts set theirs one by one (the run's
  // first sequence sets the schedule of an empty shard, which runs none).
  const int64_t first_seq = n_seqs > 0 ? seqs.first : 0;
  if (candidate) candidate_forward = candidate_forward_from(decode_from_of(first_seq));

  // Scored positions per sequence: every one that predicts a corpus token, or the decode steps.
  const bool decode = options.decode_steps > 0;
  const int64_t positions = decode ? options.decode_steps : read->ctx_len - 1;
  result.mode = decode ? "decode" : "two-model";
  result.label = KlTwoModelLabel(options);
  result.candidate = options.candidate;
  result.reference = options.reference;
  result.manifest.model = options.reference;
  result.manifest.corpus_sha256 = prompts ? prompts->tokens_sha256 : read->tokens_sha256;
  result.manifest.ctx_len = prompts ? prompts->longest() : read->ctx_len;
  result.manifest.n_seqs = available;
  result.manifest.top_k = 0;
  result.manifest.positions_per_seq = positions;
  result.positions_per_seq = positions;
  result.chunk_size = options.chunk_size;
  if (prompts) result.prompts = PromptSetSummary(*prompts, options.decode_steps + 2);

  uint64_t total_positions = 0;
  for (int64_t s = seqs.first; s < seqs.end; ++s) total_positions += sequence(s).size() - 1;
  LogitsChunkDriver driver({{fmt::format("reference '{}'", options.reference), reference_forward},
                            {fmt::format("candidate '{}'", options.candidate), candidate_forward}},
                           {.component = kComponent,
                            .chunk_size = options.chunk_size,
                            .decode_from = decode_from_of(first_seq),
                            .progress_label = "kl",
                            .total_positions = total_positions,
                            .pool = options.pool,
                            .quiet = options.quiet});
  result.threads = driver.pool().num_threads();
  std::vector<std::vector<PositionScore>> scores(static_cast<size_t>(n_seqs));
  for (int64_t s = seqs.first; s < seqs.end; ++s) {
    const std::span<const int32_t> tokens = sequence(s);
    const auto length = static_cast<int64_t>(tokens.size());
    const int64_t decode_from = decode_from_of(s);
    const int64_t first_scored = std::max<int64_t>(decode_from, 0);
    if (prompts && s > seqs.first) {
      driver.SetDecodeFrom(decode_from);
      // Only a cache that converts depends on where the prefill ends (kv.start).
      if (candidate && candidate_runtime.kv.quantized()) {
        driver.SetArmForward(1, candidate_forward_from(decode_from));
      }
    }
    const std::string where = where_of(s);
    auto& seq_scores = scores[static_cast<size_t>(s - seqs.first)];
    seq_scores.resize(static_cast<size_t>(positions));
    // Chunks cover the whole sequence (as `dump`, saved-teacher `kl` and `logits` run it, so the
    // same chunk size gives the same logits in every mode); the last position predicts no
    // corpus token and is not scored; on the decode path the prefill's rows are not either
    // (a prefill chunk ends exactly where the decode steps begin).
    driver.RunSequence(tokens, length - 1, where, [&](const LogitsChunk& chunk) {
      if (chunk.start < first_scored) return;
      ScopedSeconds scoring(&timings.scoring_seconds);
      ScoreFullVocabularyChunk(chunk[0], chunk[1], chunk.scored, chunk.start, where, driver.pool(),
                               seq_scores.data() + (chunk.start - first_scored),
                               tokens.data() + chunk.start + 1);
    });
  }
  driver.Finish();
  result.candidate_vocab = driver.vocab();
  result.reference_forward_seconds = driver.arm_forward_seconds(0);
  result.decode_steps_run = driver.decode_steps_run();
  result.candidate_decode_seconds = driver.arm_decode_seconds(1);
  timings.forward_seconds = driver.forward_seconds();
  FinishKlRun(options.per_position,
              {.flags = kPerPositionFullVocabulary,
               .positions_per_seq = static_cast<uint64_t>(positions),
               .top_k = 0,
               .vocab = static_cast<uint64_t>(result.candidate_vocab)},
              scores, start, options.worst, &result);
  DescribeInputsAfterRun(options.describe_inputs, timings, [&] {
    result.inputs.push_back(EvalModel::Describe(reference.get(), "reference", options.reference));
    if (prompts) {
      result.inputs.push_back(DescribePromptsInput("prompts", *prompts));
    } else {
      result.inputs.push_back(DescribeCorpusInput("corpus", *read));
    }
    result.inputs.push_back(EvalModel::Describe(candidate.get(), "candidate", options.candidate));
  });
  return result;
}

}  // namespace proctor
