#include "eval/formats/ref_logits_writer.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include <nlohmann/json.hpp>

#include "ops/logits_stats.h"
#include "util/error.h"
#include "util/half.h"
#include "util/sha256.h"
#include "util/timing.h"

namespace proctor {
namespace {

constexpr const char* kComponent = "ref-logits";
constexpr const char* kInProgressName = ".in-progress.json";

std::string InProgressJson(const ReferenceLogitsWriterOptions& o, const std::string& tokens_sha) {
  nlohmann::ordered_json j;
  j["model"] = o.model;
  if (o.model_sha256) j["model_sha256"] = *o.model_sha256;  // a resume must use the same teacher
  j["corpus_sha256"] = o.corpus_sha256;
  j["ctx_len"] = o.ctx_len;
  j["n_seqs"] = o.n_seqs;
  j["top_k"] = o.top_k;
  j["notes"] = o.notes ? nlohmann::json(*o.notes) : nlohmann::json(nullptr);
  j["tokens_sha256"] = tokens_sha;
  if (!o.settings.is_null()) j["settings"] = o.settings;
  j["created"] = o.created;
  return j.dump(2) + "\n";
}

// One record (FORMATS.md section 1) into rec[ReferenceRecordBytes(k)]: indices [k] int32, logits
// [k] fp16 shifted by max, the shifted logsumexp float32.
void PackRecord(const int32_t* indices, const float* logits, int64_t k, float max,
                float shifted_lse, uint8_t* rec) {
  std::memcpy(rec, indices, static_cast<size_t>(k) * 4);
  for (int64_t j = 0; j < k; ++j) {
    const uint16_t h = F32ToF16(logits[j] - max);
    std::memcpy(rec + 4 * k + 2 * j, &h, 2);
  }
  std::memcpy(rec + 6 * k, &shifted_lse, 4);
}

bool RecordableRow(const ops::RowStats& stats) {
  return !stats.has_nan && std::isfinite(stats.max);
}

// The record of one full logits row [vocab] (top k, ties to the lower index) into rec; topk is
// scratch [k]. Returns the row's statistics; nothing is meaningful in rec unless
// RecordableRow(them).
ops::RowStats EncodeLogitsRecord(const float* row, int64_t vocab, int64_t k, int32_t* topk,
                                 uint8_t* rec) {
  const ops::RowStats stats = ops::ComputeRowStats(row, vocab);
  if (!RecordableRow(stats)) return stats;
  ops::SelectTopK(row, vocab, k, topk);
  std::memcpy(rec, topk, static_cast<size_t>(k) * 4);
  for (int64_t j = 0; j < k; ++j) {
    const uint16_t h = F32ToF16(row[topk[j]] - stats.max);
    std::memcpy(rec + 4 * k + 2 * j, &h, 2);
  }
  std::memcpy(rec + 6 * k, &stats.log_sum_exp_shifted, 4);
  return stats;
}

}  // namespace

ReferenceLogitsWriter::ReferenceLogitsWriter(ReferenceLogitsWriterOptions options,
                                             std::span<const int32_t> tokens)
    : options_(std::move(options)) {
  const auto& o = options_;
  if (o.ctx_len < 2 || o.n_seqs < 1 || o.top_k < 1) {
    Fail(kComponent,
         "cannot write a dump with ctx_len {} (>= 2), n_seqs {} (>= 1), top_k {} (>= 1)", o.ctx_len,
         o.n_seqs, o.top_k);
  }
  if (tokens.size() != static_cast<size_t>(o.n_seqs * o.ctx_len)) {
    Fail(kComponent, "got {} tokens for a dump of n_seqs {} x ctx_len {}", tokens.size(), o.n_seqs,
         o.ctx_len);
  }
  const auto token_bytes = std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(tokens.data()),
                                                    tokens.size() * sizeof(int32_t));
  const std::string tokens_sha = Sha256Hex(token_bytes);
  tokens_sha256_ = tokens_sha;
  std::filesystem::create_directories(o.dir);
  // One writer per directory: two dumps (or two resumes) into it would interleave sequence files.
  // The lock is the directory's own (flock), released when this writer is destroyed or its
  // process dies.
  dir_lock_.fd = ::open(o.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_lock_.fd < 0) {
    Fail(kComponent, "cannot open '{}': {}", o.dir.string(), std::strerror(errno));
  }
  if (::flock(dir_lock_.fd, LOCK_EX | LOCK_NB) != 0) {
    Fail(kComponent,
         "'{}' is being written by another dump right now (it holds the directory's lock); wait "
         "for it to end or choose another directory",
         o.dir.string());
  }
  const auto marker = o.dir / kInProgressName;
  if (std::filesystem::exists(o.dir / "manifest.json")) {
    Fail(kComponent,
         "'{}' already holds a complete dump (manifest.json exists); choose another "
         "directory",
         o.dir.string());
  }
  if (std::filesystem::exists(marker)) {
    // Resume: the parameters must be the ones the interrupted run used.
    const auto earlier = nlohmann::json::parse(ReadFileToString(marker), nullptr, false);
    if (earlier.is_discarded() || !earlier.contains("created")) {
      Fail(kComponent, "'{}' is damaged; delete the directory and dump again", marker.string());
    }
    options_.created = earlier["created"].get<std::string>();
    const std::string wanted = InProgressJson(options_, tokens_sha);
    if (nlohmann::json::parse(wanted) != earlier) {
      Fail(kComponent,
           "'{}' holds an interrupted dump with other parameters or tokens:\n{}this run asks "
           "for:\n{}use another directory, or delete it",
           o.dir.string(), earlier.dump(2) + "\n", wanted);
    }
  } else {
    if (!std::filesystem::is_empty(o.dir)) {
      Fail(kComponent, "'{}' is not empty and holds no interrupted dump; choose an empty directory",
           o.dir.string());
    }
    if (options_.created.empty()) options_.created = UtcNow();
    WriteFileAtomic(marker, InProgressJson(options_, tokens_sha));
  }
  // Leftover temporary files of a killed run.
  for (const auto& entry : std::filesystem::directory_iterator(o.dir)) {
    if (entry.path().filename().string().find(".tmp.") != std::string::npos) {
      std::filesystem::remove(entry.path());
    }
  }
  WriteFileAtomic(
      o.dir / "tokens.bin",
      std::string_view(reinterpret_cast<const char*>(token_bytes.data()), token_bytes.size()));
  const uint64_t complete_size = static_cast<uint64_t>(positions()) * ReferenceRecordBytes(o.top_k);
  done_.assign(static_cast<size_t>(o.n_seqs), false);
  for (int64_t s = 0; s < o.n_seqs; ++s) {
    const auto path = ReferenceSequencePath(o.dir, s);
    std::error_code ec;
    done_[s] =
        std::filesystem::exists(path, ec) && std::filesystem::file_size(path, ec) == complete_size;
  }
  record_.resize(ReferenceRecordBytes(o.top_k));
}

