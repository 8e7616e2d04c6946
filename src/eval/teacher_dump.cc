#include "eval/teacher_dump.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "eval/candidate_forward.h"
#include "eval/corpus.h"
#include "eval/ref_logits_writer.h"
#include "eval/vocab_check.h"
#include "util/error.h"
#include "util/file.h"
#include "util/progress.h"
#include "util/thread_pool.h"

namespace proctor {
namespace {

constexpr const char* kComponent = "dump";

}  // namespace

TeacherDumpResult DumpTeacher(const TeacherDumpOptions& options) {
  const double start_time = MonotonicSeconds();
  TeacherDumpResult result;
  ResultsTimings& timings = result.timings;
  if (options.top_k < 1) Fail(kComponent, "--top-k must be >= 1, got {}", options.top_k);
  if (options.chunk_size < 1) Fail(kComponent, "--chunk must be >= 1, got {}", options.chunk_size);
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
  ReferenceLogitsWriter writer({.dir = options.out_dir,
                                .model = options.teacher,
                                .corpus_sha256 = corpus.tokens_sha256,
                                .ctx_len = corpus.ctx_len,
                                .n_seqs = n_seqs,
                                .top_k = options.top_k,
                                .notes = notes},
                               tokens);
  // The teacher's vocabulary: recorded in the manifest, checked against the corpus' record.
  const bool engine_teacher = !options.forward;
  VocabularyIdentity teacher_id, recorded;
  if (options.check_tokenizer && engine_teacher) {
    ScopedSeconds load(&timings.load_seconds);
    teacher_id = ModelVocabularyIdentity(options.teacher, 0, "teacher");
    const auto manifest_path = corpus.dir / "manifest.json";
    recorded = RecordedVocabularyIdentity(nlohmann::json::parse(ReadFileToString(manifest_path)),
                                          manifest_path);
  }
  result.n_seqs = n_seqs;
  result.sequences_resumed = writer.SequencesDone();
  const int64_t positions = writer.positions();
  if (result.sequences_resumed < n_seqs) {
    TeacherForcedLogits forward = options.forward;
    if (!forward) {
      ScopedSeconds load(&timings.load_seconds);
      forward = MakeCandidateForward(options.teacher, options.runtime);
    }
    double forward_and_callbacks = 0, callbacks = 0, callback_io = 0;
    Progress progress(
        {.label = "dump",
         .unit = "positions",
         .total = static_cast<uint64_t>((n_seqs - result.sequences_resumed) * positions),
         .mode = options.quiet ? Progress::Mode::kQuiet : Progress::Mode::kAuto});
    for (int64_t s = 0; s < n_seqs; ++s) {
      if (writer.SequenceDone(s)) continue;
      const auto seq_tokens = tokens.subspan(static_cast<size_t>(s * corpus.ctx_len),
                                             static_cast<size_t>(corpus.ctx_len));
      writer.BeginSequence(s);
      int64_t next = 0;  // next position to append
      {                  // the forward, with the callbacks (timed separately) inside it
        ScopedSeconds whole(&forward_and_callbacks);
        forward(seq_tokens, options.chunk_size, [&](int64_t start_pos, const MatView& logits) {
          ScopedSeconds in_callback(&callbacks);
          if (logits.type != DType::kF32) {
            Fail(kComponent, "the teacher forward returned {} logits; f32 expected",
                 Name(logits.type));
          }
          if (start_pos != next && start_pos < positions) {
            Fail(kComponent, "sequence {}: a chunk starts at position {}, expected {}",
                 options.seq_start + s, start_pos, next);
          }
          if (result.vocab == 0) {
            result.vocab = logits.cols;
            teacher_id.logits_vocab = logits.cols;
            CheckCorpusVocabularyMatches(corpus, logits.cols, teacher_id.tokenizer_vocab,
                                         options.teacher, kComponent);
            if (options.check_tokenizer && engine_teacher) {
              CheckRecordedVocabulary(recorded, teacher_id);
            }
            if (options.top_k > logits.cols) {
              Fail(kComponent, "--top-k {} exceeds the teacher's vocabulary of {}", options.top_k,
                   logits.cols);
            }
          }
          // The chunk's rows up to the last scored position: selected across the pool, written
          // in position order with one write.
          const int64_t appended = std::clamp<int64_t>(positions - start_pos, 0, logits.rows);
          const double io_before = writer.io_seconds();
          writer.AppendLogitsRows(logits, appended, ThreadPool::Global());
          callback_io += writer.io_seconds() - io_before;
          next += appended;
          progress.Advance(static_cast<uint64_t>(appended));
        });
      }
      if (next != positions) {
        Fail(kComponent, "sequence {}: the teacher's chunks covered {} positions, expected {}",
             options.seq_start + s, next, positions);
      }
      writer.EndSequence();
      result.positions_written += positions;
    }
    progress.Finish();
    timings.forward_seconds = std::max(0.0, forward_and_callbacks - callbacks);
    // Inside the callbacks: the writer's file I/O, the rest is top-k selection, logsumexp and
    // fp16 packing.
    timings.scoring_seconds = std::max(0.0, callbacks - callback_io);
  }
  if (result.vocab > 0) {
    writer.SetTeacherVocabulary(result.vocab, teacher_id.tokenizer_sha256, teacher_id.bos_id,
                                teacher_id.eos_id);
  }
  writer.Finish();
  timings.io_seconds += writer.io_seconds();
  timings.total_seconds = MonotonicSeconds() - start_time;
  result.elapsed_seconds = timings.total_seconds;
  return result;
}

}  // namespace proctor
