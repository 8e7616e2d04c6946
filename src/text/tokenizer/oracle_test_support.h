// Helpers shared by the tokenizer oracle tests (tokenizer_oracle_test.cc and bpe_trainer_test.cc:
// Hugging Face's `tokenizers`; gguf_oracle_test.cc: llama.cpp's tokenizer): fixture and run
// directories, the oracles of tools/oracle/setup.sh, and how ids and inputs are printed in
// failure messages. Test-only: it needs the compile definitions the test binaries get.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/testing_oracles.h"

namespace proctor::text {

namespace fs = std::filesystem;

inline fs::path FixturesDir() {
  const char* env = std::getenv("PROCTOR_FIXTURES");
  return env ? fs::path(env) : fs::path(PROCTOR_FIXTURES_DEFAULT);
}

// Where the oracle runs write their inputs and outputs.
inline fs::path OracleRunsDir() { return fs::path(PROCTOR_BINARY_DIR) / "oracle" / "runs"; }

using proctor::testing::RealTokenizerDir;

// Runs tools/oracle/hf_tokenize.py (one thread) on `inputs_json`; writes `output_json`. Returns
// the command's exit status and sets `command`.
inline int RunHfTokenize(const fs::path& tokenizer_json, const fs::path& inputs_json,
                         const fs::path& output_json, std::string* command) {
  *command = fmt::format("RAYON_NUM_THREADS=1 {} {}/tools/oracle/hf_tokenize.py {} {} {}",
                         proctor::testing::Oracles("python").Path("python"), PROCTOR_SOURCE_DIR,
                         tokenizer_json.string(), inputs_json.string(), output_json.string());
  return std::system(command->c_str());
}

// A string as a JSON literal (invalid UTF-8 replaced), for failure messages.
inline std::string Quote(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
}

inline std::string Ids(const std::vector<int32_t>& ids) {
  return fmt::format("{}", fmt::join(ids, " "));
}

}  // namespace proctor::text
