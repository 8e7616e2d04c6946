#include "eval/runners/prompt_set.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "eval/runners/token_stream.h"
#include "util/error.h"
#include "util/sha256.h"

namespace proctor {

std::span<const int32_t> PromptSet::Prompt(int64_t i) const {
  CHECK(i >= 0 && i < size());
  const auto begin = static_cast<size_t>(starts[static_cast<size_t>(i)]);
  const auto end = static_cast<size_t>(starts[static_cast<size_t>(i) + 1]);
  return std::span<const int32_t>(tokens).subspan(begin, end - begin);
}

int64_t PromptSet::shortest() const {
  int64_t n = size() > 0 ? std::numeric_limits<int64_t>::max() : 0;
  for (int64_t i = 0; i < size(); ++i) n = std::min(n, static_cast<int64_t>(Prompt(i).size()));
  return n;
}

int64_t PromptSet::longest() const {
  int64_t n = 0;
  for (int64_t i = 0; i < size(); ++i) n = std::max(n, static_cast<int64_t>(Prompt(i).size()));
  return n;
}

PromptSet ReadPromptSet(const std::filesystem::path& file, const text::Tokenizer& tokenizer,
                        const PromptSetOptions& options) {
  const char* component = options.component;
  if (options.max_tokens < options.min_tokens) {
    Fail(component,
         "--seq {} keeps fewer tokens than the {} each prompt needs here (--decode-steps + 2)",
         options.max_tokens, options.min_tokens);
  }
  if (std::filesystem::is_directory(file)) {
    Fail(component, "--prompts '{}' is a directory: give a .jsonl or text file", file.string());
  }
  const TextRows rows = ReadTextRows({file});
  const TokenStream stream = BuildTokenStream(
      rows, tokenizer,
      {.shuffle = false, .chat_model_dir = options.chat_model_dir, .quiet = options.quiet});
  PromptSet set;
  set.path = file;
  set.sha256 = rows.sources.front().sha256;
  set.rows = static_cast<int64_t>(rows.rows.size());
  set.starts.push_back(0);
  int64_t offset = 0, longest_row = 0;
  for (size_t r = 0; r < stream.row_index.size(); ++r) {
    const int64_t length = stream.row_tokens[r];
    const int64_t begin = offset;
    offset += length;
    longest_row = std::max(longest_row, length);
    if (options.max_prompts > 0 && set.size() == options.max_prompts) continue;
    if (length < options.min_tokens) {
      ++set.skipped_short;
      continue;
    }
    const int64_t kept = std::min(length, options.max_tokens);
    set.truncated += kept < length ? 1 : 0;
    set.tokens.insert(set.tokens.end(), stream.tokens.begin() + begin,
                      stream.tokens.begin() + begin + kept);
    set.starts.push_back(static_cast<int64_t>(set.tokens.size()));
    set.lines.push_back(rows.rows[static_cast<size_t>(stream.row_index[r])].line);
  }
  if (set.size() == 0) {
    Fail(component,
         "--prompts '{}': no prompt has the {} tokens needed (its {} row(s) give at most {})",
         file.string(), options.min_tokens, set.rows, longest_row);
  }
  Sha256 digest;
  for (int64_t i = 0; i < set.size(); ++i) {
    const std::span<const int32_t> prompt = set.Prompt(i);
    const auto length = static_cast<uint32_t>(prompt.size());
    uint8_t le[4];
    std::memcpy(le, &length, 4);  // x86: little-endian
    digest.Update(std::span<const uint8_t>(le, 4));
    digest.Update(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(prompt.data()),
                                           prompt.size_bytes()));
  }
  set.tokens_sha256 = digest.HexDigest();
  return set;
}

nlohmann::ordered_json PromptSetSummary(const PromptSet& prompts, int64_t min_tokens) {
  std::vector<int64_t> lengths;
  for (int64_t i = 0; i < prompts.size(); ++i) {
    lengths.push_back(static_cast<int64_t>(prompts.Prompt(i).size()));
  }
  return {{"path", prompts.path.string()},
          {"sha256", prompts.sha256},
          {"rows", prompts.rows},
          {"scored", prompts.size()},
          {"skipped_short", prompts.skipped_short},
          {"min_tokens", min_tokens},
          {"truncated", prompts.truncated},
          {"shortest", prompts.shortest()},
          {"longest", prompts.longest()},
          {"lengths", lengths},
          {"tokens_sha256", prompts.tokens_sha256}};
}

nlohmann::ordered_json DescribePromptsInput(const std::string& role, const PromptSet& prompts) {
  return {{"role", role},
          {"kind", "prompts"},
          {"path", prompts.path.string()},
          {"sha256", prompts.sha256},
          {"rows", prompts.rows},
          {"prompts", prompts.size()},
          {"tokens_sha256", prompts.tokens_sha256}};
}

}  // namespace proctor
