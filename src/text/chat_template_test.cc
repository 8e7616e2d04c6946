// Tests of the HF conventions around chat templates: reading tokenizer_config.json (template
// strings and lists, tool_use, chat_template.jinja, special tokens as strings or {content}),
// the variables a template sees, and `proctor chat` end to end.
#include "text/chat_template.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "util/file.h"
#include "util/testing_oracles.h"

namespace proctor::text {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

class TempDir {
 public:
  TempDir() {
    path_ =
        fs::temp_directory_path() / fmt::format("proctor-chat-test-{}-{}", ::getpid(), counter_++);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }
  fs::path Write(const std::string& name, const std::string& text) const {
    WriteFileAtomic(path_ / name, text);
    return path_ / name;
  }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

std::string ErrorOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ChatConfig, StringTemplateAndSpecialTokens) {
  TempDir dir;
  dir.Write("tokenizer_config.json", R"({
    "bos_token": {"__type": "AddedToken", "content": "<s>", "lstrip": false},
    "eos_token": "</s>", "unk_token": null, "pad_token": "<pad>",
    "additional_special_tokens": ["<a>", {"content": "<b>"}],
    "chat_template": "{{ bos_token }}{{ messages[0].content }}{{ eos_token }}"})");
  const ChatConfig config = LoadChatConfig(dir.path(), false);
  EXPECT_EQ(config.template_source, "{{ bos_token }}{{ messages[0].content }}{{ eos_token }}");
  EXPECT_EQ(config.special_tokens.dump(),
            R"({"bos_token":"<s>","eos_token":"</s>","pad_token":"<pad>",)"
            R"("additional_special_tokens":["<a>","<b>"]})");
  ChatOptions options;
  options.special_tokens = config.special_tokens;
  EXPECT_EQ(ChatTemplate::Parse(config.template_source)
                .RenderMessagesJson(R"([{"role":"user","content":"hi"}])", options),
            "<s>hi</s>");
}

TEST(ChatConfig, TemplateListPicksDefaultOrToolUse) {
  TempDir dir;
  dir.Write("tokenizer_config.json", R"({"chat_template": [
    {"name": "default", "template": "D"}, {"name": "tool_use", "template": "T"}]})");
  EXPECT_EQ(LoadChatConfig(dir.path(), false).template_source, "D");
  EXPECT_EQ(LoadChatConfig(dir.path(), true).template_source, "T");
  dir.Write("tokenizer_config.json", R"({"chat_template": [{"name": "rag", "template": "R"}]})");
  EXPECT_NE(ErrorOf([&] {
              LoadChatConfig(dir.path(), false);
            }).find("has no template named 'default' (it has: rag)"),
            std::string::npos);
  // Without a tool_use entry, tools still use the default template.
  dir.Write("tokenizer_config.json",
            R"({"chat_template": [{"name": "default", "template": "D"}]})");
  EXPECT_EQ(LoadChatConfig(dir.path(), true).template_source, "D");
}

TEST(ChatConfig, JinjaFileBesideAndOverride) {
  TempDir dir;
  dir.Write("tokenizer_config.json", R"({"eos_token": "</s>"})");
  EXPECT_NE(ErrorOf([&] { LoadChatConfig(dir.path(), false); }).find("no chat template in"),
            std::string::npos);
  dir.Write("chat_template.jinja", "J{{ eos_token }}");
  EXPECT_EQ(LoadChatConfig(dir.path(), false).template_source, "J{{ eos_token }}");
  const fs::path other = dir.Write("other.jinja", "O");
  EXPECT_EQ(LoadChatConfig(dir.path(), false, other).template_source, "O");
  dir.Write("tokenizer_config.json", R"({"bos_token": 5})");
  EXPECT_NE(ErrorOf([&] { LoadChatConfig(dir.path(), false); }).find("bos_token must be a string"),
            std::string::npos);
}

