// `proctor dump --format llama.cpp`: DumpTeacherLlamaKld (declared in eval/llama_kld_eval.h).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>

#include "eval/candidate_forward.h"
#include "eval/corpus.h"
#include "eval/llama_kld_eval.h"
#include "eval/vocab_check.h"
#include "util/error.h"
#include "util/file.h"
#include "util/progress.h"

namespace proctor {
namespace {

constexpr const char* kComponent = "dump";

// llama-perplexity's "Final estimate: PPL = v +/- u" from the sums of nll and nll^2.
ValueAndUncertainty PerplexityEstimate(double sum, double sum2, int64_t count) {
  const double n = static_cast<double>(count);
  const double mean = sum / n;
  const double var = sum2 / n - mean * mean;
  const double sd = var > 0 && count > 1 ? std::sqrt(var / (n - 1)) : 0;
  const double ppl = std::exp(mean);
  return {ppl, sd * ppl};
}

}  // namespace

LlamaKldDumpResult DumpTeacherLlamaKld(const LlamaKldDumpOptions& options) {
  const double start_time = MonotonicSeconds();
  LlamaKldDumpResult result;
  ResultsTimings& timings = result.timings;
  if (options.chunk_size < 1) Fail(kComponent, "--chunk must be >= 1, got {}", options.chunk_size);
  std::optional<Corpus> read;
  {
    ScopedSeconds io(&timings.io_seconds);
    read.emplace(ReadCorpus(options.corpus_dir));
  }
  const Corpus& corpus = *read;
  const CorpusSlice slice = SliceCorpus(corpus, options.seq_start, options.seq_end, kComponent);
  if (corpus.ctx_len < 3) {
    Fail(kComponent,
         "corpus '{}' has ctx_len {}: a llama.cpp base file stores positions "
         "ctx_len/2 .. ctx_len-2 and needs ctx_len >= 3",
         corpus.dir.string(), corpus.ctx_len);
  }
  ThreadPool& pool = options.pool != nullptr ? *options.pool : ThreadPool::Global();
  result.n_ctx = corpus.ctx_len;
  result.n_chunk = slice.n_seqs();
  // The teacher's vocabulary against what the corpus recorded (engine teachers only).
  const bool engine_teacher = !options.forward;
  VocabularyIdentity teacher_id, recorded;
  TeacherForcedLogits forward = options.forward;
  {
    ScopedSeconds load(&timings.load_seconds);
    result.chunk_start_token = options.chunk_start_token == kChunkStartFromModel
                                   ? LlamaKldChunkStartToken(options.teacher)
                                   : options.chunk_start_token;
    if (engine_teacher) {
      teacher_id = ModelVocabularyIdentity(options.teacher, 0, "teacher");
      const auto manifest_path = corpus.dir / "manifest.json";
      recorded = RecordedVocabularyIdentity(nlohmann::json::parse(ReadFileToString(manifest_path)),
                                            manifest_path);
      forward = MakeCandidateForward(options.teacher, options.runtime);
    }
  }
  const std::span<const int32_t> tokens = slice.tokens;
  const int64_t n_ctx = corpus.ctx_len;
  const int64_t first = LlamaKldFirstPosition(n_ctx);
  const int64_t per_chunk = LlamaKldRecordsPerChunk(n_ctx);

  std::unique_ptr<LlamaKldWriter> writer;  // created once the teacher's vocabulary is known
  std::vector<uint16_t> encoded;           // [rows of a forward chunk, record words]
  std::vector<double> nll;                 // [rows of a forward chunk]
  double sum_nll = 0, sum_nll2 = 0, sum_stored = 0, sum_stored2 = 0;
  double forward_and_callbacks = 0, callbacks = 0, callback_io = 0;
  Progress progress({.label = "dump",
                     .unit = "positions",
                     .total = static_cast<uint64_t>(result.n_chunk * per_chunk),
                     .mode = options.quiet ? Progress::Mode::kQuiet : Progress::Mode::kAuto});
  for (int64_t c = 0; c < result.n_chunk; ++c) {
    const auto stored = tokens.subspan(static_cast<size_t>(c * n_ctx), static_cast<size_t>(n_ctx));
    std::vector<int32_t> run_tokens(stored.begin(), stored.end());
    if (result.chunk_start_token >= 0) run_tokens[0] = result.chunk_start_token;
    int64_t next = 0;
    ScopedSeconds whole(&forward_and_callbacks);
    forward(run_tokens, options.chunk_size, [&](int64_t start_pos, const MatView& logits) {
      ScopedSeconds in_callback(&callbacks);
      if (logits.type != DType::kF32) {
        Fail(kComponent, "the teacher forward returned {} logits; f32 expected", Name(logits.type));
      }
      if (start_pos != next) {
        Fail(kComponent, "sequence {}: a chunk starts at position {}, expected {}",
             options.seq_start + c, start_pos, next);
      }
      next = start_pos + logits.rows;
      if (!writer) {
        result.n_vocab = logits.cols;
        teacher_id.logits_vocab = logits.cols;
        CheckCorpusVocabularyMatches(corpus, logits.cols, teacher_id.tokenizer_vocab,
                                     options.teacher, kComponent);
        if (result.chunk_start_token >= logits.cols) {
          Fail(kComponent, "teacher '{}' has BOS id {} outside its vocabulary of {}",
               options.teacher, result.chunk_start_token, logits.cols);
        }
        for (size_t i = 0; i < tokens.size(); ++i) {
          if (tokens[i] >= logits.cols) {
            Fail(kComponent,
                 "corpus '{}' holds token {} (sequence {}), outside teacher '{}''s "
                 "vocabulary of {}",
                 corpus.dir.string(), tokens[i],
                 options.seq_start + static_cast<int64_t>(i) / n_ctx, options.teacher, logits.cols);
          }
        }
        if (engine_teacher) CheckRecordedVocabulary(recorded, teacher_id);
        writer = std::make_unique<LlamaKldWriter>(options.out_file, n_ctx, logits.cols,
                                                  result.n_chunk, tokens);
      }
      if (logits.cols != result.n_vocab) {
        Fail(kComponent, "a chunk has vocabulary {}, an earlier one {}", logits.cols,
             result.n_vocab);
      }
      const int64_t lo = std::max(start_pos, first);
      const int64_t hi = std::min(next, n_ctx - 1);
      if (lo >= hi) return;
      const int64_t rows = hi - lo;
      const int64_t words = LlamaKldRecordWords(result.n_vocab);
      encoded.resize(static_cast<size_t>(rows * words));
      nll.resize(static_cast<size_t>(rows));
      pool.ParallelFor(static_cast<size_t>(rows), [&](size_t b, size_t e, int) {
        for (size_t i = b; i < e; ++i) {
          const int64_t pos = lo + static_cast<int64_t>(i);
          nll[i] = EncodeLlamaKldRecord(std::span<const float>(logits.RowAs<float>(pos - start_pos),
                                                               static_cast<size_t>(logits.cols)),
                                        stored[static_cast<size_t>(pos + 1)],
                                        encoded.data() + i * words);
        }
      });
      for (int64_t i = 0; i < rows; ++i) {
        const double v = nll[static_cast<size_t>(i)];
        sum_nll += v;
        sum_nll2 += v * v;
        const float stored_nll = -ViewLlamaKldRecord(encoded.data() + i * words)
                                      .LogProb(stored[static_cast<size_t>(lo + i + 1)]);
        sum_stored += stored_nll;
        sum_stored2 += stored_nll * stored_nll;
      }
      {
        ScopedSeconds io(&callback_io);
        writer->AppendRecords(encoded);
      }
      result.positions += rows;
      progress.Advance(static_cast<uint64_t>(rows));
    });
    if (next < n_ctx - 1) {
      Fail(kComponent,
           "sequence {}: the teacher's chunks covered positions [0, {}), expected "
           "at least [0, {})",
           options.seq_start + c, next, n_ctx - 1);
    }
  }
  progress.Finish();
  timings.forward_seconds = std::max(0.0, forward_and_callbacks - callbacks);
  timings.scoring_seconds = std::max(0.0, callbacks - callback_io);
  {
    ScopedSeconds io(&callback_io);
    writer->Finish();
  }
  timings.io_seconds += callback_io;
  result.exact_ppl = PerplexityEstimate(sum_nll, sum_nll2, result.positions);
  result.stored_ppl = PerplexityEstimate(sum_stored, sum_stored2, result.positions);
  timings.total_seconds = MonotonicSeconds() - start_time;
  result.elapsed_seconds = timings.total_seconds;
  return result;
}

}  // namespace proctor
