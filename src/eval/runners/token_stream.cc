#include "eval/runners/token_stream.h"

#include <algorithm>
#include <memory>
#include <numeric>

#include <fmt/format.h>

#include "eval/scoring/sample_indices.h"
#include "text/chat_template.h"
#include "util/error.h"
#include "util/file.h"
#include "util/progress.h"
#include "util/sha256.h"
#include "util/thread_pool.h"

namespace proctor {
namespace {

using Json = nlohmann::ordered_json;
constexpr const char* kComponent = "corpus";

bool IsBlank(std::string_view line) {
  return std::all_of(line.begin(), line.end(),
                     [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; });
}

// A {"prompt", "chosen"} (or "completion") pair as messages: a string prompt is one user turn,
// a string answer one assistant turn; lists of messages are taken as they are.
Json PairToMessages(const Json& prompt, const Json& answer, const std::string& where,
                    const char* answer_key) {
  Json messages = Json::array();
  if (prompt.is_string()) {
    messages.push_back(Json{{"role", "user"}, {"content", prompt}});
  } else if (prompt.is_array()) {
    for (const Json& m : prompt) messages.push_back(m);
  } else {
    Fail(kComponent, "{}: \"prompt\" must be a string or a list of messages, found {}", where,
         std::string(prompt.type_name()));
  }
  if (answer.is_string()) {
    messages.push_back(Json{{"role", "assistant"}, {"content", answer}});
  } else if (answer.is_array()) {
    for (const Json& m : answer) messages.push_back(m);
  } else {
    Fail(kComponent, "{}: \"{}\" must be a string or a list of messages, found {}", where,
         answer_key, std::string(answer.type_name()));
  }
  return messages;
}

TextRow ParseJsonlRow(std::string_view line, const std::string& where) {
  Json j = Json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) Fail(kComponent, "{}: not valid JSON", where);
  if (!j.is_object()) {
    Fail(kComponent, "{}: expected a JSON object per line, found {}", where,
         std::string(j.type_name()));
  }
  TextRow row;
  if (j.contains("text")) {
    if (!j["text"].is_string()) {
      Fail(kComponent, "{}: \"text\" must be a string, found {}", where,
           std::string(j["text"].type_name()));
    }
    row.kind = TextRow::Kind::kText;
    row.text = j["text"].get<std::string>();
    return row;
  }
  row.kind = TextRow::Kind::kChat;
  if (j.contains("messages")) {
    if (!j["messages"].is_array() || j["messages"].empty()) {
      Fail(kComponent, "{}: \"messages\" must be a non-empty list of messages", where);
    }
    row.messages = j["messages"];
  } else if (j.contains("prompt") && j.contains("chosen")) {
    row.messages = PairToMessages(j["prompt"], j["chosen"], where, "chosen");
  } else if (j.contains("prompt") && j.contains("completion")) {
    row.messages = PairToMessages(j["prompt"], j["completion"], where, "completion");
  } else {
    std::string keys;
    for (const auto& [key, value] : j.items()) keys += (keys.empty() ? "" : ", ") + key;
    Fail(kComponent,
         "{}: a row needs \"text\", \"messages\", or \"prompt\" with \"chosen\" (or "
         "\"completion\"); this one has keys [{}]",
         where, keys);
  }
  for (const Json& m : row.messages) {
    if (!m.is_object() || !m.contains("role")) {
      Fail(kComponent, "{}: every message must be an object with a \"role\", found {}", where,
           m.dump());
    }
  }
  if (j.contains("tools") && !j["tools"].is_null()) row.tools = j["tools"];
  return row;
}

// The chat template, parsed once per tool-use choice and only when a chat row needs it.
class ChatRenderer {
 public:
  explicit ChatRenderer(const TokenStreamOptions& options) : options_(options) {}

  std::string Render(const TextRow& row) {
    const bool tool_use = !row.tools.is_null();
    auto& loaded = loaded_[tool_use ? 1 : 0];
    if (!loaded) {
      if (options_.chat_model_dir.empty() && options_.chat_template_file.empty()) {
        Fail(kComponent,
             "chat rows need a chat template, but no model folder or template file "
             "was given");
      }
      const text::ChatConfig config =
          text::LoadChatConfig(options_.chat_model_dir, tool_use, options_.chat_template_file);
      loaded = std::make_unique<Loaded>(Loaded{
          .config = config,
          .chat = text::ChatTemplate::Parse(config.template_source, config.template_origin)});
      origin_ = config.template_origin;
      sha256_ = Sha256Hex(std::string_view(config.template_source));
    }
    text::ChatOptions chat_options;
    chat_options.add_generation_prompt = false;
    chat_options.enable_thinking = false;
    chat_options.tools = row.tools;
    chat_options.special_tokens = loaded->config.special_tokens;
    chat_options.now = options_.chat_now;
    return loaded->chat.Render(row.messages, chat_options);
  }
  const std::string& origin() const { return origin_; }
  const std::string& sha256() const { return sha256_; }

 private:
  struct Loaded {
    text::ChatConfig config;
    text::ChatTemplate chat;
  };
  const TokenStreamOptions& options_;
  std::unique_ptr<Loaded> loaded_[2];
  std::string origin_;
  std::string sha256_;
};

}  // namespace