TEST(ChatTemplate, VariablesAsTransformersPassesThem) {
  const ChatTemplate t = ChatTemplate::Parse(
      "{{ tools is none }},{{ documents is none }},{{ add_generation_prompt }},"
      "{{ enable_thinking is defined }},{{ bos_token is defined }},{{ x }}");
  ChatOptions options;
  EXPECT_EQ(t.RenderMessagesJson("[]", options), "True,True,False,False,False,");
  options.add_generation_prompt = true;
  options.enable_thinking = false;
  options.tools = Json::parse(R"([{"type": "function"}])");
  options.extra = Json::parse(R"({"x": [1, "a"]})");
  options.special_tokens = Json::parse(R"({"bos_token": "<s>"})");
  EXPECT_EQ(t.RenderMessagesJson("[]", options), "False,True,True,True,True,[1, 'a']");
  EXPECT_NE(ErrorOf([&] {
              t.RenderMessagesJson(R"({"role": "user"})", options);
            }).find("messages must be a JSON array"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { t.RenderMessagesJson("[", options); }).find("messages is not valid JSON"),
            std::string::npos);
}

TEST(ChatTemplate, RenderChatParsesEachTemplateOnce) {
  const std::string source = "{% for m in messages %}[{{ m.role }}]{% endfor %}";
  ChatOptions options;
  EXPECT_EQ(RenderChat(source, R"([{"role":"a"},{"role":"b"}])", options), "[a][b]");
  EXPECT_EQ(RenderChat(source, R"([{"role":"c"}])", options), "[c]");
  EXPECT_EQ(RenderChat(ChatTemplate::Parse(source), R"([])", options), "");
}

// ---- proctor chat ---------------------------------------------------------------------------

struct RunResult {
  int status;
  std::string out;
};

// `limits` is shell run first in the same shell (ulimit, timeout) to bound the run.
RunResult RunProctor(const std::string& args, const std::string& limits = "") {
  const std::string command = fmt::format("{} '{}' {} 2>&1", limits, PROCTOR_BIN, args);
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe.get())) > 0) out.append(buf, n);
  const int status = pclose(pipe.release());
  return {WEXITSTATUS(status), out};
}

TEST(ChatVerb, PrintsTheRenderedConversation) {
  if (!fs::exists(PROCTOR_BIN)) GTEST_SKIP() << "proctor executable not built: " << PROCTOR_BIN;
  TempDir dir;
  dir.Write("tokenizer_config.json", R"({"bos_token": {"content": "<s>"}, "chat_template": [
    {"name": "default", "template": "{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content }}\n{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}{% if enable_thinking is defined %}think={{ enable_thinking }}{% endif %}"},
    {"name": "tool_use", "template": "tools={{ tools|map(attribute='function.name')|join(',') }} {{ strftime_now('%d %b %Y') }} {{ date_string }}"}]})");
  dir.Write("messages.json",
            R"([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}])");
  dir.Write(
      "tools.json",
      R"([{"type": "function", "function": {"name": "f"}}, {"type": "function", "function": {"name": "g"}}])");
  const std::string base = fmt::format("chat '{}' --messages '{}'", dir.path().string(),
                                       (dir.path() / "messages.json").string());
  RunResult r = RunProctor(base);
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out, "<s><user>Hi\n<assistant>Hello\n");
  r = RunProctor(base + " --generation-prompt --thinking off");
  EXPECT_EQ(r.out, "<s><user>Hi\n<assistant>Hello\n<assistant>think=False");
  r = RunProctor(fmt::format("{} --tools '{}' --now '2024-07-26' --var 'date_string=\"today\"'",
                             base, (dir.path() / "tools.json").string()));
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out, "tools=f,g 26 Jul 2024 today");
  const fs::path bad = dir.Write("bad.jinja", "ok\n{{ raise_exception('roles must alternate') }}");
  r = RunProctor(base + fmt::format(" --template '{}'", bad.string()));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("roles must alternate"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(":2:"), std::string::npos) << r.out;
  r = RunProctor(base + " --thinking maybe");
  EXPECT_NE(r.status, 0);
}

