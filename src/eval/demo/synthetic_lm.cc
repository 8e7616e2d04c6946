#include "eval/demo/synthetic_lm.h"

#include <fmt/format.h>

#include <cmath>

#include "eval/formats/ref_logits_writer.h"
#include "eval/runners/logits_chunks.h"
#include "util/sha256.h"
#include "util/thread_pool.h"

namespace proctor {
namespace {

uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// An approximately standard normal value from one 64-bit hash (Irwin-Hall, 4 uniforms).
float GaussianFromHash(uint64_t h) {
  float sum = 0;
  for (int i = 0; i < 4; ++i) sum += static_cast<float>((h >> (16 * i)) & 0xFFFF) / 65536.0f;
  return (sum - 2.0f) * 1.7320508f;
}

uint64_t PrefixHash(std::span<const int32_t> tokens, int64_t pos, uint64_t seed) {
  uint64_t h = SplitMix64(seed);
  for (int64_t i = 0; i <= pos; ++i) h = SplitMix64(h ^ static_cast<uint32_t>(tokens[i]));
  return h;
}

}  // namespace

SyntheticLm::SyntheticLm(int64_t vocab, uint64_t seed, float noise_sigma, uint64_t noise_seed)
    : vocab_(vocab), seed_(seed), noise_sigma_(noise_sigma), noise_seed_(noise_seed) {
  prior_.resize(static_cast<size_t>(vocab));
  for (int64_t j = 0; j < vocab; ++j) {
    // A fixed pseudo-random rank per token; log-prior falls like a Zipf law in the rank.
    const uint64_t rank = SplitMix64(seed ^ (0xABCDull + static_cast<uint64_t>(j))) % vocab;
    prior_[j] = -1.1f * std::log1p(static_cast<float>(rank));
  }
}

void SyntheticLm::Row(uint64_t prefix_hash, int64_t pos, float* out) const {
  const uint64_t row_seed = SplitMix64(prefix_hash ^ static_cast<uint64_t>(pos));
  const uint64_t noise_row = SplitMix64(row_seed ^ noise_seed_ ^ 0x5EEDull);
  for (int64_t j = 0; j < vocab_; ++j) {
    const uint64_t u = static_cast<uint64_t>(j);
    float v = prior_[j] + 1.0f * GaussianFromHash(SplitMix64(row_seed + u));
    if (noise_sigma_ > 0) v += noise_sigma_ * GaussianFromHash(SplitMix64(noise_row + u));
    out[j] = v;
  }
  out[row_seed % static_cast<uint64_t>(vocab_)] += 7.0f;  // the preferred next token
}

void SyntheticLm::RowLogits(std::span<const int32_t> tokens, int64_t pos, float* out) const {
  Row(PrefixHash(tokens, pos, seed_), pos, out);
}

TeacherForcedLogits SyntheticLm::Forward() const {
  class Stepper final : public LogitsStepper {
   public:
    explicit Stepper(const SyntheticLm& lm) : lm_(lm), hash_(SplitMix64(lm.seed_)) {}
    MatView Step(std::span<const int32_t> tokens) override {
      const int64_t rows = static_cast<int64_t>(tokens.size());
      if (chunk_.rows() != rows) chunk_ = Tensor::F32(rows, lm_.vocab_);  // [rows, V]
      std::vector<uint64_t> hashes(tokens.size());
      for (size_t i = 0; i < tokens.size(); ++i) {
        hashes[i] = hash_ = SplitMix64(hash_ ^ static_cast<uint32_t>(tokens[i]));
      }
      ThreadPool::Global().ParallelFor(tokens.size(), [&](size_t b, size_t e, int) {
        for (size_t r = b; r < e; ++r) {
          lm_.Row(hashes[r], next_ + static_cast<int64_t>(r),
                  chunk_.RowF32(static_cast<int64_t>(r)));
        }
      });
      next_ += rows;
      return chunk_.View();
    }

   private:
    const SyntheticLm& lm_;
    uint64_t hash_;
    int64_t next_ = 0;
    Tensor chunk_;
  };
  return [this](int64_t) -> std::unique_ptr<LogitsStepper> {
    return std::make_unique<Stepper>(*this);
  };
}

std::vector<int32_t> SyntheticTokens(int64_t n_seqs, int64_t ctx_len, int64_t vocab,
                                     uint64_t seed) {
  std::vector<int32_t> tokens(static_cast<size_t>(n_seqs * ctx_len));
  for (size_t i = 0; i < tokens.size(); ++i) {
    tokens[i] =
        static_cast<int32_t>(SplitMix64(seed * 0x1000003ull + i) % static_cast<uint64_t>(vocab));
  }
  return tokens;
}

void WriteSyntheticDump(const std::filesystem::path& dir, const SyntheticLm& lm,
                        std::span<const int32_t> tokens, int64_t n_seqs, int64_t ctx_len,
                        int64_t top_k, const std::string& model_name, const std::string& created) {
  ReferenceLogitsWriter writer(
      {.dir = dir,
       .model = model_name,
       .corpus_sha256 = Sha256Hex(std::span<const uint8_t>(
           reinterpret_cast<const uint8_t*>(tokens.data()), tokens.size() * 4)),
       .ctx_len = ctx_len,
       .n_seqs = n_seqs,
       .top_k = top_k,
       .notes = "synthetic teacher (proctor's SyntheticLm), not a real model",
       .created = created},
      tokens);
  LogitsChunkDriver driver({{"the synthetic teacher", lm.Forward()}},
                           {.component = "dump", .chunk_size = 64, .quiet = true});
  for (int64_t s = 0; s < n_seqs; ++s) {
    if (writer.SequenceDone(s)) continue;
    writer.BeginSequence(s);
    const auto seq_tokens =
        tokens.subspan(static_cast<size_t>(s * ctx_len), static_cast<size_t>(ctx_len));
    driver.RunSequence(
        seq_tokens, writer.positions(), fmt::format("sequence {}", s),
        [&](const LogitsChunk& chunk) {
          for (int64_t r = 0; r < chunk.scored; ++r) {
            writer.AppendLogitsRow(std::span<const float>(chunk[0].RowAs<float>(r), chunk[0].cols));
          }
        });
    writer.EndSequence();
  }
  writer.Finish();
}

}  // namespace proctor
