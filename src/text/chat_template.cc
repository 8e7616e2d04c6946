#include "text/chat_template.h"

#include <fmt/format.h>

#include <map>
#include <mutex>

#include "formats/gguf.h"
#include "util/error.h"
#include "util/file.h"

namespace proctor::text {
namespace {

using Json = nlohmann::ordered_json;

// transformers' SPECIAL_TOKENS_ATTRIBUTES, in its order.
constexpr const char* kSpecialTokenNames[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                              "pad_token", "cls_token", "mask_token"};

// A token is a string or an AddedToken object {"content": ...}; null means unset.
std::optional<std::string> TokenText(const Json& value, const std::string& what) {
  if (value.is_null()) return std::nullopt;
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object() && value.contains("content") && value["content"].is_string()) {
    return value["content"].get<std::string>();
  }
  Fail("chat", "tokenizer_config.json: {} must be a string or an object with \"content\", got {}",
       what, value.dump());
}

Json ParseJson(std::string_view text, const std::string& what) {
  try {
    return Json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    Fail("chat", "{} is not valid JSON: {}", what, e.what());
  }
}

}  // namespace

Json SpecialTokensFromConfig(const Json& config) {
  Json tokens = Json::object();
  for (const char* name : kSpecialTokenNames) {
    if (!config.contains(name)) continue;
    if (auto text = TokenText(config[name], name)) tokens[name] = *text;
  }
  if (config.contains("additional_special_tokens")) {
    const Json& list = config["additional_special_tokens"];
    if (!list.is_array()) {
      Fail("chat", "tokenizer_config.json: additional_special_tokens must be a list, got {}",
           list.dump());
    }
    Json out = Json::array();
    for (const Json& t : list) {
      if (auto text = TokenText(t, "additional_special_tokens[]")) out.push_back(*text);
    }
    if (!out.empty()) tokens["additional_special_tokens"] = out;
  }
  return tokens;
}

ChatTemplate ChatTemplate::Parse(std::string_view source, std::string name) {
  ChatTemplate t;
  t.template_ =
      std::make_shared<const jinja::Template>(jinja::Template::Parse(source, std::move(name)));
  return t;
}

std::string ChatTemplate::Render(const Json& messages, const ChatOptions& options) const {
  if (!messages.is_array()) {
    Fail("chat", "messages must be a JSON array of message objects, got {}",
         std::string(messages.type_name()));
  }
  try {
    return RenderInContext(messages, options);
  } catch (const jinja::EvalFailure& f) {
    throw jinja::TemplateError(f.kind, template_->name(), 0, f.message);
  }
}

std::string ChatTemplate::RenderInContext(const Json& messages, const ChatOptions& options) const {
  jinja::Dict context;
  // The order transformers passes them: messages, tools, documents, add_generation_prompt,
  // then special tokens, then keyword arguments (a later one replaces an earlier one).
  context.Set("messages", jinja::FromJson(messages));
  context.Set("tools", jinja::FromJson(options.tools));
  context.Set("documents", jinja::FromJson(options.documents));
  context.Set("add_generation_prompt", jinja::Value(options.add_generation_prompt));
  if (!options.special_tokens.is_null()) {
    if (!options.special_tokens.is_object()) Fail("chat", "special tokens must be a JSON object");
    for (const auto& [k, v] : options.special_tokens.items()) context.Set(k, jinja::FromJson(v));
  }
  if (options.enable_thinking)
    context.Set("enable_thinking", jinja::Value(*options.enable_thinking));
  if (!options.extra.is_null()) {
    if (!options.extra.is_object()) Fail("chat", "extra template variables must be a JSON object");
    for (const auto& [k, v] : options.extra.items()) context.Set(k, jinja::FromJson(v));
  }
  jinja::RenderOptions render;
  render.limits = options.limits;
  render.fixed_now = options.now;
  return template_->Render(context, render);
}

std::string ChatTemplate::RenderMessagesJson(std::string_view messages_json,
                                             const ChatOptions& options) const {
  return Render(ParseJson(messages_json, "messages"), options);
}

std::string RenderChat(const ChatTemplate& chat_template, std::string_view messages_json,
                       const ChatOptions& options) {
  return chat_template.RenderMessagesJson(messages_json, options);
}

std::string RenderChat(std::string_view template_source, std::string_view messages_json,
                       const ChatOptions& options) {
  static std::mutex mu;
  static std::map<std::string, ChatTemplate, std::less<>> cache;  // a process sees few templates
  ChatTemplate parsed;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(template_source);
    if (it == cache.end()) {
      if (cache.size() >= 64) cache.clear();
      it = cache.emplace(std::string(template_source), ChatTemplate::Parse(template_source)).first;
    }
    parsed = it->second;
  }
  return parsed.RenderMessagesJson(messages_json, options);
}

