// Chat templates rendered exactly as Hugging Face transformers renders them
// (tokenizer.apply_chat_template(messages, tokenize=False, ...)):
//   - the variables: messages, tools (None when not given), documents (None),
//   add_generation_prompt,
//     the special tokens of tokenizer_config.json (bos_token, eos_token, ...: only those set), and
//     any extra keyword arguments (enable_thinking, date_string, ...);
//   - the globals raise_exception(message) and strftime_now(format);
//   - Jinja2 with trim_blocks, lstrip_blocks, loop controls and transformers' tojson.
// A rendered chat already contains BOS when the template writes it: tokenize it without adding
// special tokens again.
//
//   auto chat = text::ChatTemplate::Parse(source);       // parse once
//   std::string prompt = chat.RenderMessagesJson(messages_json, {.add_generation_prompt = true});
#pragma once

#include <ctime>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "text/jinja/template.h"

namespace proctor::text {

struct ChatOptions {
  bool add_generation_prompt = false;
  std::optional<bool> enable_thinking;    // passed only when set (templates test `is defined`)
  nlohmann::ordered_json tools;           // null: no tools (the template sees None)
  nlohmann::ordered_json documents;       // null: no documents
  nlohmann::ordered_json extra;           // object: more template variables (kwargs)
  nlohmann::ordered_json special_tokens;  // object: bos_token, eos_token, ... (from the config)
  std::optional<std::tm> now;             // strftime_now's clock; unset: local time now
  jinja::RenderLimits limits;
};

class ChatTemplate {
 public:
  // Throws jinja::TemplateError (a proctor::Error) naming the line of a syntax error.
  static ChatTemplate Parse(std::string_view source, std::string name = "chat_template");

  // messages: a JSON array of message objects ({role, content, tool_calls, ...}).
  std::string Render(const nlohmann::ordered_json& messages, const ChatOptions& options) const;
  // The same from JSON text (parse errors name the messages).
  std::string RenderMessagesJson(std::string_view messages_json, const ChatOptions& options) const;

 private:
  std::string RenderInContext(const nlohmann::ordered_json& messages,
                              const ChatOptions& options) const;
  std::shared_ptr<const jinja::Template> template_;
};

// The API the corpus code uses. The string overload parses the template (cached by content, so
// each distinct template is parsed once per process).
std::string RenderChat(const ChatTemplate& chat_template, std::string_view messages_json,
                       const ChatOptions& options);
std::string RenderChat(std::string_view template_source, std::string_view messages_json,
                       const ChatOptions& options);

// What a model folder says about chat rendering.
struct ChatConfig {
  std::string template_source;
  std::string template_origin;            // where the template came from, for messages
  nlohmann::ordered_json special_tokens;  // bos_token, eos_token, ...: strings (lists for
                                          // additional_special_tokens); unset ones omitted
};

// A model folder: MODEL/tokenizer_config.json's chat_template (a string, or a list of {name,
// template}: "tool_use" when want_tool_use and present, else "default"), else
// MODEL/chat_template.jinja. A .gguf file: its tokenizer.chat_template, with bos_token/eos_token
// from its vocabulary. template_file (if non-empty) overrides the template. Special tokens may be
// strings or {content: ...}. Nullopt when the model has no template; Error for a malformed one.
std::optional<ChatConfig> FindChatConfig(const std::filesystem::path& model, bool want_tool_use,
                                         const std::filesystem::path& template_file = {});
// FindChatConfig, with an Error naming the model when it has no template.
ChatConfig LoadChatConfig(const std::filesystem::path& model, bool want_tool_use,
                          const std::filesystem::path& template_file = {});

// The special tokens transformers passes to templates, from a parsed tokenizer_config.json.
nlohmann::ordered_json SpecialTokensFromConfig(const nlohmann::ordered_json& tokenizer_config);

}  // namespace proctor::text