ReferenceLogitsWriter::DirectoryLock::~DirectoryLock() {
  if (fd >= 0) ::close(fd);
}

ReferenceLogitsWriter::~ReferenceLogitsWriter() {
  // A complete sequence's commit still running finishes (its file is whole); errors are lost
  // here, as the destructor runs on an error path or after Finish (which waited).
  if (pending_commit_.valid()) {
    try {
      pending_commit_.get();
    } catch (...) {
    }
  }
}

int64_t ReferenceLogitsWriter::SequencesDone() const {
  return std::count(done_.begin(), done_.end(), true);
}

void ReferenceLogitsWriter::BeginSequence(int64_t seq) {
  CHECK_MSG(current_seq_ < 0, "sequence {} still open", current_seq_);
  CHECK_MSG(0 <= seq && seq < options_.n_seqs, "seq={}", seq);
  current_seq_ = seq;
  current_records_ = 0;
  current_file_ = std::make_unique<AtomicFileWriter>(ReferenceSequencePath(options_.dir, seq));
}

void ReferenceLogitsWriter::AppendLogitsRow(std::span<const float> row) {
  const int64_t vocab = static_cast<int64_t>(row.size());
  if (vocab < options_.top_k) {
    Fail(kComponent, "a logits row of vocabulary {} cannot give top_k {}", vocab, options_.top_k);
  }
  topk_scratch_.resize(static_cast<size_t>(options_.top_k));
  const ops::RowStats stats =
      EncodeLogitsRecord(row.data(), vocab, options_.top_k, topk_scratch_.data(), record_.data());
  if (!RecordableRow(stats)) FailUnrecordableRow(stats, current_records_);
  WriteRecords(record_, 1);
}

