// llama.cpp's KL-divergence base file (the FILE of `llama-perplexity --kl-divergence-base FILE`,
// tools/perplexity/perplexity.cpp; docs/formats.md "llama.cpp .kld"): reader and writer.
//
// Layout, little-endian, no padding:
//   char    magic[8] = "_logits_"
//   int32   n_ctx, n_vocab, n_chunk
//   int32   tokens[n_chunk][n_ctx]          chunk c = tokens [c*n_ctx, (c+1)*n_ctx) of the text
//   then per chunk, for positions p = n_ctx/2 .. n_ctx-2 (n_ctx - 1 - n_ctx/2 records), a record
//   of LlamaKldRecordWords(n_vocab) uint16 words:
//     float32 scale, float32 min_log_prob   (the first 4 words)
//     uint16  code[n_vocab]                 log p_i = scale * code_i + min_log_prob
//     uint16  0                             padding when n_vocab is odd
// Record p is the distribution over token p+1 after tokens 0..p of the chunk. When the model's
// vocabulary adds BOS, llama.cpp evaluates every chunk with its first token replaced by BOS (the
// file keeps the original token); LlamaKldChunkStartToken says which token to use.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "util/file.h"

namespace proctor {

inline constexpr char kLlamaKldMagic[] = "_logits_";  // 8 bytes in the file, no terminator
inline constexpr uint64_t kLlamaKldHeaderBytes = 8 + 3 * 4;

// uint16 words per record: 4 (two float32) + n_vocab codes rounded up to an even count.
inline constexpr int64_t LlamaKldRecordWords(int64_t n_vocab) {
  return 2 * ((n_vocab + 1) / 2) + 4;
}
// The first scored position of a chunk and the number of records per chunk.
inline constexpr int64_t LlamaKldFirstPosition(int64_t n_ctx) { return n_ctx / 2; }
inline constexpr int64_t LlamaKldRecordsPerChunk(int64_t n_ctx) { return n_ctx - 1 - n_ctx / 2; }

// One record, decoded lazily: log p_i = scale * codes[i] + min_log_prob (float arithmetic).
struct LlamaKldRecordView {
  float scale = 0;
  float min_log_prob = 0;
  const uint16_t* codes = nullptr;  // [n_vocab]

  // The stored log-probability of token i, computed as llama.cpp does (float).
  float LogProb(int64_t i) const { return scale * static_cast<float>(codes[i]) + min_log_prob; }
};

// A record in a buffer of uint16 words (as EncodeLlamaKldRecord writes it).
LlamaKldRecordView ViewLlamaKldRecord(const uint16_t* record);

// Records [lo, hi) of one chunk, as stored.
struct LlamaKldRecords {
  int64_t first = 0;  // record index of row 0 (position first + LlamaKldFirstPosition)
  int64_t count = 0;
  int64_t words = 0;           // uint16 words per record
  std::vector<uint16_t> data;  // [count, words]

  LlamaKldRecordView Row(int64_t r) const;
};

class LlamaKldFile {
 public:
  // Opens and validates a base file: magic, n_ctx >= 3 (at least one record per chunk),
  // n_vocab >= 1, n_chunk >= 1, the exact file size those imply, and every token in
  // [0, n_vocab). Throws Error("[llama-kld] ...") naming the file and the values.
  static LlamaKldFile Open(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return file_.path(); }
  int64_t n_ctx() const { return n_ctx_; }
  int64_t n_vocab() const { return n_vocab_; }
  int64_t n_chunk() const { return n_chunk_; }
  int64_t records_per_chunk() const { return LlamaKldRecordsPerChunk(n_ctx_); }
  int64_t first_position() const { return LlamaKldFirstPosition(n_ctx_); }
  int64_t record_words() const { return LlamaKldRecordWords(n_vocab_); }

  // The n_ctx token ids of chunk c, as stored.
  std::span<const int32_t> Tokens(int64_t chunk) const;
  // Records [lo, hi) of chunk `chunk` (record r = position first_position() + r) with one
  // positioned read. Each record's scale must be finite and >= 0 and its min_log_prob finite
  // and <= 0, else Error naming the chunk, position and values.
  void ReadRecords(int64_t chunk, int64_t lo, int64_t hi, LlamaKldRecords* out) const;

 private:
  ReadOnlyFile file_;
  int64_t n_ctx_ = 0;
  int64_t n_vocab_ = 0;
  int64_t n_chunk_ = 0;
  std::vector<int32_t> tokens_;  // [n_chunk, n_ctx]
};

// True when the file starts with "_logits_" (an unreadable or short file gives false).
bool LooksLikeLlamaKld(const std::filesystem::path& path);

// llama.cpp's record for one row of logits (perplexity.cpp, log_softmax with a uint16 output):
// max and min of the row, min raised to max - 16, log_sum_exp = log(sum expf(l - max)) (double
// sum, then float), scale = (max - min) / 65535, min_log_prob = min - max - log_sum_exp, codes
// round-to-nearest-even of (l - min) / scale for l > min and 0 otherwise (all 0 when scale is 0).
// Writes record_words words into `record`; returns the exact negative log-likelihood of `token`,
// max + log_sum_exp - l[token], as llama.cpp computes it. NaN or infinite logits are an Error.
double EncodeLlamaKldRecord(std::span<const float> logits, int32_t token, uint16_t* record);

// Writes a base file atomically (temporary file renamed by Finish()): the header and tokens at
// construction, then exactly records_per_chunk records per chunk, in order.
class LlamaKldWriter {
 public:
  // tokens: [n_chunk, n_ctx], each in [0, n_vocab).
  LlamaKldWriter(const std::filesystem::path& path, int64_t n_ctx, int64_t n_vocab, int64_t n_chunk,
                 std::span<const int32_t> tokens);
  ~LlamaKldWriter();

  int64_t records_per_chunk() const { return LlamaKldRecordsPerChunk(n_ctx_); }
  // The token that follows the position of the next record (what its record predicts).
  int32_t NextToken() const;
  // Appends the record of the next position from its logits row [n_vocab]; returns the exact
  // negative log-likelihood of NextToken() (EncodeLlamaKldRecord).
  double AppendLogitsRow(std::span<const float> logits);
  // Appends records already encoded (EncodeLlamaKldRecord): a whole number of records.
  void AppendRecords(std::span<const uint16_t> records);
  // After n_chunk * records_per_chunk records: renames the file into place.
  void Finish();

 private:
  std::unique_ptr<AtomicFileWriter> file_;
  int64_t n_ctx_ = 0, n_vocab_ = 0, n_chunk_ = 0;
  int64_t records_written_ = 0;
  std::vector<int32_t> tokens_;
  std::vector<uint16_t> record_;
};

}  // namespace proctor
