// The prompts of the decode path's `--prompts FILE` (`proctor kl --decode-steps`, `proctor
// kv-curve`): the rows of one .jsonl or text file, tokenized exactly as `proctor corpus` tokenizes
// a row (eval/runners/token_stream.h: {"text"} rows encoded with special tokens and EOS appended,
// {"messages"} rows rendered with the model's chat template), but each row kept as a prompt of
// its own length, in file order, not concatenated and cut. A prompt longer than max_tokens keeps
// its first max_tokens tokens; one shorter than min_tokens is skipped (and counted).
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/tokenizer/tokenizer.h"

namespace proctor {

struct PromptSetOptions {
  int64_t max_prompts = 64;  // take the first N prompts long enough; 0: every one
  int64_t max_tokens = 256;  // a longer prompt keeps its first max_tokens tokens
  int64_t min_tokens = 2;    // a shorter prompt is skipped
  // Where {"messages"} rows get their chat template (a model folder, as TokenStreamOptions).
  std::filesystem::path chat_model_dir{};
  bool quiet = false;
  const char* component = "kl";  // errors are "[component] ..."
};

struct PromptSet {
  std::filesystem::path path;
  std::string sha256;           // of the file's bytes
  int64_t rows = 0;             // rows in the file
  int64_t skipped_short = 0;    // rows with fewer than min_tokens tokens (before the cap)
  int64_t truncated = 0;        // prompts cut to max_tokens
  std::vector<int64_t> lines;   // each prompt's 1-based line in the file (0 for a text file)
  std::vector<int64_t> starts;  // prompt i is tokens[starts[i], starts[i + 1])
  std::vector<int32_t> tokens;
  // SHA-256 of every prompt as its u32 length then its int32 ids, little-endian, in order.
  std::string tokens_sha256;

  int64_t size() const { return static_cast<int64_t>(lines.size()); }
  std::span<const int32_t> Prompt(int64_t i) const;
  int64_t shortest() const;
  int64_t longest() const;
};

// Reads, tokenizes and selects the prompts of `file` (see above). Error("[component] ...")
// naming the file when it cannot be read, a row is malformed (its line), max_tokens is below
// min_tokens, or no row has min_tokens tokens (the longest row's count named).
PromptSet ReadPromptSet(const std::filesystem::path& file, const text::Tokenizer& tokenizer,
                        const PromptSetOptions& options);

// What a run over the prompts reports ({"path", "sha256", "rows", "scored", "skipped_short",
// "min_tokens", "truncated", "shortest", "longest", "lengths" (each prompt's tokens),
// "tokens_sha256"}), and the results file's
// input entry ({"role", "kind": "prompts", "path", "sha256", "rows", "prompts",
// "tokens_sha256"}).
nlohmann::ordered_json PromptSetSummary(const PromptSet& prompts, int64_t min_tokens);
nlohmann::ordered_json DescribePromptsInput(const std::string& role, const PromptSet& prompts);

}  // namespace proctor
