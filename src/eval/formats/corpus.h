// The tokenized corpus a teacher dump runs over (FORMATS.md section 4; docs/formats.md): a
// directory with tokens.bin (int32 [n_seqs][ctx_len]) and manifest.json (kind "kl-eval-corpus",
// tokens_sha256 pinning tokens.bin). ReadCorpus validates both; WriteCorpus writes them
// atomically (tokens first, manifest last).
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace proctor {

struct Corpus {
  std::filesystem::path dir;
  int64_t ctx_len = 0;
  int64_t n_seqs = 0;
  int64_t vocab_size = 0;  // 0 when the manifest does not say (null or absent)
  std::string tokenizer;   // as the manifest says ("" when absent)
  // The tokenizer's identity when the manifest records it (eval/runners/vocab_check.h).
  std::optional<std::string> tokenizer_sha256;
  std::optional<int32_t> bos_id, eos_id;
  std::string tokens_sha256;    // verified against tokens.bin
  std::vector<int32_t> tokens;  // [n_seqs, ctx_len]

  std::span<const int32_t> Sequence(int64_t seq) const {
    return std::span<const int32_t>(tokens).subspan(static_cast<size_t>(seq * ctx_len),
                                                    static_cast<size_t>(ctx_len));
  }
};

// Sequences [seq_start, seq_end) of a corpus, as a dump runs over them.
struct CorpusSlice {
  int64_t seq_start = 0;
  int64_t seq_end = 0;              // exclusive, resolved (never -1)
  std::span<const int32_t> tokens;  // [seq_end - seq_start, ctx_len]
  int64_t n_seqs() const { return seq_end - seq_start; }
};

// The slice [seq_start, seq_end) of `corpus` (seq_end < 0: to the last sequence); an error from
// `component` naming the corpus and the numbers when it is empty or not inside the corpus.
CorpusSlice SliceCorpus(const Corpus& corpus, int64_t seq_start, int64_t seq_end,
                        const char* component);

// The check a teacher's first logits make against the corpus: a corpus that records a
// vocabulary size equal to neither the teacher's logits width nor its tokenizer's vocabulary
// was tokenized by another tokenizer (an error from `component` naming both).
void CheckCorpusVocabularyMatches(const Corpus& corpus, int64_t logits_vocab,
                                  std::optional<int64_t> tokenizer_vocab,
                                  const std::string& teacher, const char* component);

// Reads and validates a corpus directory (the one reader of its manifest.json): format_version 1
// and kind "kl-eval-corpus", positive ctx_len / n_seqs, integer bos_id / eos_id when present,
// tokens.bin of exactly n_seqs*ctx_len*4 bytes whose SHA-256 is tokens_sha256, token ids >= 0
// (and < vocab_size when given).
// Error("[corpus] ...") names the file and the numbers.
Corpus ReadCorpus(const std::filesystem::path& dir);

// Writes tokens.bin and manifest.json into `dir` (created if missing) and returns the manifest
// written. `manifest` supplies the descriptive keys (tokenizer, vocab_size, tokenizer_sha256 /
// bos_id / eos_id when given, seed, chat_template, sources, notes); format_version, kind,
// ctx_len, n_seqs, n_tokens, tokens_sha256 and created are filled in here.
nlohmann::ordered_json WriteCorpus(const std::filesystem::path& dir,
                                   std::span<const int32_t> tokens, int64_t ctx_len,
                                   const nlohmann::ordered_json& manifest);

}  // namespace proctor
