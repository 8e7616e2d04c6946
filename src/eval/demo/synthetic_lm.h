// A deterministic synthetic "language model" for the demo, benchmarks and tests: no weights,
// logits computed from a hash of the token prefix. Its rows look like an LM's (a Zipf-shaped
// prior over the vocabulary, per-position noise and one strongly preferred next token), and a
// "candidate" is the same model plus seeded Gaussian noise of a chosen size.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "eval/runners/teacher_forced.h"

namespace proctor {

class SyntheticLm {
 public:
  // noise_sigma > 0 adds N(0, noise_sigma^2) noise (seeded by noise_seed) to every logit.
  SyntheticLm(int64_t vocab, uint64_t seed, float noise_sigma = 0, uint64_t noise_seed = 0);

  int64_t vocab() const { return vocab_; }
  // Logits [vocab] at position `pos` of `tokens` (depends on tokens[0..pos] only).
  void RowLogits(std::span<const int32_t> tokens, int64_t pos, float* out) const;
  // The teacher-forced forward through the scoring seam (rows of a chunk built in parallel; the
  // model must outlive the steppers).
  TeacherForcedLogits Forward() const;

 private:
  void Row(uint64_t prefix_hash, int64_t pos, float* out) const;

  int64_t vocab_;
  uint64_t seed_;
  float noise_sigma_;
  uint64_t noise_seed_;
  std::vector<float> prior_;  // [vocab] Zipf-shaped log prior
};

// Seeded corpus tokens [n_seqs, ctx_len] in [0, vocab).
std::vector<int32_t> SyntheticTokens(int64_t n_seqs, int64_t ctx_len, int64_t vocab, uint64_t seed);

// Writes a complete reference-logits dump of `lm` over `tokens` into `dir` (which must be
// empty or absent).
void WriteSyntheticDump(const std::filesystem::path& dir, const SyntheticLm& lm,
                        std::span<const int32_t> tokens, int64_t n_seqs, int64_t ctx_len,
                        int64_t top_k, const std::string& model_name, const std::string& created);

}  // namespace proctor
