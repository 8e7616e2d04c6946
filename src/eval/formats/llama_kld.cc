#include "eval/formats/llama_kld.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

#include "util/error.h"

namespace proctor {
namespace {

constexpr const char* kComponent = "llama-kld";
// How far above 0 a stored log-probability may decode: llama.cpp's encoding of a row's top logit
// gives -log(sum of the shifted probabilities) <= 0, plus float rounding of about 1e-6 of the
// 16-nat window.
constexpr float kMaxLogProbRounding = 1e-3f;
constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();

int32_t LoadI32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// a * b, or -1 when the product does not fit in a non-negative int64.
int64_t CheckedProduct(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out) || out < 0) return -1;
  return out;
}

// llama.cpp's nearest_int: adding 1.5 * 2^23 rounds a float in [0, 2^22) to the nearest
// integer, ties to even (the float addition's own rounding).
int NearestInt(float value) {
  const float shifted = value + 12582912.f;
  int32_t bits;
  std::memcpy(&bits, &shifted, sizeof(bits));
  return (bits & 0x007fffff) - 0x00400000;
}

}  // namespace

LlamaKldRecordView LlamaKldRecords::Row(int64_t r) const {
  CHECK_MSG(0 <= r && r < count, "row {} of {}", r, count);
  return ViewLlamaKldRecord(data.data() + r * words);
}

LlamaKldRecordView ViewLlamaKldRecord(const uint16_t* rec) {
  LlamaKldRecordView view;
  std::memcpy(&view.scale, rec, 4);
  std::memcpy(&view.min_log_prob, rec + 2, 4);
  view.codes = rec + 4;
  return view;
}

LlamaKldFile LlamaKldFile::Open(const std::filesystem::path& path) {
  LlamaKldFile f;
  f.file_ = ReadOnlyFile(path);
  const std::string name = path.string();
  const uint64_t size = f.file_.size();
  if (size < 8) {
    Fail(kComponent,
         "'{}' has {} bytes: too short for the magic \"_logits_\" of a llama.cpp "
         "KL-divergence base file",
         name, size);
  }
  uint8_t header[kLlamaKldHeaderBytes];
  f.file_.ReadAt(0, std::span<uint8_t>(header, 8));
  if (std::memcmp(header, kLlamaKldMagic, 8) != 0) {
    std::string seen;
    for (int i = 0; i < 8; ++i) {
      const char c = static_cast<char>(header[i]);
      seen += (c >= 0x20 && c < 0x7f) ? std::string(1, c) : fmt::format("\\x{:02x}", header[i]);
    }
    Fail(kComponent,
         "'{}' starts with \"{}\", not the magic \"_logits_\" of a llama.cpp "
         "KL-divergence base file (llama-perplexity --kl-divergence-base)",
         name, seen);
  }
  if (size < kLlamaKldHeaderBytes) {
    Fail(kComponent,
         "'{}' is truncated: {} bytes, but the header (magic, n_ctx, n_vocab, "
         "n_chunk) takes {}",
         name, size, kLlamaKldHeaderBytes);
  }
  f.file_.ReadAt(0, std::span<uint8_t>(header, kLlamaKldHeaderBytes));
  f.n_ctx_ = LoadI32(header + 8);
  f.n_vocab_ = LoadI32(header + 12);
  f.n_chunk_ = LoadI32(header + 16);
  if (f.n_ctx_ < 3 || f.n_vocab_ < 1 || f.n_chunk_ < 1) {
    Fail(kComponent,
         "'{}' has n_ctx {}, n_vocab {}, n_chunk {}; expected n_ctx >= 3 (at least "
         "one scored position per chunk), n_vocab >= 1 and n_chunk >= 1",
         name, f.n_ctx_, f.n_vocab_, f.n_chunk_);
  }
  // Expected size, overflow-checked (the three counts come from the file).
  const int64_t n_tokens = CheckedProduct(f.n_ctx_, f.n_chunk_);
  const int64_t record_bytes = 2 * f.record_words();
  const int64_t chunk_bytes = CheckedProduct(f.records_per_chunk(), record_bytes);
  const int64_t records_bytes = chunk_bytes < 0 ? -1 : CheckedProduct(chunk_bytes, f.n_chunk_);
  const int64_t token_bytes = n_tokens < 0 ? -1 : CheckedProduct(n_tokens, 4);
  int64_t expected = -1;
  if (records_bytes >= 0 && token_bytes >= 0 &&
      records_bytes <= std::numeric_limits<int64_t>::max() - token_bytes - 64) {
    expected = static_cast<int64_t>(kLlamaKldHeaderBytes) + token_bytes + records_bytes;
  }
  if (expected < 0 || static_cast<uint64_t>(expected) != size) {
    const std::string want =
        expected < 0 ? std::string("more than 2^63") : fmt::format("{}", expected);
    Fail(kComponent,
         "'{}' is {}: {} bytes, but n_ctx {}, n_vocab {}, n_chunk {} need {} (20 header + "
         "4*n_ctx*n_chunk tokens + n_chunk*{} records of {} bytes)",
         name,
         expected >= 0 && size > static_cast<uint64_t>(expected) ? "longer than its header "
                                                                   "says"
                                                                 : "truncated",
         size, f.n_ctx_, f.n_vocab_, f.n_chunk_, want, f.records_per_chunk(), record_bytes);
  }
  f.tokens_.resize(static_cast<size_t>(n_tokens));
  f.file_.ReadAt(kLlamaKldHeaderBytes,
                 std::span<uint8_t>(reinterpret_cast<uint8_t*>(f.tokens_.data()),
                                    static_cast<size_t>(token_bytes)));
  for (size_t i = 0; i < f.tokens_.size(); ++i) {
    if (f.tokens_[i] < 0 || f.tokens_[i] >= f.n_vocab_) {
      Fail(kComponent,
           "'{}': chunk {} position {} holds token {}, outside the file's vocabulary "
           "[0, {})",
           name, static_cast<int64_t>(i) / f.n_ctx_, static_cast<int64_t>(i) % f.n_ctx_,
           f.tokens_[i], f.n_vocab_);
    }
  }
  return f;
}