// #18 classes 1 and 3 from outside: hostile templates end in exit status 1 with the template's
// name and the bound named, in seconds, under a 1 GiB address-space limit (each once crashed
// with a stack overflow, or took 2-4 GB, or ran for more than 30 s).
TEST(ChatVerb, HostileTemplatesEndInAClearErrorWithinBoundedTimeAndMemory) {
  if (!fs::exists(PROCTOR_BIN)) GTEST_SKIP() << "proctor executable not built: " << PROCTOR_BIN;
  TempDir dir;
  dir.Write("m.json", R"([{"role": "user", "content": "hi"}])");
  const auto repeat = [](const std::string& text, int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s += text;
    return s;
  };
  const struct {
    std::string source;
    std::string message;
  } cases[] = {
      {"{{ 1" + repeat("+1", 300000) + " }}", "an expression nests deeper than 500 levels"},
      {"{{ " + repeat("not ", 130000) + "1 }}", "template nesting is deeper than 200 levels"},
      {"{% set x = ' '|center(10**9) %}{{ x|length }}", "center's result would hold 1000000000"},
      {"{{ ' '|center(2**62) }}", "center's result would hold 4611686018427387904 bytes"},
      {"{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}"
       "{% endfor %}{{ ns.s|length }}",
       "a string joined with ~ would hold 134217728 bytes"},
      {"{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = ns.l + [i] %}"
       "{% endfor %}",
       "the template built more than 1073741824 bytes"},
      {"{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = [ns.l] %}"
       "{% endfor %}{{ ns.l }}",
       "a list or dict would nest deeper than 512 levels"},
  };
  for (const auto& c : cases) {
    const fs::path path = dir.Write("t.jinja", c.source);
    const auto start = std::chrono::steady_clock::now();
    const RunResult r =
        RunProctor(fmt::format("chat '{}' --messages '{}' --template '{}'", dir.path().string(),
                               (dir.path() / "m.json").string(), path.string()),
                   "ulimit -v 1048576; timeout 30");
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(r.status, 1) << c.source.substr(0, 60) << ": " << r.out;
    EXPECT_NE(r.out.find("t.jinja:1: " + c.message), std::string::npos)
        << c.source.substr(0, 60) << ": " << r.out;
    EXPECT_LT(seconds, 5) << c.source.substr(0, 60);
  }
}

TEST(ChatVerb, Qwen3ThinkingOffEndsWithEmptyThinkBlock) {
  const auto& tokenizers = proctor::testing::Oracles("tokenizers");
  if (!tokenizers.problem.empty()) GTEST_SKIP() << "oracle unavailable: " << tokenizers.problem;
  const fs::path qwen = proctor::testing::RealTokenizerDir("qwen3");
  if (!fs::exists(PROCTOR_BIN)) GTEST_SKIP() << PROCTOR_BIN << " is not built";
  TempDir dir;
  dir.Write("m.json", R"([{"role": "user", "content": "Hi"}])");
  const RunResult r =
      RunProctor(fmt::format("chat '{}' --messages '{}' --generation-prompt --thinking off",
                             qwen.string(), (dir.path() / "m.json").string()));
  EXPECT_EQ(r.out,
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
}

}  // namespace
}  // namespace proctor::text

namespace proctor::text {
namespace {

// 30,000 nested lists in a messages file (60 KB) once overflowed the stack (issue 18, class 2):
// now a clear error; nesting up to the limit still renders.
TEST(ChatTemplate, DeeplyNestedMessagesAreRefusedNotACrash) {
  const ChatTemplate chat = ChatTemplate::Parse("{{ messages[0].content | length }}");
  const auto nested = [](int depth) {
    std::string text = "[{\"role\": \"user\", \"content\": ";
    text +=
        std::string(static_cast<size_t>(depth), '[') + std::string(static_cast<size_t>(depth), ']');
    return nlohmann::ordered_json::parse(text + "}]");
  };
  EXPECT_NE(ErrorOf([&] {
              chat.Render(nested(30000), ChatOptions{});
            }).find("nests deeper than 256 levels"),
            std::string::npos);
  EXPECT_EQ(chat.Render(nested(250), ChatOptions{}), "1");
}

}  // namespace
}  // namespace proctor::text