namespace {

// A model folder: tokenizer_config.json's chat_template, else chat_template.jinja.
std::optional<ChatConfig> FolderChatConfig(const std::filesystem::path& model_dir,
                                           bool want_tool_use,
                                           const std::filesystem::path& template_file) {
  ChatConfig out;
  const std::filesystem::path config_path = model_dir / "tokenizer_config.json";
  Json config = Json::object();
  const bool has_config = std::filesystem::exists(config_path);
  if (has_config) {
    config = ParseJson(ReadFileToString(config_path), config_path.string());
    if (!config.is_object()) Fail("chat", "{}: expected a JSON object", config_path.string());
    out.special_tokens = SpecialTokensFromConfig(config);
  } else {
    out.special_tokens = Json::object();
  }
  if (!template_file.empty()) {
    out.template_source = ReadFileToString(template_file);
    out.template_origin = template_file.string();
    return out;
  }
  if (has_config && config.contains("chat_template") && !config["chat_template"].is_null()) {
    const Json& ct = config["chat_template"];
    if (ct.is_string()) {
      out.template_source = ct.get<std::string>();
      out.template_origin = config_path.string() + " chat_template";
      return out;
    }
    if (!ct.is_array()) {
      Fail("chat", "{}: chat_template must be a string or a list of {{name, template}}, got {}",
           config_path.string(), std::string(ct.type_name()));
    }
    std::map<std::string, std::string> named;
    std::string names;
    for (const Json& entry : ct) {
      if (!entry.is_object() || !entry.contains("name") || !entry.contains("template") ||
          !entry["name"].is_string() || !entry["template"].is_string()) {
        Fail("chat",
             "{}: each chat_template entry must be {{\"name\": str, \"template\": str}}, got {}",
             config_path.string(), entry.dump());
      }
      named[entry["name"].get<std::string>()] = entry["template"].get<std::string>();
      if (!names.empty()) names += ", ";
      names += entry["name"].get<std::string>();
    }
    const std::string pick = (want_tool_use && named.count("tool_use")) ? "tool_use" : "default";
    auto it = named.find(pick);
    if (it == named.end()) {
      Fail("chat", "{}: chat_template has no template named '{}' (it has: {})",
           config_path.string(), pick, names);
    }
    out.template_source = it->second;
    out.template_origin = fmt::format("{} chat_template '{}'", config_path.string(), pick);
    return out;
  }
  const std::filesystem::path jinja_path = model_dir / "chat_template.jinja";
  if (std::filesystem::exists(jinja_path)) {
    out.template_source = ReadFileToString(jinja_path);
    out.template_origin = jinja_path.string();
    return out;
  }
  return std::nullopt;
}

// A .gguf file: tokenizer.chat_template, and the BOS/EOS token texts of its vocabulary.
std::optional<ChatConfig> GgufChatConfig(const std::filesystem::path& path,
                                         const std::filesystem::path& template_file) {
  const std::shared_ptr<GgufFile> gguf = GgufFile::Open(path);
  ChatConfig out;
  out.special_tokens = Json::object();
  if (const GgufValue* tokens = gguf->Find("tokenizer.ggml.tokens");
      tokens != nullptr && tokens->is_array() && tokens->array_type() == GgufType::kString) {
    const std::span<const std::string_view> texts = tokens->Strings();
    const std::pair<const char*, const char*> ids[] = {
        {"bos_token", "tokenizer.ggml.bos_token_id"}, {"eos_token", "tokenizer.ggml.eos_token_id"}};
    for (const auto& [name, key] : ids) {
      const std::optional<int64_t> id = gguf->FindInt(key);
      if (id && *id >= 0 && static_cast<size_t>(*id) < texts.size()) {
        out.special_tokens[name] = std::string(texts[static_cast<size_t>(*id)]);
      }
    }
  }
  if (!template_file.empty()) {
    out.template_source = ReadFileToString(template_file);
    out.template_origin = template_file.string();
    return out;
  }
  const std::optional<std::string_view> source = gguf->FindString("tokenizer.chat_template");
  if (!source) return std::nullopt;
  out.template_source = std::string(*source);
  out.template_origin = path.string() + " tokenizer.chat_template";
  return out;
}

bool IsGgufFile(const std::filesystem::path& path) {
  return std::filesystem::is_regular_file(path) && path.extension() == ".gguf";
}

}  // namespace

std::optional<ChatConfig> FindChatConfig(const std::filesystem::path& model, bool want_tool_use,
                                         const std::filesystem::path& template_file) {
  if (IsGgufFile(model)) return GgufChatConfig(model, template_file);
  return FolderChatConfig(model, want_tool_use, template_file);
}

ChatConfig LoadChatConfig(const std::filesystem::path& model, bool want_tool_use,
                          const std::filesystem::path& template_file) {
  if (std::optional<ChatConfig> config = FindChatConfig(model, want_tool_use, template_file)) {
    return *std::move(config);
  }
  if (IsGgufFile(model)) {
    Fail("chat",
         "no chat template in '{}': it has no tokenizer.chat_template (pass --template "
         "FILE)",
         model.string());
  }
  Fail("chat",
       "no chat template in '{}': expected a chat_template in tokenizer_config.json or a "
       "chat_template.jinja file (or pass --template FILE)",
       model.string());
}

}  // namespace proctor::text