void ReferenceLogitsWriter::AppendLogitsRows(const MatView& logits, int64_t n_rows,
                                             ThreadPool& pool) {
  CHECK_MSG(logits.type == DType::kF32 && 0 <= n_rows && n_rows <= logits.rows,
            "type {} rows {} n_rows {}", Name(logits.type), logits.rows, n_rows);
  if (n_rows == 0) return;
  const int64_t vocab = logits.cols;
  const int64_t k = options_.top_k;
  if (vocab < k) {
    Fail(kComponent, "a logits row of vocabulary {} cannot give top_k {}", vocab, k);
  }
  const size_t record_bytes = record_.size();
  chunk_records_.resize(static_cast<size_t>(n_rows) * record_bytes);
  std::vector<ops::RowStats> stats(static_cast<size_t>(n_rows));
  pool.ParallelFor(static_cast<size_t>(n_rows), [&](size_t begin, size_t end, int) {
    std::vector<int32_t> topk(static_cast<size_t>(k));  // [k] per partition
    for (size_t r = begin; r < end; ++r) {
      stats[r] = EncodeLogitsRecord(logits.RowAs<float>(static_cast<int64_t>(r)), vocab, k,
                                    topk.data(), chunk_records_.data() + r * record_bytes);
    }
  });
  for (int64_t r = 0; r < n_rows; ++r) {
    if (!RecordableRow(stats[r])) FailUnrecordableRow(stats[r], current_records_ + r);
  }
  WriteRecords(std::span<const uint8_t>(chunk_records_), n_rows);
}

void ReferenceLogitsWriter::FailUnrecordableRow(const ops::RowStats& stats,
                                                int64_t position) const {
  Fail(kComponent, "sequence {} position {}: the logits row has {}", current_seq_, position,
       stats.has_nan ? "a NaN" : fmt::format("maximum {}", stats.max));
}

void ReferenceLogitsWriter::AppendTopK(std::span<const int32_t> indices,
                                       std::span<const float> logits, float logsumexp) {
  const size_t k = static_cast<size_t>(options_.top_k);
  if (indices.size() != k || logits.size() != k) {
    Fail(kComponent, "got {} indices and {} logits for top_k {}", indices.size(), logits.size(), k);
  }
  topk_scratch_.assign(indices.begin(), indices.end());
  std::sort(topk_scratch_.begin(), topk_scratch_.end());
  if (topk_scratch_.front() < 0 ||
      std::adjacent_find(topk_scratch_.begin(), topk_scratch_.end()) != topk_scratch_.end()) {
    Fail(kComponent, "sequence {} position {}: top-k indices must be distinct and >= 0",
         current_seq_, current_records_);
  }
  for (size_t j = 1; j < k; ++j) {
    if (!(logits[j] <= logits[j - 1])) {
      Fail(kComponent, "sequence {} position {}: top-k logits must be non-increasing ({} then {})",
           current_seq_, current_records_, logits[j - 1], logits[j]);
    }
  }
  if (!std::isfinite(logits[0]) || !std::isfinite(logsumexp) || logsumexp < logits[0]) {
    Fail(kComponent, "sequence {} position {}: logsumexp {} must be finite and >= the top logit {}",
         current_seq_, current_records_, logsumexp, logits[0]);
  }
  WriteRecord(indices.data(), logits.data(), logits[0], logsumexp - logits[0]);
}

