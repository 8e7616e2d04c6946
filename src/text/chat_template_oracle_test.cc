// Oracle test: every chat template (the shared fixtures and the real tokenizer_config.json files
// of ../shared/fixtures/tokenizers) over every conversation in testdata/chat/conversations.json,
// rendered by Python Jinja2 with transformers' settings (tools/chat_template_oracle.py, run by the
// oracle Python of tools/oracle/setup.sh: Jinja2 3.1.6) and by proctor; the texts must match byte
// for byte, and where Jinja2 fails proctor must fail too, with the same message for
// raise_exception and undefined values. Skips (with a message) when the oracle is absent.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <unistd.h>

#include "text/chat_template.h"
#include "util/file.h"
#include "util/testing_oracles.h"

namespace proctor::text {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

fs::path FixturesDir() {
  const char* env = std::getenv("PROCTOR_FIXTURES");
  return fs::path(env ? env : PROCTOR_FIXTURES_DEFAULT);
}

// Shows where two renderings first differ.
std::string DescribeMismatch(const std::string& want, const std::string& got) {
  size_t i = 0;
  while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
  const size_t from = i > 60 ? i - 60 : 0;
  auto excerpt = [&](const std::string& s) {
    return Json(s.substr(std::min(from, s.size()), 160)).dump();
  };
  return fmt::format(
      "first difference at byte {} (lengths: jinja2 {}, proctor {})\n  jinja2:  ...{}\n  "
      "proctor: ...{}\n  full jinja2:  {}\n  full proctor: {}",
      i, want.size(), got.size(), excerpt(want), excerpt(got), Json(want).dump(), Json(got).dump());
}

const char* KindForPythonError(const std::string& type) {
  if (type == "TemplateError") return "raised";
  if (type == "UndefinedError") return "undefined";
  if (type == "SecurityError") return "security";
  return "other";
}

bool KindMatches(const std::string& python_type, jinja::ErrorKind kind) {
  const std::string k = KindForPythonError(python_type);
  if (k == "raised") return kind == jinja::ErrorKind::kRaised;
  if (k == "undefined") return kind == jinja::ErrorKind::kUndefined;
  if (k == "security") return kind == jinja::ErrorKind::kSecurity;
  return kind == jinja::ErrorKind::kType;
}

TEST(ChatTemplateOracle, MatchesPythonJinja2WithTransformersSettings) {
  const std::string problem = proctor::testing::OraclesProblem({"python", "tokenizers"});
  if (!problem.empty()) GTEST_SKIP() << "oracle unavailable: " << problem;
  const fs::path source_dir = PROCTOR_SOURCE_DIR;
  const fs::path binary_dir = PROCTOR_BINARY_DIR;
  const fs::path fixtures = FixturesDir() / "chat-templates";
  const fs::path out = binary_dir / fmt::format("chat-oracle-{}.json", ::getpid());
  std::string command = fmt::format(
      "{} '{}' --conversations '{}' --out '{}'", proctor::testing::Oracles("python").Path("python"),
      (source_dir / "tools/chat_template_oracle.py").string(),
      (source_dir / "testdata/chat/conversations.json").string(), out.string());
  int template_sources = 0;
  if (fs::exists(fixtures)) {
    command += fmt::format(" --fixtures '{}'", fixtures.string());
    ++template_sources;
  } else {
    fmt::print("note: {} is absent; only the real tokenizer templates are checked\n",
               fixtures.string());
  }
  for (const char* name : {"qwen3", "llama3", "llama3_1", "gemma3", "llama2", "deepseek_v3"}) {
    const fs::path dir = proctor::testing::RealTokenizerDir(name);
    if (fs::exists(dir / "tokenizer_config.json")) {
      command += fmt::format(" --model '{}={}'", name, dir.string());
      ++template_sources;
    } else {
      fmt::print("note: {} is absent\n", (dir / "tokenizer_config.json").string());
    }
  }
  if (template_sources == 0) GTEST_SKIP() << "fixture absent: no chat templates under " << fixtures;
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  const Json oracle = Json::parse(ReadFileToString(out));
  fs::remove(out);

  std::map<std::string, Json> template_info;
  for (const Json& t : oracle["templates"]) template_info[t["name"].get<std::string>()] = t;

  std::map<std::pair<std::string, bool>, std::pair<ChatTemplate, Json>> parsed;  // by tool use
  int compared = 0, failures = 0, errors_matched = 0;
  std::map<std::string, int> ok_conversations_per_template;
  double render_seconds = 0;
  for (const Json& c : oracle["cases"]) {
    const std::string name = c["template"].get<std::string>();
    const Json& info = template_info[name];
    const bool tools = !c["tools"].is_null();
    auto key = std::make_pair(name, tools);
    if (!parsed.count(key)) {
      ChatConfig config;
      if (info["kind"] == "model_dir") {
        config = LoadChatConfig(info["path"].get<std::string>(), tools);
        // transformers' special_tokens_map, computed independently by the oracle.
        EXPECT_EQ(config.special_tokens.dump(), c["special_tokens"].dump()) << name;
      } else {
        config.template_source = ReadFileToString(info["path"].get<std::string>());
        config.special_tokens = c["special_tokens"];
      }
      parsed.emplace(key, std::make_pair(ChatTemplate::Parse(config.template_source, name),
                                         config.special_tokens));
    }
    const auto& [chat, special_tokens] = parsed.at(key);
    ChatOptions options;
    options.add_generation_prompt = c["add_generation_prompt"].get<bool>();
    if (!c["enable_thinking"].is_null()) options.enable_thinking = c["enable_thinking"].get<bool>();
    options.tools = c["tools"];
    options.extra = c["extra"];
    options.special_tokens = special_tokens;
    std::tm now{};
    now.tm_year = 2025 - 1900;  // the oracle's FIXED_NOW: 2025-03-14 15:09:26
    now.tm_mon = 2;
    now.tm_mday = 14;
    now.tm_hour = 15;
    now.tm_min = 9;
    now.tm_sec = 26;
    options.now = now;
    const std::string label =
        fmt::format("{} / {} (add_generation_prompt={}, enable_thinking={})", name,
                    c["conversation"].get<std::string>(), options.add_generation_prompt,
                    c["enable_thinking"].dump());
    ++compared;
    const auto start = std::chrono::steady_clock::now();
    std::string got;
    bool threw = false;
    std::string message;
    jinja::ErrorKind kind{};
    try {
      got = chat.Render(c["messages"], options);
    } catch (const jinja::TemplateError& e) {
      threw = true;
      message = e.message();
      kind = e.kind();
    }
    render_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (c.contains("error")) {
      const std::string type = c["error"]["type"].get<std::string>();
      const std::string want = c["error"]["message"].get<std::string>();
      const bool same_message = std::string(KindForPythonError(type)) == "other" || message == want;
      if (!threw || !KindMatches(type, kind) || !same_message) {
        ++failures;
        ADD_FAILURE() << label << ": jinja2 raised " << type << ": " << want << "\n  proctor: "
                      << (threw ? fmt::format("error ({}) {}", jinja::ErrorKindName(kind), message)
                                : "rendered " + Json(got).dump());
      } else {
        ++errors_matched;
      }
    } else if (threw || got != c["expected"].get<std::string>()) {
      ++failures;
      ADD_FAILURE() << label << ": "
                    << (threw ? "proctor failed: " + message
                              : DescribeMismatch(c["expected"].get<std::string>(), got));
    } else {
      ok_conversations_per_template[name] += 1;
    }
    if (failures >= 20) {
      ADD_FAILURE() << "stopping after 20 mismatches";
      break;
    }
  }
  fmt::print(
      "compared {} cases ({} identical errors) over {} templates; proctor rendering: {:.1f} "
      "us per conversation\n",
      compared, errors_matched, parsed.size(), 1e6 * render_seconds / std::max(compared, 1));
  // Each template must render at least 10 conversations successfully (6 option variants each).
  for (const auto& [name, info] : template_info) {
    if (info.contains("skipped")) continue;
    EXPECT_GE(ok_conversations_per_template[name], 10 * 6) << name;
  }
}

}  // namespace
}  // namespace proctor::text
