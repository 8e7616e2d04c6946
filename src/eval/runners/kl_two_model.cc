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
#include "eval/runners/vocab_check.h"
#include "util/error.h"
#include "util/file.h"

namespace proctor {
namespace {

constexpr const char* kComponent = "kl";

}  // namespace

KlEvalResult EvaluateKlTwoModels(const KlTwoModelOptions& options) {
  const double start = MonotonicSeconds();
  CheckChunkSize(options.chunk_size, kComponent);
  if (options.max_seqs < 0) Fail(kComponent, "--n must be >= 0, got {}", options.max_seqs);
  KlEvalResult result;
  ResultsTimings& timings = result.timings;
  std::optional<Corpus> read;
  {
    ScopedSeconds io(&timings.io_seconds);
    read.emplace(ReadCorpus(options.corpus_dir));
  }
  const Corpus& corpus = *read;
  if (corpus.ctx_len < 2) {
    Fail(kComponent, "corpus '{}' has ctx_len {}: scoring needs at least 2 tokens per sequence",
         corpus.dir.string(), corpus.ctx_len);
  }

  // The decode path: prefill [0, decode_from) in chunks, then one token per step.
  const int64_t decode_from =
      options.decode_steps > 0 ? corpus.ctx_len - 1 - options.decode_steps : -1;
  if (options.decode_steps < 0 || (options.decode_steps > 0 && decode_from < 1)) {
    Fail(kComponent,
         "--decode-steps {}: the corpus' sequences of {} tokens allow 1 to {} decode steps (at "
         "least one token of prefill, and each step predicts a corpus token)",
         options.decode_steps, corpus.ctx_len, corpus.ctx_len - 2);
  }
  RuntimeOptions candidate_runtime = options.runtime;
  if (decode_from > 0) candidate_runtime.kv.start = decode_from;

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
    if (!reference_forward) {
      reference = open(options.reference);
      reference_forward = reference->Forward(options.reference_runtime);
    }
    if (!candidate_forward) {
      candidate =
          options.reference == options.candidate && reference ? reference : open(options.candidate);
      candidate_forward = candidate->Forward(candidate_runtime);
    }
  }
  if (options.check_tokenizer && reference && candidate) {
    CheckSameVocabulary(reference->Identity("reference"), candidate->Identity("candidate"));
  }
  if (options.check_tokenizer) {
    const VocabularyIdentity recorded = RecordedVocabularyIdentity(corpus);
    if (reference) CheckRecordedVocabulary(recorded, reference->Identity("reference"));
    if (candidate) CheckRecordedVocabulary(recorded, candidate->Identity("candidate"));
  }

  const int64_t n_seqs =
      options.max_seqs > 0 ? std::min(options.max_seqs, corpus.n_seqs) : corpus.n_seqs;
  // Scored positions per sequence: every one that predicts a corpus token, or the decode steps.
  const int64_t positions = decode_from > 0 ? options.decode_steps : corpus.ctx_len - 1;
  const int64_t first_scored = std::max<int64_t>(decode_from, 0);
  result.mode = decode_from > 0 ? "decode" : "two-model";
  result.label = fmt::format("{}:{} full-vocab{} ({})", result.mode, options.reference,
                             decode_from > 0 ? fmt::format(", last {} steps", positions) : "",
                             options.corpus_dir.string());
  result.candidate = options.candidate;
  result.reference = options.reference;
  result.manifest.model = options.reference;
  result.manifest.corpus_sha256 = corpus.tokens_sha256;
  result.manifest.ctx_len = corpus.ctx_len;
  result.manifest.n_seqs = corpus.n_seqs;
  result.manifest.top_k = 0;
  result.manifest.positions_per_seq = positions;
  result.positions_per_seq = positions;
  result.chunk_size = options.chunk_size;

  LogitsChunkDriver driver({{fmt::format("reference '{}'", options.reference), reference_forward},
                            {fmt::format("candidate '{}'", options.candidate), candidate_forward}},
                           {.component = kComponent,
                            .chunk_size = options.chunk_size,
                            .decode_from = decode_from,
                            .progress_label = "kl",
                            .total_positions = static_cast<uint64_t>(n_seqs * (corpus.ctx_len - 1)),
                            .pool = options.pool,
                            .quiet = options.quiet});
  result.threads = driver.pool().num_threads();
  std::vector<std::vector<PositionScore>> scores(static_cast<size_t>(n_seqs));
  for (int64_t s = 0; s < n_seqs; ++s) {
    const std::span<const int32_t> tokens = corpus.Sequence(s);
    const std::string where = fmt::format("sequence {} of corpus '{}'", s, corpus.dir.string());
    auto& seq_scores = scores[s];
    seq_scores.resize(static_cast<size_t>(positions));
    // Chunks cover the whole sequence (as `dump`, saved-teacher `kl` and `logits` run it, so the
    // same chunk size gives the same logits in every mode); the last position predicts no
    // corpus token and is not scored; on the decode path the prefill's rows are not either
    // (a prefill chunk ends exactly where the decode steps begin).
    driver.RunSequence(tokens, corpus.ctx_len - 1, where, [&](const LogitsChunk& chunk) {
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
    result.inputs.push_back(DescribeCorpusInput("corpus", corpus));
    result.inputs.push_back(EvalModel::Describe(candidate.get(), "candidate", options.candidate));
  });
  return result;
}

}  // namespace proctor
