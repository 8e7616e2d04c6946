// Two-model KL (kl_eval.h): teacher and candidate both resident, run in lockstep over a corpus,
// scored over the full vocabulary.
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "eval/candidate_forward.h"
#include "eval/corpus.h"
#include "eval/kl_eval.h"
#include "eval/per_position.h"
#include "eval/vocab_check.h"
#include "util/error.h"
#include "util/file.h"
#include "util/progress.h"

namespace proctor {
namespace {

constexpr const char* kComponent = "kl";

}  // namespace

KlEvalResult EvaluateKlTwoModels(const KlTwoModelOptions& options) {
  const double start = MonotonicSeconds();
  if (options.chunk_size < 1) Fail(kComponent, "--chunk must be >= 1, got {}", options.chunk_size);
  if (options.max_seqs < 0) Fail(kComponent, "--n must be >= 0, got {}", options.max_seqs);
  KlEvalResult result;
  result.mode = "two-model";
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

  // Load both models (or take the injected steppers) and compare their vocabularies.
  StartSequenceFn reference_steps = options.reference_steps;
  StartSequenceFn candidate_steps = options.candidate_steps;
  int64_t reference_vocab = 0, candidate_vocab = 0;
  {
    ScopedSeconds load(&timings.load_seconds);
    if (!reference_steps) {
      SteppedModel m = MakeSteppedModel(options.reference, options.reference_runtime);
      reference_steps = std::move(m.start);
      reference_vocab = m.vocab;
    }
    if (!candidate_steps) {
      SteppedModel m = MakeSteppedModel(options.candidate, options.runtime);
      candidate_steps = std::move(m.start);
      candidate_vocab = m.vocab;
    }
    VocabularyIdentity reference_id, candidate_id;
    reference_id.source = fmt::format("reference '{}'", options.reference);
    candidate_id.source = fmt::format("candidate '{}'", options.candidate);
    if (options.check_tokenizer && !options.reference_steps) {
      reference_id = ModelVocabularyIdentity(options.reference, reference_vocab, "reference");
    }
    if (options.check_tokenizer && !options.candidate_steps) {
      candidate_id = ModelVocabularyIdentity(options.candidate, candidate_vocab, "candidate");
    }
    if (reference_vocab > 0) reference_id.logits_vocab = reference_vocab;
    if (candidate_vocab > 0) candidate_id.logits_vocab = candidate_vocab;
    CheckSameVocabulary(reference_id, candidate_id);
    if (options.check_tokenizer) {
      const auto manifest_path = corpus.dir / "manifest.json";
      const VocabularyIdentity recorded = RecordedVocabularyIdentity(
          nlohmann::json::parse(ReadFileToString(manifest_path)), manifest_path);
      if (!options.reference_steps) CheckRecordedVocabulary(recorded, reference_id);
      if (!options.candidate_steps) CheckRecordedVocabulary(recorded, candidate_id);
    }
  }

  ThreadPool& pool = options.pool != nullptr ? *options.pool : ThreadPool::Global();
  const int64_t n_seqs =
      options.max_seqs > 0 ? std::min(options.max_seqs, corpus.n_seqs) : corpus.n_seqs;
  const int64_t positions = corpus.ctx_len - 1;
  result.label =
      fmt::format("two-model:{} full-vocab ({})", options.reference, options.corpus_dir.string());
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
  result.threads = pool.num_threads();

  Progress progress({.label = "kl",
                     .unit = "positions",
                     .total = static_cast<uint64_t>(n_seqs * positions),
                     .mode = options.quiet ? Progress::Mode::kQuiet : Progress::Mode::kAuto});
  std::vector<std::vector<PositionScore>> scores(static_cast<size_t>(n_seqs));
  for (int64_t s = 0; s < n_seqs; ++s) {
    const std::span<const int32_t> tokens = corpus.Sequence(s);
    const std::string where = fmt::format("sequence {} of corpus '{}'", s, corpus.dir.string());
    std::unique_ptr<LogitsStepper> reference = reference_steps(corpus.ctx_len);
    std::unique_ptr<LogitsStepper> candidate = candidate_steps(corpus.ctx_len);
    auto& seq_scores = scores[s];
    seq_scores.resize(static_cast<size_t>(positions));
    // Chunks cover the whole sequence (as `dump`, saved-teacher `kl` and `logits` run it, so the
    // same chunk size gives the same logits in every mode); the last position predicts no
    // corpus token and is not scored.
    for (int64_t begin = 0; begin < corpus.ctx_len; begin += options.chunk_size) {
      const int64_t end = std::min(corpus.ctx_len, begin + options.chunk_size);
      const auto chunk =
          tokens.subspan(static_cast<size_t>(begin), static_cast<size_t>(end - begin));
      MatView t, c;
      {
        ScopedSeconds forward(&result.reference_forward_seconds);
        t = reference->Step(chunk);
      }
      {
        ScopedSeconds forward(&timings.forward_seconds);
        c = candidate->Step(chunk);
      }
      for (const auto& [view, who] : {std::pair{&t, "reference"}, std::pair{&c, "candidate"}}) {
        if (view->type != DType::kF32 || view->rows != end - begin) {
          Fail(kComponent, "{}: the {} forward gave {} rows of {} for a chunk of {} tokens", where,
               who, view->rows, Name(view->type), end - begin);
        }
      }
      if (t.cols != c.cols) {
        Fail(kComponent,
             "{}: reference '{}' gives {} logits per position, candidate '{}' gives {}: the "
             "vocabularies differ (two-model KL needs the same vocabulary)",
             where, options.reference, t.cols, options.candidate, c.cols);
      }
      if (result.candidate_vocab == 0) result.candidate_vocab = c.cols;
      const int64_t scored = std::min(end, positions) - begin;
      if (scored <= 0) continue;
      ScopedSeconds scoring(&timings.scoring_seconds);
      ScoreFullVocabularyChunk(t, c, scored, begin, where, pool, seq_scores.data() + begin,
                               tokens.data() + begin + 1);
      progress.Advance(static_cast<uint64_t>(scored));
    }
  }
  progress.Finish();
  timings.forward_seconds += result.reference_forward_seconds;
  FinishKlRun(options.per_position,
              {.flags = kPerPositionFullVocabulary,
               .positions_per_seq = static_cast<uint64_t>(positions),
               .top_k = 0,
               .vocab = static_cast<uint64_t>(result.candidate_vocab)},
              scores, start, &result);
  return result;
}

}  // namespace proctor
