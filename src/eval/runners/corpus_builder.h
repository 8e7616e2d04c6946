// Building a corpus for dumps (`proctor corpus`, FORMATS.md section 4): text and chat rows are
// shuffled with the seed, tokenized and concatenated (eval/runners/token_stream.h says exactly
// how), and the first n_seqs * ctx_len tokens of the stream become tokens.bin [n_seqs][ctx_len]
// (row and conversation boundaries ignored), written with manifest.json by WriteCorpus.
#pragma once

#include <cstdint>
#include <ctime>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/runners/results_json.h"

namespace proctor {

struct CorpusBuildOptions {
  std::string tokenizer{};                      // model folder, tokenizer.json or .gguf
  std::vector<std::filesystem::path> inputs{};  // .txt / .jsonl files
  std::filesystem::path out_dir{};
  int64_t ctx_len = 0;
  int64_t n_seqs = 0;
  uint32_t seed = 123;
  std::filesystem::path chat_template_file{};  // overrides the model's template for chat rows
  std::optional<std::tm> chat_now{};           // strftime_now's clock; unset: now
  bool quiet = false;
};

struct CorpusBuildResult {
  std::filesystem::path out_dir;
  std::string tokenizer;  // as described by the tokenizer ("tokenizer.json (BPE) ...")
  int64_t vocab_size = 0;
  int64_t ctx_len = 0;
  int64_t n_seqs = 0;
  int64_t n_tokens = 0;  // n_seqs * ctx_len
  std::string tokens_sha256;
  int64_t rows_total = 0;  // rows in the inputs
  int64_t rows_used = 0;   // rows tokenized before the stream was long enough
  int64_t chat_rows_used = 0;
  int64_t tokens_tokenized = 0;          // stream length (>= n_tokens; the tail is dropped)
  std::filesystem::path tokenizer_path;  // the tokenizer file or folder loaded
  double elapsed_seconds = 0;
  double load_seconds = 0;          // loading the tokenizer
  double io_seconds = 0;            // reading the inputs, writing (and re-reading) the corpus
  nlohmann::ordered_json manifest;  // what manifest.json says
};

// Error("[corpus] ...") when the inputs give fewer than n_seqs * ctx_len tokens: the message
// says how many are needed and how many the inputs gave. Bad rows: see ReadTextRows.
CorpusBuildResult BuildCorpus(const CorpusBuildOptions& options);

// The --json summary of `proctor corpus`.
nlohmann::ordered_json CorpusBuildResultToJson(const CorpusBuildResult& result);
// The results file of `proctor corpus --json`: the tokenizer's own files (not a model folder's
// weights), the chat template and the inputs with their sha256, the settings, the result and the
// corpus written.
ResultsEnvelope CorpusResultsEnvelope(const CorpusBuildResult& result,
                                      const CorpusBuildOptions& options);

}  // namespace proctor
