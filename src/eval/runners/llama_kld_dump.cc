// `proctor dump --format llama.cpp`: DumpTeacherLlamaKld (declared in
// eval/runners/llama_kld_eval.h).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>

#include "eval/formats/corpus.h"
#include "eval/runners/eval_model.h"
#include "eval/runners/llama_kld_eval.h"
#include "eval/runners/logits_chunks.h"
#include "eval/runners/vocab_check.h"
#include "util/error.h"
#include "util/file.h"

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
  CheckChunkSize(options.chunk_size, kComponent);
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
  result.n_ctx = corpus.ctx_len;
  result.n_chunk = slice.n_seqs();
  // The teacher, opened once (unless injected); its vocabulary against what the corpus recorded.
  TeacherForcedLogits forward = options.forward;
  std::shared_ptr<const EvalModel> model;
  std::optional<VocabularyIdentity> teacher_id;
  {
    ScopedSeconds load(&timings.load_seconds);
    if (!forward || options.chunk_start_token == kChunkStartFromModel) {
      model = EvalModel::Open(options.teacher);
    }
    result.chunk_start_token = options.chunk_start_token == kChunkStartFromModel
                                   ? ChunkStartOf(*model, "teacher")
                                   : options.chunk_start_token;
    if (!forward) {
      forward = model->Forward(options.runtime);
      teacher_id = model->Identity("teacher");
    }
  }
  const std::span<const int32_t> tokens = slice.tokens;
  const int64_t n_ctx = corpus.ctx_len;
  const int64_t first = LlamaKldFirstPosition(n_ctx);
  const int64_t per_chunk = LlamaKldRecordsPerChunk(n_ctx);

  LogitsChunkDriver driver({{fmt::format("teacher '{}'", options.teacher), forward}},
                           {.component = kComponent,
                            .chunk_size = options.chunk_size,
                            .progress_label = "dump",
                            .total_positions = static_cast<uint64_t>(result.n_chunk * per_chunk),
                            .pool = options.pool,
                            .quiet = options.quiet});
  std::unique_ptr<LlamaKldWriter> writer;  // created once the teacher's vocabulary is known
  driver.OnVocabulary([&](int64_t vocab) {
    result.n_vocab = vocab;
    CheckCorpusVocabularyMatches(corpus, vocab,
                                 teacher_id ? teacher_id->tokenizer_vocab : std::nullopt,
                                 options.teacher, kComponent);
    if (result.chunk_start_token >= vocab) {
      Fail(kComponent, "teacher '{}' has BOS id {} outside its vocabulary of {}", options.teacher,
           result.chunk_start_token, vocab);
    }
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (tokens[i] >= vocab) {
        Fail(kComponent,
             "corpus '{}' holds token {} (sequence {}), outside teacher '{}''s vocabulary of {}",
             corpus.dir.string(), tokens[i], options.seq_start + static_cast<int64_t>(i) / n_ctx,
             options.teacher, vocab);
      }
    }
    if (teacher_id) CheckRecordedVocabulary(RecordedVocabularyIdentity(corpus), *teacher_id);
    writer =
        std::make_unique<LlamaKldWriter>(options.out_file, n_ctx, vocab, result.n_chunk, tokens);
  });
  std::vector<uint16_t> encoded;  // [rows of a forward chunk, record words]
  std::vector<double> nll;        // [rows of a forward chunk]
  double sum_nll = 0, sum_nll2 = 0, sum_stored = 0, sum_stored2 = 0;
  double callback_io = 0;
  for (int64_t c = 0; c < result.n_chunk; ++c) {
    const auto stored = tokens.subspan(static_cast<size_t>(c * n_ctx), static_cast<size_t>(n_ctx));
    std::vector<int32_t> run_tokens(stored.begin(), stored.end());
    if (result.chunk_start_token >= 0) run_tokens[0] = result.chunk_start_token;
    const std::string where =
        fmt::format("sequence {} of corpus '{}'", options.seq_start + c, corpus.dir.string());
    driver.RunSequence(run_tokens, n_ctx - 1, where, [&](const LogitsChunk& chunk) {
      const int64_t lo = std::max(chunk.start, first);
      const int64_t hi = chunk.start + chunk.scored;
      if (lo >= hi) return;
      const MatView& logits = chunk[0];
      const int64_t rows = hi - lo;
      const int64_t words = LlamaKldRecordWords(result.n_vocab);
      encoded.resize(static_cast<size_t>(rows * words));
      nll.resize(static_cast<size_t>(rows));
      driver.pool().ParallelFor(static_cast<size_t>(rows), [&](size_t b, size_t e, int) {
        for (size_t i = b; i < e; ++i) {
          const int64_t pos = lo + static_cast<int64_t>(i);
          nll[i] = EncodeLlamaKldRecord(
              std::span<const float>(logits.RowAs<float>(pos - chunk.start),
                                     static_cast<size_t>(logits.cols)),
              stored[static_cast<size_t>(pos + 1)], encoded.data() + i * words);
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
    });
  }
  driver.Finish();
  timings.forward_seconds = driver.forward_seconds();
  timings.scoring_seconds = std::max(0.0, driver.callback_seconds() - callback_io);
  {
    ScopedSeconds io(&callback_io);
    writer->Finish();
  }
  timings.io_seconds += callback_io;
  result.exact_ppl = PerplexityEstimate(sum_nll, sum_nll2, result.positions);
  result.stored_ppl = PerplexityEstimate(sum_stored, sum_stored2, result.positions);
  timings.total_seconds = MonotonicSeconds() - start_time;
  result.elapsed_seconds = timings.total_seconds;
  DescribeInputsAfterRun(options.describe_inputs, timings, [&] {
    result.inputs.push_back(EvalModel::Describe(model.get(), "teacher", options.teacher));
    result.inputs.push_back(DescribeCorpusInput("corpus", corpus));
  });
  return result;
}

std::string FormatLlamaKldDumpReport(const LlamaKldDumpResult& r,
                                     const LlamaKldDumpOptions& options) {
  const std::string bos =
      r.chunk_start_token >= 0
          ? fmt::format("token {} (BOS) evaluated at position 0 of every chunk, as llama.cpp does",
                        r.chunk_start_token)
          : std::string("chunks evaluated as stored (the vocabulary adds no BOS)");
  return fmt::format(
      "wrote {}: llama.cpp KL-divergence base, n_ctx {}, n_vocab {}, n_chunk {}, {} positions "
      "(n_ctx/2 .. n_ctx-2 of each chunk); {}; {:.1f} s\n"
      "teacher PPL over these positions, exact f32 logits : {:.6f} +/- {:.6f}\n"
      "teacher PPL as stored in the file (what llama.cpp reports as PPL(base)): {:.6f} +/- "
      "{:.6f}\n",
      options.out_file.string(), r.n_ctx, r.n_vocab, r.n_chunk, r.positions, bos, r.elapsed_seconds,
      r.exact_ppl.value, r.exact_ppl.uncertainty, r.stored_ppl.value, r.stored_ppl.uncertainty);
}

ResultsEnvelope LlamaKldDumpResultsEnvelope(const LlamaKldDumpResult& r,
                                            const LlamaKldDumpOptions& options) {
  const auto ppl = [](const ValueAndUncertainty& v) {
    return nlohmann::ordered_json{{"value", v.value}, {"uncertainty", v.uncertainty}};
  };
  ResultsEnvelope env{.command = "dump"};
  env.inputs = r.inputs;
  env.settings = {{"format", "llama.cpp"},
                  {"chunk_size", options.chunk_size},
                  {"seq_start", options.seq_start},
                  {"seq_end", options.seq_end},
                  {"compute", std::string(ComputeModeName(options.runtime.compute))},
                  {"kv", options.runtime.kv.Name()},
                  {"chunk_start_token", r.chunk_start_token}};
  env.results = {{"n_ctx", r.n_ctx},
                 {"n_vocab", r.n_vocab},
                 {"n_chunk", r.n_chunk},
                 {"positions", r.positions},
                 {"teacher_ppl_exact", ppl(r.exact_ppl)},
                 {"teacher_ppl_stored", ppl(r.stored_ppl)}};
  env.timings = r.timings;
  env.outputs.push_back(DescribeFileInput("llama_kld", options.out_file));
  return env;
}

}  // namespace proctor
