// Test helpers (header-only, used by eval's tests): temp directories and a tiny dump.
#pragma once

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "eval/formats/corpus.h"
#include "eval/formats/ref_logits_writer.h"
#include "util/error.h"
#include "util/file.h"
#include "util/half.h"
#include "util/testing_files.h"  // TempDir, FixturesDir, RunCommand, ErrorOf

namespace proctor::testing {

// A corpus of n_seqs x ctx_len tokens (i * step + offset) % vocab, recording only the
// vocabulary size: tokens for models without a tokenizer (the hf-goldens).
inline void WriteArithmeticCorpus(const std::filesystem::path& dir, int64_t n_seqs, int64_t ctx_len,
                                  int64_t vocab, int64_t step, int64_t offset) {
  std::vector<int32_t> tokens;
  tokens.reserve(static_cast<size_t>(n_seqs * ctx_len));
  for (int64_t i = 0; i < n_seqs * ctx_len; ++i) {
    tokens.push_back(static_cast<int32_t>((i * step + offset) % vocab));
  }
  WriteCorpus(dir, tokens, ctx_len, {{"vocab_size", vocab}});
}

// The seed's scorer fixture: vocab 12, top_k 4, ctx 6, 2 sequences, teacher logits uniform in
// [-4, 4] from a seeded generator, candidate = teacher + uniform noise in [-1, 1].
struct TinyCase {
  int64_t vocab = 12, top_k = 4, ctx_len = 6, n_seqs = 2;
  std::vector<int32_t> tokens;   // [n_seqs, ctx_len]
  std::vector<float> teacher;    // [n_seqs, ctx_len, vocab]
  std::vector<float> candidate;  // [n_seqs, ctx_len, vocab]

  // fp16_grid: teacher logits on a 1/64 grid (fp16-representable, also after the shift).
  explicit TinyCase(uint32_t seed = 1234, bool fp16_grid = false) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> logit(-4.0f, 4.0f), noise(-1.0f, 1.0f);
    std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(vocab - 1));
    for (int64_t i = 0; i < n_seqs * ctx_len; ++i) tokens.push_back(token(rng));
    for (int64_t i = 0; i < n_seqs * ctx_len * vocab; ++i) {
      float t = logit(rng);
      if (fp16_grid) t = std::round(t * 64.0f) / 64.0f;
      teacher.push_back(t);
      candidate.push_back(t + noise(rng));
    }
  }
  const float* TeacherRow(int64_t s, int64_t p) const {
    return teacher.data() + (s * ctx_len + p) * vocab;
  }
  const float* CandidateRow(int64_t s, int64_t p) const {
    return candidate.data() + (s * ctx_len + p) * vocab;
  }
  void WriteDump(const std::filesystem::path& dir, const std::string& created = "test") const {
    ReferenceLogitsWriter writer({.dir = dir,
                                  .model = "tiny-teacher",
                                  .corpus_sha256 = "00",
                                  .ctx_len = ctx_len,
                                  .n_seqs = n_seqs,
                                  .top_k = top_k,
                                  .created = created},
                                 tokens);
    for (int64_t s = 0; s < n_seqs; ++s) {
      writer.BeginSequence(s);
      for (int64_t p = 0; p < writer.positions(); ++p) {
        writer.AppendLogitsRow(std::span<const float>(TeacherRow(s, p), vocab));
      }
      writer.EndSequence();
    }
    writer.Finish();
  }
};

inline std::string ReadBytes(const std::filesystem::path& path) { return ReadFileToString(path); }

inline void WriteBytes(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace proctor::testing
