// Text and chat rows -> one token stream: the front half shared by `proctor corpus` and
// `proctor ppl` (FORMATS.md section 4; docs/corpus.md says the same for users).
//
//   1. Rows (ReadTextRows): the input files in the order given. A .jsonl file is one row per
//      non-blank line: {"text": str} is a text row, {"messages": [...]} or {"prompt", "chosen"}
//      (also {"prompt", "completion"}, mlx_lm's completions layout) a chat row. Any other file
//      (.txt, .raw, ...) is ONE text row, its whole text: a document, as llama.cpp reads
//      wiki.test.raw (.json, .parquet, .arrow, .gz, .zst are refused).
//   2. Order: row k of the stream is row ShuffledIndices(n_rows, seed)[k] (mulberry32
//      Fisher-Yates, FORMATS.md section 5), the way mlx_lm takes dataset[perm[i]].
//   3. Tokens of a row, as mlx_lm's datasets make them:
//      - text row: Encode(text, add_special_tokens = true) (BOS where the tokenizer's
//        post-processor / GGUF add_bos says so), then EOS appended unless the ids already end
//        with it (TextDataset.process); a row whose text is "" is skipped;
//      - chat row: rendered with the model's chat template (add_generation_prompt false,
//        enable_thinking false, the row's "tools" if any) and encoded WITHOUT special tokens
//        (the rendered text already holds BOS when the template writes it); nothing appended.
//   4. The rows' tokens concatenated in stream order. With tokens_needed >= 0, rows stop being
//      taken once the stream holds that many tokens (mlx_lm's `while len(data) < num_tokens`).
#pragma once

#include <cstdint>
#include <ctime>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/tokenizer/tokenizer.h"

namespace proctor {

struct TextRow {
  enum class Kind { kText, kChat };
  Kind kind = Kind::kText;
  std::string text;                 // kText
  nlohmann::ordered_json messages;  // kChat: the message array the template sees
  nlohmann::ordered_json tools;     // kChat: the row's "tools" (null when absent)
  int32_t source = 0;               // index into TextRows::sources
  int64_t line = 0;                 // 1-based line in a .jsonl file; 0 for a .txt file
};

struct TextSource {
  std::filesystem::path path;
  std::string sha256;  // of the file's bytes
  int64_t bytes = 0;
  int64_t rows = 0;
};

struct TextRows {
  std::vector<TextRow> rows;
  std::vector<TextSource> sources;
  int64_t chat_rows = 0;
};

// Reads the rows of every input (see the file comment). Error("[corpus] ...") naming the file
// (and line) for an unreadable file, a refused extension, a line that is not a JSON object, or
// an object with none of the layouts above (or a field of the wrong type).
TextRows ReadTextRows(const std::vector<std::filesystem::path>& inputs);

struct TokenStreamOptions {
  uint32_t seed = 123;
  bool shuffle = true;         // false: the rows in the order read (step 2 skipped)
  int64_t tokens_needed = -1;  // stop once the stream holds this many tokens; -1: every row
  // Where chat rows get their template: a model folder (tokenizer_config.json chat_template or
  // chat_template.jinja), or chat_template_file when set. Only read when a chat row is used.
  std::filesystem::path chat_model_dir{};
  std::filesystem::path chat_template_file{};
  std::optional<std::tm> chat_now{};  // strftime_now's clock in templates; unset: now
  bool quiet = false;                 // no progress on stderr
};

struct TokenStream {
  std::vector<int32_t> tokens;
  int64_t rows_used = 0;           // rows taken (in stream order) before the stream was long enough
  int64_t rows_skipped_empty = 0;  // text rows with text "" among those
  int64_t chat_rows_used = 0;
  std::string chat_template_origin;  // "" when no chat row was used
  std::string chat_template_sha256;  // of the template source; "" likewise
  // Per row taken, in stream order: its index in TextRows::rows and how many tokens it gave.
  std::vector<int64_t> row_index;
  std::vector<int64_t> row_tokens;
};

// Steps 2-4 above. Rows are tokenized in parallel batches (ThreadPool::Global()); the result
// does not depend on the thread count.
TokenStream BuildTokenStream(const TextRows& rows, const text::Tokenizer& tokenizer,
                             const TokenStreamOptions& options);

}  // namespace proctor
