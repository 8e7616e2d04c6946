// Test-only: the oracles tools/oracle/setup.sh installs (the Python environment with Hugging Face
// tokenizers, Jinja2, gguf and numpy; the real tokenizer files; llama.cpp's libraries, tools and
// the project's oracle programs built against them), found by running that script once per part
// per test process. Needs the compile definitions every test binary gets (PROCTOR_SOURCE_DIR).
// A missing oracle is a skip with the script's reason; scripts/test.sh turns such a skip into a
// failure in CI.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace proctor::testing {

struct OracleSetup {
  std::map<std::string, std::string> paths;  // key printed by setup.sh -> path
  std::string problem;                       // empty when the part is installed

  // The path for `key`; empty (and `problem` explains) when the part is not installed.
  std::string Path(const std::string& key) const {
    auto it = paths.find(key);
    return it == paths.end() ? std::string() : it->second;
  }
};

// Runs `tools/oracle/setup.sh PART` ("python", "tokenizers" or "llama.cpp") the first time a part
// is asked for; its progress goes to this test's stderr. Prints "[ oracle ] PART" on stdout then,
// so scripts/test_report.py can list every test that used an oracle, with its time.
inline const OracleSetup& Oracles(const std::string& part) {
  static std::map<std::string, OracleSetup> parts;
  auto found = parts.find(part);
  if (found != parts.end()) return found->second;
  std::printf("[ oracle ] %s\n", part.c_str());
  std::fflush(stdout);
  OracleSetup& setup = parts[part];
  const std::filesystem::path err = std::filesystem::temp_directory_path() /
                                    ("proctor-oracle-setup-" + std::to_string(::getpid()));
  const std::string command = "bash " + std::string(PROCTOR_SOURCE_DIR) +
                              "/tools/oracle/setup.sh " + part + " 2>" + err.string();
  std::string out;
  int status = -1;
  if (FILE* pipe = ::popen(command.c_str(), "r")) {
    char buffer[4096];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.append(buffer, n);
    status = ::pclose(pipe);
  }
  std::string messages, last;
  {
    std::ifstream in(err);
    for (std::string line; std::getline(in, line);) {
      messages += line + "\n";
      if (!line.empty()) last = line;
    }
  }
  std::filesystem::remove(err);
  std::fputs(messages.c_str(), stderr);
  if (status != 0) {
    setup.problem = last.empty() ? command + " failed" : last;
    return setup;
  }
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    const size_t eq = line.find('=');
    if (eq != std::string::npos) setup.paths[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return setup;
}

// The first of `parts` that is not installed says why; empty when all of them are.
inline std::string OraclesProblem(std::initializer_list<const char*> parts) {
  for (const char* part : parts) {
    const OracleSetup& setup = Oracles(part);
    if (!setup.problem.empty()) return setup.problem;
  }
  return std::string();
}

// Runs an oracle `command` whose stdout is one JSON document and returns it; stderr (the
// oracle's log lines) only goes into the failure message when the command fails (an empty
// array then).
inline nlohmann::json RunOracleJson(const std::string& command) {
  const std::filesystem::path out = std::filesystem::temp_directory_path() /
                                    ("proctor-oracle-json-" + std::to_string(::getpid()));
  std::string errors;
  int status = -1;
  if (FILE* pipe = ::popen(("{ " + command + " > " + out.string() + "; } 2>&1").c_str(), "r")) {
    char buffer[4096];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) errors.append(buffer, n);
    status = ::pclose(pipe);
  }
  EXPECT_EQ(status, 0) << command << "\n" << errors.substr(0, 2000);
  nlohmann::json result = nlohmann::json::array();
  if (status == 0) {
    std::ifstream in(out);
    result = nlohmann::json::parse(in);
  }
  std::filesystem::remove(out);
  return result;
}

// The real tokenizer folder (tokenizer.json + tokenizer_config.json) of `model` ("qwen3", ...),
// decompressed from ../shared/fixtures/tokenizers by the "tokenizers" part.
inline std::filesystem::path RealTokenizerDir(const std::string& model) {
  return std::filesystem::path(Oracles("tokenizers").Path("tokenizers")) / model;
}

}  // namespace proctor::testing
