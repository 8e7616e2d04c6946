// The reference-logits dump, format_version 1 (FORMATS.md section 1; docs/formats.md): a
// directory with manifest.json, tokens.bin and one seq-<i>.bin of fixed-width records per
// sequence. ReferenceLogitsDump is the reader: Open() validates everything the format promises,
// ReadRecords() streams a record range with one positioned read.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "util/file.h"

namespace proctor {

inline constexpr int kReferenceLogitsFormatVersion = 1;

// Bytes of one record: int32 indices[top_k], fp16 logits[top_k], float32 logsumexp.
inline constexpr uint64_t ReferenceRecordBytes(int64_t top_k) {
  return 6 * static_cast<uint64_t>(top_k) + 4;
}

struct ReferenceLogitsManifest {
  int format_version = kReferenceLogitsFormatVersion;
  std::string model;
  std::string corpus_sha256;
  int64_t ctx_len = 0;
  int64_t n_seqs = 0;
  int64_t top_k = 0;
  int64_t positions_per_seq = 0;  // as written; the reader trusts seq-0.bin's size instead
  std::optional<std::string> created;
  std::optional<std::string> notes;
  // Optional keys recording the teacher's vocabulary (proctor dump writes them; older dumps and
  // other writers may not): its logits width, TokenizerFingerprint (eval/runners/vocab_check.h) and
  // special ids. kl compares a candidate against them.
  std::optional<int64_t> vocab_size;
  std::optional<std::string> tokenizer_sha256;
  // The sha256 of the teacher's files as the run database computes it (eval/runs/run_database.h
  // ModelIdentity: a .gguf's own, or a folder's sha256sum listing), so a dump names the exact
  // weights it came from, not only the path.
  std::optional<std::string> model_sha256;
  std::optional<int32_t> bos_id;
  std::optional<int32_t> eos_id;
  // The sha256 of tokens.bin itself (proctor dump writes it; corpus_sha256 names the whole corpus,
  // of which a dump may hold a slice). Open verifies it: an edited tokens.bin is refused.
  std::optional<std::string> tokens_sha256;

  // Parses and validates manifest.json text; `path` only names the file in errors.
  static ReferenceLogitsManifest Parse(const std::string& text, const std::filesystem::path& path);
  std::string ToJson() const;  // pretty-printed, fixed key order, trailing newline
};

// Decoded records [lo, hi) of one sequence, row-major: record r of the block is row r.
struct ReferenceRecords {
  int64_t first = 0;  // record index of row 0 (= position in the sequence)
  int64_t count = 0;
  int64_t top_k = 0;
  std::vector<int32_t> indices;  // [count, top_k] vocabulary indices, descending by logit
  std::vector<float> logits;     // [count, top_k] the fp16 logits, decoded exactly
  std::vector<float> logsumexp;  // [count] full-vocabulary logsumexp (same shift as logits)
  std::vector<uint8_t> raw;      // [count * record bytes] scratch for the read

  const int32_t* Indices(int64_t row) const { return indices.data() + row * top_k; }
  const float* Logits(int64_t row) const { return logits.data() + row * top_k; }
};

// Fills indices, logits and logsumexp of `out` from its raw bytes (count records of top_k, as
// stored in a sequence file).
void DecodeReferenceRecords(ReferenceRecords* out);
// Records [lo, hi) of a sequence file of records of `top_k` into `out` (read and decoded; no
// range check: ReferenceLogitsDump::ReadRecords makes them against the dump).
void ReadReferenceRecords(const std::filesystem::path& sequence_file, int64_t lo, int64_t hi,
                          int64_t top_k, ReferenceRecords* out);

class ReferenceLogitsDump {
 public:
  // Opens and validates a dump directory (every check of FORMATS.md section 1 that does not
  // need the candidate). Throws Error("[ref-logits] ...") naming the file and the numbers.
  static ReferenceLogitsDump Open(const std::filesystem::path& dir);

  const std::filesystem::path& dir() const { return dir_; }
  const ReferenceLogitsManifest& manifest() const { return manifest_; }
  int64_t n_seqs() const { return manifest_.n_seqs; }
  int64_t ctx_len() const { return manifest_.ctx_len; }
  int64_t top_k() const { return manifest_.top_k; }
  uint64_t record_bytes() const { return ReferenceRecordBytes(manifest_.top_k); }
  // Records per sequence, from seq-0.bin's size (at most ctx_len - 1).
  int64_t positions() const { return positions_; }
  // Non-fatal findings of Open() (e.g. positions_per_seq disagreeing with seq-0.bin).
  const std::vector<std::string>& warnings() const { return warnings_; }
  // `ref-logits:<model> top<K> (<dir>)`
  std::string Label() const;

  // The teacher-forced token ids of sequence `seq` (ctx_len of them), read from tokens.bin.
  std::vector<int32_t> Tokens(int64_t seq) const;
  // Records [lo, hi) of sequence `seq`, decoded into *out (buffers reused), with one
  // positioned read. Requires 0 <= lo <= hi <= positions().
  void ReadRecords(int64_t seq, int64_t lo, int64_t hi, ReferenceRecords* out) const;

  std::filesystem::path SequencePath(int64_t seq) const;
  std::filesystem::path TokensPath() const { return dir_ / "tokens.bin"; }
  std::filesystem::path ManifestPath() const { return dir_ / "manifest.json"; }

 private:
  std::filesystem::path dir_;
  ReferenceLogitsManifest manifest_;
  int64_t positions_ = 0;
  std::vector<std::string> warnings_;
};

std::filesystem::path ReferenceSequencePath(const std::filesystem::path& dir, int64_t seq);

}  // namespace proctor