std::span<const int32_t> LlamaKldFile::Tokens(int64_t chunk) const {
  CHECK_MSG(0 <= chunk && chunk < n_chunk_, "chunk {} of {}", chunk, n_chunk_);
  return std::span<const int32_t>(tokens_).subspan(static_cast<size_t>(chunk * n_ctx_),
                                                   static_cast<size_t>(n_ctx_));
}

void LlamaKldFile::ReadRecords(int64_t chunk, int64_t lo, int64_t hi, LlamaKldRecords* out) const {
  CHECK_MSG(0 <= chunk && chunk < n_chunk_, "chunk {} of {}", chunk, n_chunk_);
  CHECK_MSG(0 <= lo && lo <= hi && hi <= records_per_chunk(), "records [{}, {}) of {}", lo, hi,
            records_per_chunk());
  const int64_t words = record_words();
  out->first = lo;
  out->count = hi - lo;
  out->words = words;
  out->data.resize(static_cast<size_t>((hi - lo) * words));
  const uint64_t offset =
      kLlamaKldHeaderBytes + 4 * static_cast<uint64_t>(n_ctx_ * n_chunk_) +
      2 * static_cast<uint64_t>(words) * static_cast<uint64_t>(chunk * records_per_chunk() + lo);
  file_.ReadAt(offset, std::span<uint8_t>(reinterpret_cast<uint8_t*>(out->data.data()),
                                          out->data.size() * 2));
  for (int64_t r = 0; r < out->count; ++r) {
    const LlamaKldRecordView row = out->Row(r);
    if (!std::isfinite(row.scale) || row.scale < 0 || !std::isfinite(row.min_log_prob) ||
        row.min_log_prob > 0) {
      Fail(kComponent,
           "'{}': chunk {} position {} has scale {} and min_log_prob {}; expected a "
           "finite scale >= 0 and a finite min_log_prob <= 0",
           path().string(), chunk, first_position() + lo + r, row.scale, row.min_log_prob);
    }
    // The largest stored log-probability must not exceed 0 (beyond float rounding): a larger
    // one is a probability above 1, which would score as an infinite KL and a zero perplexity.
    const uint16_t* top = std::max_element(row.codes, row.codes + n_vocab_);
    const float top_log_prob = row.LogProb(top - row.codes);
    if (top_log_prob > kMaxLogProbRounding) {
      Fail(kComponent,
           "'{}': chunk {} position {}: code {} with scale {} and min_log_prob {} decodes to log p "
           "= {} > 0, a probability above 1",
           path().string(), chunk, first_position() + lo + r, *top, row.scale, row.min_log_prob,
           top_log_prob);
    }
  }
}

bool LooksLikeLlamaKld(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[8] = {};
  if (!in.read(magic, 8)) return false;
  return std::memcmp(magic, kLlamaKldMagic, 8) == 0;
}

double EncodeLlamaKldRecord(std::span<const float> logits, int32_t token, uint16_t* record) {
  const int64_t n_vocab = static_cast<int64_t>(logits.size());
  CHECK_MSG(n_vocab >= 1 && 0 <= token && token < n_vocab, "token {} of vocabulary {}", token,
            n_vocab);
  float max_logit = logits[0];
  float min_logit = logits[0];
  for (int64_t i = 0; i < n_vocab; ++i) {
    if (!std::isfinite(logits[i])) {
      Fail(kComponent, "logit {} of the row is {}; a base file needs finite logits", i, logits[i]);
    }
    max_logit = std::max(max_logit, logits[i]);
    min_logit = std::min(min_logit, logits[i]);
  }
  min_logit = std::max(min_logit, max_logit - 16);
  double sum_exp = 0.0;
  for (int64_t i = 0; i < n_vocab; ++i) sum_exp += std::exp(logits[i] - max_logit);
  const float log_sum_exp = static_cast<float>(std::log(sum_exp));
  const float min_log_prob = min_logit - max_logit - log_sum_exp;
  const float scale = (max_logit - min_logit) / 65535.f;
  std::memcpy(record, &scale, 4);
  std::memcpy(record + 2, &min_log_prob, 4);
  uint16_t* codes = record + 4;
  if (scale != 0) {
    const float inv_scale = 1 / scale;
    for (int64_t i = 0; i < n_vocab; ++i) {
      const int code = logits[i] > min_logit ? NearestInt(inv_scale * (logits[i] - min_logit)) : 0;
      CHECK_MSG(0 <= code && code <= 65535, "code {} for logit {} (max {}, min {})", code,
                logits[i], max_logit, min_logit);
      codes[i] = static_cast<uint16_t>(code);
    }
  } else {
    std::fill(codes, codes + n_vocab, uint16_t{0});
  }
  if (n_vocab % 2 == 1) codes[n_vocab] = 0;
  return static_cast<double>(max_logit + log_sum_exp - logits[token]);
}