TextRows ReadTextRows(const std::vector<std::filesystem::path>& inputs) {
  if (inputs.empty()) Fail(kComponent, "no input files given");
  TextRows out;
  for (const auto& path : inputs) {
    const std::string ext = path.extension().string();
    if (ext == ".json" || ext == ".parquet" || ext == ".arrow" || ext == ".gz" || ext == ".zst") {
      Fail(kComponent,
           "'{}': a {} file cannot be read; give .jsonl (one JSON object per line) "
           "or plain text (.txt, .raw, ...: one document per file)",
           path.string(), ext);
    }
    if (!std::filesystem::is_regular_file(path)) {
      Fail(kComponent, "'{}' is not a readable file", path.string());
    }
    const std::string contents = ReadFileToString(path);
    TextSource source{.path = path,
                      .sha256 = Sha256Hex(std::string_view(contents)),
                      .bytes = static_cast<int64_t>(contents.size())};
    const auto source_index = static_cast<int32_t>(out.sources.size());
    const size_t rows_before = out.rows.size();
    if (ext != ".jsonl") {
      TextRow row;
      row.text = contents;
      row.source = source_index;
      out.rows.push_back(std::move(row));
    } else {
      int64_t line_number = 0;
      size_t begin = 0;
      while (begin < contents.size()) {
        size_t end = contents.find('\n', begin);
        if (end == std::string::npos) end = contents.size();
        const std::string_view line(contents.data() + begin, end - begin);
        ++line_number;
        begin = end + 1;
        if (IsBlank(line)) continue;
        TextRow row = ParseJsonlRow(line, fmt::format("'{}' line {}", path.string(), line_number));
        row.source = source_index;
        row.line = line_number;
        if (row.kind == TextRow::Kind::kChat) ++out.chat_rows;
        out.rows.push_back(std::move(row));
      }
    }
    source.rows = static_cast<int64_t>(out.rows.size() - rows_before);
    out.sources.push_back(std::move(source));
  }
  return out;
}

TokenStream BuildTokenStream(const TextRows& rows, const text::Tokenizer& tokenizer,
                             const TokenStreamOptions& options) {
  TokenStream out;
  const auto n_rows = static_cast<int64_t>(rows.rows.size());
  std::vector<int64_t> order(static_cast<size_t>(n_rows));
  if (options.shuffle) {
    order = ShuffledIndices(n_rows, options.seed);
  } else {
    std::iota(order.begin(), order.end(), int64_t{0});
  }
  const int32_t eos = tokenizer.EosId();
  ChatRenderer renderer(options);
  ThreadPool& pool = ThreadPool::Global();
  // Rows are rendered in order on this thread (templates are cheap) and encoded in parallel in
  // batches; a batch may encode rows past the stopping point, which are then dropped.
  const int64_t batch = std::max<int64_t>(16, 8 * pool.num_threads());
  Progress progress({.label = "tokenizing",
                     .unit = "rows",
                     .total = static_cast<uint64_t>(n_rows),
                     .mode = options.quiet ? Progress::Mode::kQuiet : Progress::Mode::kAuto});
  std::vector<std::string> texts;
  std::vector<std::vector<int32_t>> ids;
  std::vector<std::string> errors;  // per row of the batch: why it could not be tokenized
  bool done = options.tokens_needed == 0;
  for (int64_t first = 0; first < n_rows && !done; first += batch) {
    const int64_t count = std::min(batch, n_rows - first);
    const auto row_at = [&](int64_t k) -> const TextRow& {
      return rows.rows[static_cast<size_t>(order[static_cast<size_t>(first + k)])];
    };
    texts.assign(static_cast<size_t>(count), std::string());
    ids.assign(static_cast<size_t>(count), std::vector<int32_t>());
    errors.assign(static_cast<size_t>(count), std::string());
    for (int64_t k = 0; k < count; ++k) {
      if (row_at(k).kind != TextRow::Kind::kChat) continue;
      try {
        texts[k] = renderer.Render(row_at(k));
      } catch (const Error& e) {
        errors[k] = fmt::format("the chat template failed: {}", e.what());
      }
    }
    pool.ParallelFor(static_cast<size_t>(count), [&](size_t begin, size_t end, int) {
      for (size_t k = begin; k < end; ++k) {
        const TextRow& row = row_at(static_cast<int64_t>(k));
        if (!errors[k].empty()) continue;
        try {
          if (row.kind == TextRow::Kind::kChat) {
            ids[k] = tokenizer.Encode(texts[k], /*add_special_tokens=*/false);
          } else if (!row.text.empty()) {
            ids[k] = tokenizer.Encode(row.text, /*add_special_tokens=*/true);
            if (eos >= 0 && (ids[k].empty() || ids[k].back() != eos)) ids[k].push_back(eos);
          }
        } catch (const Error& e) {
          errors[k] = e.what();
        }
      }
    });
    // Rows are taken in stream order until the stream is long enough; an error in a row that
    // is never taken does not matter.
    for (int64_t k = 0; k < count && !done; ++k) {
      const TextRow& row = row_at(k);
      if (!errors[k].empty()) {
        const TextSource& source = rows.sources[static_cast<size_t>(row.source)];
        if (row.line > 0) {
          Fail(kComponent, "'{}' line {}: {}", source.path.string(), row.line, errors[k]);
        }
        Fail(kComponent, "'{}': {}", source.path.string(), errors[k]);
      }
      ++out.rows_used;
      if (row.kind == TextRow::Kind::kChat) ++out.chat_rows_used;
      if (row.kind == TextRow::Kind::kText && row.text.empty()) ++out.rows_skipped_empty;
      out.tokens.insert(out.tokens.end(), ids[k].begin(), ids[k].end());
      out.row_index.push_back(order[static_cast<size_t>(first + k)]);
      out.row_tokens.push_back(static_cast<int64_t>(ids[k].size()));
      done = options.tokens_needed >= 0 &&
             static_cast<int64_t>(out.tokens.size()) >= options.tokens_needed;
    }
    progress.Advance(static_cast<uint64_t>(count));
  }
  progress.Finish();
  if (out.chat_rows_used > 0) {
    out.chat_template_origin = renderer.origin();
    out.chat_template_sha256 = renderer.sha256();
  }
  return out;
}

}  // namespace proctor
