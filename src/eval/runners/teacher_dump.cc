#include "eval/runners/teacher_dump.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "eval/formats/corpus.h"
#include "eval/formats/ref_logits_writer.h"
#include "eval/runners/dump_floor.h"
#include "eval/runners/eval_model.h"
#include "eval/runners/logits_chunks.h"
#include "eval/runners/vocab_check.h"
#include "eval/runs/run_database.h"
#include "eval/scoring/kl_score.h"
#include "util/error.h"
#include "util/file.h"

namespace proctor {
namespace {

constexpr const char* kComponent = "dump";

}  // namespace

TeacherDumpResult DumpTeacher(const TeacherDumpOptions& options) {
  const double start_time = MonotonicSeconds();
  TeacherDumpResult result;
  ResultsTimings& timings = result.timings;
  if (options.top_k < 1) Fail(kComponent, "--top-k must be >= 1, got {}", options.top_k);
  CheckChunkSize(options.chunk_size, kComponent);
  std::optional<Corpus> read;
  {
    ScopedSeconds io(&timings.io_seconds);
    read.emplace(ReadCorpus(options.corpus_dir));
  }
  const Corpus& corpus = *read;
  const CorpusSlice slice = SliceCorpus(corpus, options.seq_start, options.seq_end, kComponent);
  if (corpus.ctx_len < 2) {
    Fail(kComponent, "corpus '{}' has ctx_len {}: a dump needs at least 2 tokens per sequence",
         corpus.dir.string(), corpus.ctx_len);
  }
  const bool interrupted = std::filesystem::exists(options.out_dir / ".in-progress.json");
  if (interrupted && !options.resume) {
    Fail(kComponent,
         "'{}' holds an interrupted dump; pass --resume to continue it (or choose an "
         "empty directory)",
         options.out_dir.string());
  }
  const int64_t n_seqs = slice.n_seqs();
  std::optional<std::string> notes;
  if (n_seqs != corpus.n_seqs) {
    notes = fmt::format("sequences [{}, {}) of a corpus of {} sequences", slice.seq_start,
                        slice.seq_end, corpus.n_seqs);
  }
  const std::span<const int32_t> tokens = slice.tokens;
  // The teacher, opened once (unless injected) and before anything is written: its vocabulary
  // bounds --top-k, is recorded in the manifest and is checked against the corpus' record when
  // its first logits come back.
  std::shared_ptr<const EvalModel> model;
  std::optional<VocabularyIdentity> teacher_id;
  TeacherForcedLogits forward = options.forward;
  int64_t top_k = options.top_k;
  if (!forward) {
    ScopedSeconds load(&timings.load_seconds);
    model = options.opened ? options.opened : EvalModel::Open(options.teacher);
    forward = model->Forward(options.runtime);
    if (options.check_tokenizer) teacher_id = model->Identity("teacher");
    const int64_t vocab = model->config().vocab_size;
    if (top_k > vocab) {
      result.notes.push_back(
          fmt::format("--top-k {} is above the teacher's vocabulary of {}: the dump keeps all {} "
                      "logits (the whole distribution)",
                      top_k, vocab, vocab));
      top_k = vocab;
    }
  }
  result.top_k = top_k;
  // The teacher's files by sha256 (none for a name that is not on disk, e.g. an injected forward).
  std::optional<std::string> model_sha256;
  if (!options.model_sha256.empty()) {
    model_sha256 = options.model_sha256;
  } else {
    ScopedSeconds hashing(&timings.hash_seconds);
    const std::string sha = ModelIdentity(DescribeModelInput("teacher", options.teacher)).first;
    if (!sha.empty()) model_sha256 = sha;
  }
  ReferenceLogitsWriter writer({.dir = options.out_dir,
                                .model = options.teacher,
                                .model_sha256 = model_sha256,
                                .corpus_sha256 = corpus.tokens_sha256,
                                .ctx_len = corpus.ctx_len,
                                .n_seqs = n_seqs,
                                .top_k = top_k,
                                .notes = notes,
                                .created = options.created,
                                .settings = {{"compute", ComputeModeName(options.runtime.compute)},
                                             {"kv", options.runtime.kv.Name()}}},
                               tokens);
  result.n_seqs = n_seqs;
  result.sequences_resumed = writer.SequencesDone();
  const int64_t positions = writer.positions();
  // The floor: the teacher's own logits scored against the records just made from them.
  std::vector<std::vector<PositionScore>> floor_scores(options.floor ? static_cast<size_t>(n_seqs)
                                                                     : 0);
  const bool floor_nlls = options.floor && options.floor_perplexity;
  std::vector<double> nlls(floor_nlls ? static_cast<size_t>(n_seqs * positions) : 0);
  ReferenceRecords records;
  double kept_io = 0;  // reading back the records of kept sequences
  int threads = ThreadPool::Global().num_threads();
  const int64_t sequences_to_run = options.floor ? n_seqs : n_seqs - result.sequences_resumed;
  if (sequences_to_run > 0) {
    LogitsChunkDriver driver(
        {{fmt::format("teacher '{}'", options.teacher), forward}},
        {.component = kComponent,
         .chunk_size = options.chunk_size,
         .progress_label = "dump",
         .total_positions = static_cast<uint64_t>(sequences_to_run * positions),
         .quiet = options.quiet});
    driver.OnVocabulary([&](int64_t vocab) {
      CheckCorpusVocabularyMatches(corpus, vocab,
                                   teacher_id ? teacher_id->tokenizer_vocab : std::nullopt,
                                   options.teacher, kComponent);
      if (teacher_id) CheckRecordedVocabulary(RecordedVocabularyIdentity(corpus), *teacher_id);
      if (top_k > vocab) {
        Fail(kComponent, "--top-k {} exceeds the teacher's vocabulary of {}", top_k, vocab);
      }
    });
    double callback_io = 0;
    for (int64_t s = 0; s < n_seqs; ++s) {
      const bool kept = writer.SequenceDone(s);
      if (kept && !options.floor) continue;
      const auto seq_tokens = tokens.subspan(static_cast<size_t>(s * corpus.ctx_len),
                                             static_cast<size_t>(corpus.ctx_len));
      const std::string where =
          fmt::format("sequence {} of corpus '{}'", options.seq_start + s, corpus.dir.string());
      if (options.floor)
        floor_scores[static_cast<size_t>(s)].resize(static_cast<size_t>(positions));
      if (!kept) writer.BeginSequence(s);
      // The chunk's rows up to the last scored position: selected across the pool, written in
      // position order with one write (or, for a kept sequence, its records read back).
      driver.RunSequence(seq_tokens, positions, where, [&](const LogitsChunk& chunk) {
        if (kept) {
          ScopedSeconds io(&kept_io);
          ReadReferenceRecords(ReferenceSequencePath(options.out_dir, s), chunk.start,
                               chunk.start + chunk.scored, top_k, &records);
        } else {
          const double io_before = writer.io_seconds();
          writer.AppendLogitsRows(chunk[0], chunk.scored, driver.pool());
          callback_io += writer.io_seconds() - io_before;
          if (!options.floor) return;
          const std::span<const uint8_t> written = writer.LastRowsRecords();
          records.first = chunk.start;
          records.count = chunk.scored;
          records.top_k = top_k;
          records.raw.assign(written.begin(), written.end());
          DecodeReferenceRecords(&records);
        }
        ScoreChunk(records, chunk[0], chunk.scored, where, driver.pool(),
                   floor_scores[static_cast<size_t>(s)].data() + chunk.start,
                   seq_tokens.data() + chunk.start + 1);
        if (floor_nlls) {
          NextTokenNlls(chunk[0], chunk.scored,
                        seq_tokens.subspan(static_cast<size_t>(chunk.start + 1)), driver.pool(),
                        nlls.data() + s * positions + chunk.start);
        }
      });
      if (!kept) {
        writer.EndSequence();
        result.positions_written += positions;
      }
    }
    driver.Finish();
    threads = driver.pool().num_threads();
    callback_io += kept_io;
    result.vocab = driver.vocab();
    timings.forward_seconds = driver.forward_seconds();
    // Inside the callbacks: the writer's file I/O, the rest is top-k selection, logsumexp and
    // fp16 packing.
    timings.scoring_seconds = std::max(0.0, driver.callback_seconds() - callback_io);
  }
  if (result.vocab > 0) {
    writer.SetTeacherVocabulary(result.vocab,
                                teacher_id ? teacher_id->tokenizer_sha256 : std::nullopt,
                                teacher_id ? teacher_id->bos_id : std::nullopt,
                                teacher_id ? teacher_id->eos_id : std::nullopt);
  }
  writer.Finish();
  timings.io_seconds += writer.io_seconds() + kept_io;
  if (options.floor && n_seqs > 0) {
    KlEvalResult floor = DumpFloorResult(options.out_dir,
                                         {.teacher = options.teacher,
                                          .top_k = top_k,
                                          .vocab = result.vocab,
                                          .chunk_size = options.chunk_size,
                                          .threads = threads},
                                         floor_scores, options.floor_per_position);
    WriteDumpFloor(options.out_dir, floor);
    result.floor = std::move(floor);
    if (floor_nlls) result.floor_perplexity = PerplexityFromNlls(nlls, positions);
  }
  timings.total_seconds = MonotonicSeconds() - start_time;
  result.elapsed_seconds = timings.total_seconds;
  DescribeInputsAfterRun(options.describe_inputs, timings, [&] {
    result.inputs.push_back(EvalModel::Describe(model.get(), "teacher", options.teacher));
    result.inputs.push_back(DescribeCorpusInput("corpus", corpus));
  });
  return result;
}

ResultsEnvelope DumpResultsEnvelope(const TeacherDumpResult& result,
                                    const TeacherDumpOptions& options) {
  ResultsEnvelope env{.command = "dump"};
  env.inputs = result.inputs;
  env.settings = {{"top_k", options.top_k},
                  {"chunk_size", options.chunk_size},
                  {"seq_start", options.seq_start},
                  {"seq_end", options.seq_end},
                  {"resume", options.resume},
                  {"compute", std::string(ComputeModeName(options.runtime.compute))},
                  {"kv", options.runtime.kv.Name()},
                  {"floor", options.floor}};
  const double seconds = result.elapsed_seconds;
  env.warnings = result.notes;
  env.results = {{"n_seqs", result.n_seqs},
                 {"top_k", result.top_k},
                 {"sequences_resumed", result.sequences_resumed},
                 {"positions_written", result.positions_written},
                 {"vocab", result.vocab},
                 {"positions_per_second",
                  seconds > 0 ? static_cast<double>(result.positions_written) / seconds : 0.0},
                 {"floor", result.floor ? KlEvalResultToJson(*result.floor)
                                        : nlohmann::ordered_json(nullptr)}};
  env.timings = result.timings;
  env.outputs.push_back(DescribeReferenceLogitsInput("dump", options.out_dir));
  return env;
}

}  // namespace proctor