LlamaKldWriter::LlamaKldWriter(const std::filesystem::path& path, int64_t n_ctx, int64_t n_vocab,
                               int64_t n_chunk, std::span<const int32_t> tokens)
    : n_ctx_(n_ctx), n_vocab_(n_vocab), n_chunk_(n_chunk), tokens_(tokens.begin(), tokens.end()) {
  if (n_ctx < 3 || n_ctx > kMaxInt32 || n_vocab < 1 || n_vocab > kMaxInt32 || n_chunk < 1 ||
      n_chunk > kMaxInt32) {
    Fail(kComponent,
         "cannot write '{}' with n_ctx {} (>= 3), n_vocab {} (>= 1), n_chunk {} "
         "(>= 1)",
         path.string(), n_ctx, n_vocab, n_chunk);
  }
  if (static_cast<int64_t>(tokens.size()) != n_ctx * n_chunk) {
    Fail(kComponent, "got {} tokens for '{}' of n_chunk {} x n_ctx {}", tokens.size(),
         path.string(), n_chunk, n_ctx);
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= n_vocab) {
      Fail(kComponent, "token {} at index {} is outside the vocabulary [0, {}) of '{}'", tokens[i],
           i, n_vocab, path.string());
    }
  }
  file_ = std::make_unique<AtomicFileWriter>(path);
  const int32_t header[3] = {static_cast<int32_t>(n_ctx), static_cast<int32_t>(n_vocab),
                             static_cast<int32_t>(n_chunk)};
  file_->Write(std::string_view(kLlamaKldMagic, 8));
  file_->Write(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(header), sizeof(header)));
  file_->Write(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(tokens.data()),
                                        tokens.size() * sizeof(int32_t)));
  record_.resize(static_cast<size_t>(LlamaKldRecordWords(n_vocab)));
}

LlamaKldWriter::~LlamaKldWriter() = default;

int32_t LlamaKldWriter::NextToken() const {
  const int64_t per_chunk = records_per_chunk();
  CHECK_MSG(records_written_ < per_chunk * n_chunk_, "all {} records are written",
            per_chunk * n_chunk_);
  const int64_t chunk = records_written_ / per_chunk;
  const int64_t position = LlamaKldFirstPosition(n_ctx_) + records_written_ % per_chunk;
  return tokens_[static_cast<size_t>(chunk * n_ctx_ + position + 1)];
}

double LlamaKldWriter::AppendLogitsRow(std::span<const float> logits) {
  if (static_cast<int64_t>(logits.size()) != n_vocab_) {
    Fail(kComponent, "a logits row of vocabulary {} for a base file of n_vocab {}", logits.size(),
         n_vocab_);
  }
  const double nll = EncodeLlamaKldRecord(logits, NextToken(), record_.data());
  AppendRecords(record_);
  return nll;
}

void LlamaKldWriter::AppendRecords(std::span<const uint16_t> records) {
  CHECK_MSG(file_ != nullptr, "the writer is finished");
  const int64_t words = LlamaKldRecordWords(n_vocab_);
  CHECK_MSG(records.size() % static_cast<size_t>(words) == 0,
            "{} words are not whole records "
            "of {}",
            records.size(), words);
  const int64_t count = static_cast<int64_t>(records.size()) / words;
  const int64_t needed = records_per_chunk() * n_chunk_;
  if (records_written_ + count > needed) {
    Fail(kComponent, "{} more records would exceed the {} of {} chunks x {}", count, needed,
         n_chunk_, records_per_chunk());
  }
  file_->Write(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(records.data()),
                                        records.size() * sizeof(uint16_t)));
  records_written_ += count;
}

void LlamaKldWriter::Finish() {
  CHECK_MSG(file_ != nullptr, "the writer is finished");
  const int64_t needed = records_per_chunk() * n_chunk_;
  if (records_written_ != needed) {
    Fail(kComponent, "cannot finish the base file: {} of {} records written", records_written_,
         needed);
  }
  file_->Commit();
  file_.reset();
}

}  // namespace proctor
