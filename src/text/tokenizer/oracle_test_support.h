// Helpers shared by the tokenizer oracle tests (tokenizer_oracle_test.cc: Hugging Face's npm
// `tokenizers`; gguf_oracle_test.cc: npm node-llama-cpp): fixture and oracle directories, the
// one-time npm setup (tools/oracle/setup_npm.sh into the build tree), and how ids and inputs are
// printed in failure messages. Test-only: it needs the compile definitions the test binaries get.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace proctor::text {

namespace fs = std::filesystem;

inline fs::path FixturesDir() {
  const char* env = std::getenv("PROCTOR_FIXTURES");
  return env ? fs::path(env) : fs::path(PROCTOR_FIXTURES_DEFAULT);
}

// Where setup_npm.sh installs the npm packages and the oracle runs write their files.
inline fs::path OracleDir() { return fs::path(PROCTOR_BINARY_DIR) / "oracle"; }

// Runs the setup script once per process (under a lock: ctest runs tests in parallel). Returns an
// empty string when it succeeded, else why not.
inline const std::string& NpmSetupProblem() {
  static const std::string problem = [] {
    if (std::system("command -v node >/dev/null 2>&1") != 0) return std::string("node not found");
    fs::create_directories(OracleDir());
    std::string cmd = "flock " + (OracleDir() / ".lock").string() + " bash " +
                      (fs::path(PROCTOR_SOURCE_DIR) / "tools/oracle/setup_npm.sh").string() +
                      " " + OracleDir().string() + " >&2";
    if (std::system(cmd.c_str()) != 0) return std::string("setup_npm.sh failed");
    return std::string();
  }();
  return problem;
}

// Empty when the npm package `package` is usable after the setup, else why not (`missing`: the
// message when the setup ran but did not install it).
inline std::string NpmPackageProblem(const std::string& package, const std::string& missing) {
  if (!NpmSetupProblem().empty()) return NpmSetupProblem();
  if (!fs::exists(OracleDir() / "node_modules" / package / "package.json")) return missing;
  return std::string();
}

// A string as a JSON literal (invalid UTF-8 replaced), for failure messages.
inline std::string Quote(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
}

inline std::string Ids(const std::vector<int32_t>& ids) {
  return fmt::format("{}", fmt::join(ids, " "));
}

}  // namespace proctor::text