void ReferenceLogitsWriter::WriteRecord(const int32_t* indices, const float* logits, float max,
                                        float shifted_lse) {
  PackRecord(indices, logits, options_.top_k, max, shifted_lse, record_.data());
  WriteRecords(record_, 1);
}

void ReferenceLogitsWriter::WriteRecords(std::span<const uint8_t> records, int64_t count) {
  CHECK_MSG(current_seq_ >= 0, "no sequence open");
  CHECK_MSG(current_records_ + count <= positions(), "sequence {} has {} records, {} more given",
            current_seq_, current_records_, count);
  CHECK(records.size() == static_cast<size_t>(count) * record_.size());
  WaitForPendingCommit();  // the previous sequence is on disk before this one has records
  {
    ScopedSeconds io(&io_seconds_);
    current_file_->Write(records);
  }
  current_records_ += count;
}

void ReferenceLogitsWriter::EndSequence() {
  CHECK_MSG(current_seq_ >= 0, "no sequence open");
  if (current_records_ != positions()) {
    Fail(kComponent, "sequence {} got {} records; a dump of ctx_len {} needs {}", current_seq_,
         current_records_, options_.ctx_len, positions());
  }
  WaitForPendingCommit();
  // fsync + rename on a helper thread, overlapping the next sequence's first forward chunk.
  pending_seq_ = current_seq_;
  pending_commit_ =
      std::async(std::launch::async, [file = std::move(current_file_)] { file->Commit(); });
  current_seq_ = -1;
}

void ReferenceLogitsWriter::WaitForPendingCommit() {
  if (!pending_commit_.valid()) return;
  ScopedSeconds io(&io_seconds_);
  const int64_t seq = pending_seq_;
  pending_seq_ = -1;
  std::future<void> commit = std::move(pending_commit_);
  commit.get();  // rethrows the commit's Error
  done_[seq] = true;
}

void ReferenceLogitsWriter::SetTeacherVocabulary(std::optional<int64_t> vocab_size,
                                                 std::optional<std::string> tokenizer_sha256,
                                                 std::optional<int32_t> bos_id,
                                                 std::optional<int32_t> eos_id) {
  vocabulary_.vocab_size = vocab_size;
  vocabulary_.tokenizer_sha256 = std::move(tokenizer_sha256);
  vocabulary_.bos_id = bos_id;
  vocabulary_.eos_id = eos_id;
}

void ReferenceLogitsWriter::Finish() {
  CHECK_MSG(current_seq_ < 0, "sequence {} still open", current_seq_);
  WaitForPendingCommit();
  for (int64_t s = 0; s < options_.n_seqs; ++s) {
    if (!done_[s]) Fail(kComponent, "cannot finish the dump: sequence {} is not written", s);
  }
  ReferenceLogitsManifest m;
  m.model = options_.model;
  m.model_sha256 = options_.model_sha256;
  m.corpus_sha256 = options_.corpus_sha256;
  m.tokens_sha256 = tokens_sha256_;
  m.ctx_len = options_.ctx_len;
  m.n_seqs = options_.n_seqs;
  m.top_k = options_.top_k;
  m.positions_per_seq = positions();
  m.created = options_.created;
  m.notes = options_.notes;
  m.vocab_size = vocabulary_.vocab_size;
  m.tokenizer_sha256 = vocabulary_.tokenizer_sha256;
  m.bos_id = vocabulary_.bos_id;
  m.eos_id = vocabulary_.eos_id;
  WriteFileAtomic(options_.dir / "manifest.json", m.ToJson());
  std::filesystem::remove(options_.dir / kInProgressName);
}

}  // namespace proctor
