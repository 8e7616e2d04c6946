// Writes a reference-logits dump (format_version 1) atomically and resumably.
//
// Each seq-<i>.bin is written under a temporary name and renamed when its last record is in;
// manifest.json is written last, so a reader never takes a half-written dump for a complete
// one. While a dump is in progress the directory holds `.in-progress.json` (its parameters);
// constructing a writer on such a directory resumes it: finished sequences are kept, a
// sequence that was interrupted is written again from its first record, and the result is
// byte-identical to an uninterrupted dump.
//
// Every record is stored shifted by its largest logit (the top logit is stored as 0), which
// cuts the fp16 rounding of the stored logits ~60x (FORMATS.md section 1).
#pragma once

#include <cstdint>
#include <filesystem>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "eval/formats/ref_logits.h"
#include "ops/logits_stats.h"
#include "tensor/tensor.h"
#include "util/file.h"
#include "util/thread_pool.h"

namespace proctor {

struct ReferenceLogitsWriterOptions {
  std::filesystem::path dir{};
  std::string model{};
  std::optional<std::string> model_sha256{};  // the teacher's files (manifest.model_sha256)
  std::string corpus_sha256{};
  int64_t ctx_len = 0;
  int64_t n_seqs = 0;
  int64_t top_k = 0;
  std::optional<std::string> notes{};
  std::string created{};  // empty: the current UTC time (kept from the first run on resume)
  // What else decides the records (the teacher's compute mode and KV scheme): kept in the
  // in-progress file, and a resume with other settings is refused like one with other parameters.
  nlohmann::ordered_json settings = nullptr;
};

class ReferenceLogitsWriter {
 public:
  // Starts a dump in options.dir (created if missing; must be empty unless it holds an
  // interrupted dump with the same parameters, which is resumed). tokens: [n_seqs, ctx_len].
  ReferenceLogitsWriter(ReferenceLogitsWriterOptions options, std::span<const int32_t> tokens);
  ~ReferenceLogitsWriter();

  // Records per sequence: ctx_len - 1 (the last position predicts nothing in the corpus).
  int64_t positions() const { return options_.ctx_len - 1; }
  // True for sequences complete on disk (from an earlier, interrupted run, or committed by this
  // writer and waited for).
  bool SequenceDone(int64_t seq) const { return done_.at(static_cast<size_t>(seq)); }
  int64_t SequencesDone() const;

  // Writes sequence `seq`: BeginSequence, then exactly positions() Append* calls (position
  // order), then EndSequence, which commits seq-<seq>.bin (fsync + rename) on a helper thread:
  // the commit is waited for before the next sequence's first record is written, by Finish()
  // and by the destructor, so a kill while a sequence has records leaves every earlier one
  // complete on disk (resume skips them), as a synchronous commit would.
  void BeginSequence(int64_t seq);
  // One position from its full-vocabulary logits row [vocab]: keeps the top_k (ties: lower
  // index first) and the logsumexp over the whole row.
  void AppendLogitsRow(std::span<const float> row);
  // The next n_rows positions from rows 0..n_rows of `logits` (f32 [>= n_rows, vocab]), as
  // n_rows AppendLogitsRow calls would: the rows' top-k, logsumexp and fp16 packing run across
  // `pool` (static partition over rows, each row by one thread), then the records go to the
  // file in position order with one write, so the bytes do not depend on the thread count. A row
  // with a NaN or a non-finite maximum is an Error naming the first such position (nothing of
  // this call is written then).
  void AppendLogitsRows(const MatView& logits, int64_t n_rows, ThreadPool& pool);
  // The records the last AppendLogitsRows wrote, as stored ([n_rows, record bytes]).
  std::span<const uint8_t> LastRowsRecords() const { return chunk_records_; }
  // One position from a precomputed top-k (indices distinct and >= 0, logits non-increasing,
  // not shifted) and the full-vocabulary logsumexp.
  void AppendTopK(std::span<const int32_t> indices, std::span<const float> logits, float logsumexp);
  void EndSequence();

  // Optional manifest keys recording the teacher's vocabulary (ReferenceLogitsManifest);
  // call before Finish().
  void SetTeacherVocabulary(std::optional<int64_t> vocab_size,
                            std::optional<std::string> tokenizer_sha256,
                            std::optional<int32_t> bos_id, std::optional<int32_t> eos_id);

  // After every sequence is done: writes manifest.json and removes .in-progress.json.
  void Finish();

  // Seconds the caller spent blocked on the sequence files: writing records and waiting for
  // commits (the I/O share of a dump; a commit's fsync overlapping the forward is not counted).
  double io_seconds() const { return io_seconds_; }

 private:
  void WriteRecord(const int32_t* indices, const float* logits, float max, float shifted_lse);
  // Appends `count` packed records (one write).
  void WriteRecords(std::span<const uint8_t> records, int64_t count);
  void WaitForPendingCommit();
  [[noreturn]] void FailUnrecordableRow(const ops::RowStats& stats, int64_t position) const;

  // The output directory, flock'ed while this writer lives (closed also when the constructor
  // throws: members are destroyed then).
  struct DirectoryLock {
    int fd = -1;
    DirectoryLock() = default;
    DirectoryLock(const DirectoryLock&) = delete;
    DirectoryLock& operator=(const DirectoryLock&) = delete;
    ~DirectoryLock();
  };
  ReferenceLogitsWriterOptions options_;
  std::string tokens_sha256_;  // of tokens.bin, recorded in the manifest
  DirectoryLock dir_lock_;
  std::vector<bool> done_;
  int64_t current_seq_ = -1;
  int64_t current_records_ = 0;
  std::unique_ptr<AtomicFileWriter> current_file_;
  // The last ended sequence's commit (fsync + rename) runs here until the next record write,
  // Finish() or the destructor waits for it; then done_[pending_seq_] is set.
  std::future<void> pending_commit_;
  int64_t pending_seq_ = -1;
  std::vector<uint8_t> record_;
  std::vector<uint8_t> chunk_records_;  // [n_rows, record bytes] of one AppendLogitsRows
  std::vector<int32_t> topk_scratch_;
  ReferenceLogitsManifest vocabulary_;  // only its vocabulary fields are used
  double io_seconds_ = 0;
};

}  // namespace proctor
