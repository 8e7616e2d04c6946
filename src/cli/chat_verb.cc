// `proctor chat MODEL --messages FILE.json`: prints a conversation rendered with the model's chat
// template, exactly as transformers' apply_chat_template(tokenize=False) would.
#include <fmt/format.h>

#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

#include "cli/verbs.h"
#include "text/chat_template.h"
#include "util/error.h"
#include "util/file.h"

namespace proctor::cli {
namespace {

struct ChatFlags {
  std::string model;
  std::string messages_file;
  bool generation_prompt = false;
  std::string thinking;  // "", "on", "off"
  std::string tools_file;
  std::string template_file;
  std::string now;
  std::vector<std::string> vars;
};

nlohmann::ordered_json ReadJsonFile(const std::string& path, const char* what) {
  const std::string text = ReadFileToString(path);
  try {
    return nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    Fail("chat", "{} file '{}' is not valid JSON: {}", what, path, e.what());
  }
}

std::tm ParseNow(const std::string& text) {
  std::tm tm{};
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  const int n = std::sscanf(text.c_str(), "%d-%d-%d %d:%d:%d", &y, &mo, &d, &h, &mi, &s);
  if ((n != 3 && n != 6) || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 ||
      mi > 59 || s < 0 || s > 60) {
    Fail("chat", "--now '{}': expected 'YYYY-MM-DD' or 'YYYY-MM-DD HH:MM:SS'", text);
  }
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  return tm;
}

void RunChat(const ChatFlags& flags) {
  text::ChatOptions options;
  options.add_generation_prompt = flags.generation_prompt;
  if (flags.thinking == "on") options.enable_thinking = true;
  if (flags.thinking == "off") options.enable_thinking = false;
  if (!flags.tools_file.empty()) {
    options.tools = ReadJsonFile(flags.tools_file, "--tools");
    if (!options.tools.is_array()) {
      Fail("chat", "--tools file '{}' must hold a JSON array of tool schemas, got {}",
           flags.tools_file, std::string(options.tools.type_name()));
    }
  }
  if (!flags.now.empty()) options.now = ParseNow(flags.now);
  options.extra = nlohmann::ordered_json::object();
  for (const std::string& var : flags.vars) {
    const size_t eq = var.find('=');
    if (eq == std::string::npos || eq == 0) {
      Fail("chat", "--var '{}': expected NAME=JSON (e.g. date_string='\"26 Jul 2024\"')", var);
    }
    try {
      options.extra[var.substr(0, eq)] = nlohmann::ordered_json::parse(var.substr(eq + 1));
    } catch (const nlohmann::json::exception& e) {
      Fail("chat", "--var '{}': the value is not JSON: {}", var, e.what());
    }
  }
  const text::ChatConfig config =
      text::LoadChatConfig(flags.model, !flags.tools_file.empty(), flags.template_file);
  options.special_tokens = config.special_tokens;
  const nlohmann::ordered_json messages = ReadJsonFile(flags.messages_file, "--messages");
  const text::ChatTemplate chat =
      text::ChatTemplate::Parse(config.template_source, config.template_origin);
  const std::string rendered = chat.Render(messages, options);
  std::fwrite(rendered.data(), 1, rendered.size(), stdout);
  std::fflush(stdout);
}

}  // namespace

void RegisterChatVerb(CLI::App& app) {
  auto flags = std::make_shared<ChatFlags>();
  auto* verb = app.add_subcommand(
      "chat",
      "Print a conversation rendered with the model's chat template (as transformers' "
      "apply_chat_template renders it)");
  verb->add_option("model,--model", flags->model,
                   "Model folder (or a folder with tokenizer_config.json / chat_template.jinja)")
      ->required();
  verb->add_option("--messages", flags->messages_file,
                   "JSON file: an array of messages ({role, content, tool_calls, ...})")
      ->required();
  verb->add_flag("--generation-prompt", flags->generation_prompt,
                 "Append the assistant prompt (add_generation_prompt=True)");
  verb->add_option("--thinking", flags->thinking, "Pass enable_thinking=True (on) or False (off)")
      ->check(CLI::IsMember({"on", "off"}));
  verb->add_option("--tools", flags->tools_file, "JSON file: an array of tool (function) schemas");
  verb->add_option("--template", flags->template_file,
                   "Jinja file to use instead of the model's chat template");
  verb->add_option("--now", flags->now,
                   "Fix strftime_now's clock: 'YYYY-MM-DD' or 'YYYY-MM-DD HH:MM:SS' (default: "
                   "local time)");
  verb->add_option("--var", flags->vars,
                   "Extra template variable NAME=JSON (repeatable), like apply_chat_template's "
                   "keyword arguments");
  verb->callback([flags] { RunChat(*flags); });
}

}  // namespace proctor::cli
