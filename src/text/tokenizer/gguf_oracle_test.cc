// GGUF vocabulary tests: llama.cpp's tokenizer test vectors for every vocabulary-only GGUF in
// ../shared/fixtures/llama.cpp-vocab that has them, and ids identical to llama.cpp itself (npm
// node-llama-cpp 3.21.1, installed by tools/oracle/setup_npm.sh) on the hard inputs for every
// supported GGUF there. Skip with a message when the fixtures or the oracle are absent.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "text/tokenizer/gguf_tokenizer.h"
#include "text/tokenizer/oracle_test_support.h"
#include "text/tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/file.h"

namespace proctor::text {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

fs::path VocabDir() { return FixturesDir() / "llama.cpp-vocab"; }

class GgufVectors : public ::testing::TestWithParam<std::string> {};

TEST_P(GgufVectors, MatchLlamaCppTestVectors) {
  fs::path gguf = VocabDir() / ("ggml-vocab-" + GetParam() + ".gguf");
  fs::path inp = fs::path(gguf).concat(".inp"), out = fs::path(gguf).concat(".out");
  if (!fs::exists(gguf) || !fs::exists(inp)) GTEST_SKIP() << "no " << gguf << " / .inp";
  std::string text = ReadFileToString(inp);
  std::vector<std::string> inputs;
  const std::string sep = "\n__ggml_vocab_test__\n";
  for (size_t pos = 0; pos < text.size();) {
    size_t s = text.find(sep, pos);
    inputs.push_back(text.substr(pos, s == std::string::npos ? std::string::npos : s - pos));
    if (s == std::string::npos) break;
    pos = s + sep.size();
  }
  std::vector<std::vector<int32_t>> expected;
  std::istringstream lines(ReadFileToString(out));
  for (std::string line; std::getline(lines, line);) {
    std::istringstream ids(line);
    std::vector<int32_t> row;
    for (int32_t id; ids >> id;) row.push_back(id);
    expected.push_back(row);
  }
  ASSERT_EQ(inputs.size(), expected.size());
  auto tokenizer = LoadTokenizer(gguf);
  for (size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_EQ(Ids(EncodeGgufWithoutParsingSpecial(*tokenizer, inputs[i])), Ids(expected[i]))
        << "case " << i << ": " << Quote(inputs[i]);
  }
}

INSTANTIATE_TEST_SUITE_P(Vocabs, GgufVectors,
                         ::testing::Values("llama-spm", "phi-3", "gpt-2", "falcon", "mpt",
                                           "refact"));

// node-llama-cpp availability (installed by setup_npm.sh next to the tokenizers package).
const std::string& LlamaOracleProblem() {
  static const std::string problem = NpmPackageProblem(
      "node-llama-cpp", "npm package node-llama-cpp@3.21.1 is not installed");
  return problem;
}

class GgufOracle : public ::testing::TestWithParam<std::string> {};

TEST_P(GgufOracle, HardInputsMatchLlamaCpp) {
  fs::path gguf = VocabDir() / ("ggml-vocab-" + GetParam() + ".gguf");
  if (!fs::exists(gguf)) GTEST_SKIP() << "no " << gguf;
  if (!LlamaOracleProblem().empty()) GTEST_SKIP() << "oracle unavailable: " << LlamaOracleProblem();
  auto inputs = json::parse(ReadFileToString(fs::path(PROCTOR_SOURCE_DIR) /
                                             "testdata/tokenizer/hard_inputs.json"))
                    .get<std::vector<std::string>>();
  fs::path runs = OracleDir() / "runs";
  fs::create_directories(runs);
  fs::path out = runs / ("gguf-" + GetParam() + "-oracle.json");
  std::string cmd = "node " + (fs::path(PROCTOR_SOURCE_DIR) / "tools/oracle/llama_tokenize.mjs").string() +
                    " " + OracleDir().string() + " " + gguf.string() + " " +
                    (fs::path(PROCTOR_SOURCE_DIR) / "testdata/tokenizer/hard_inputs.json").string() +
                    " " + out.string() + " 2>/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  json oracle = json::parse(ReadFileToString(out));
  ASSERT_EQ(oracle["cases"].size(), inputs.size());
  auto tokenizer = LoadTokenizer(gguf);
  int bad = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto want = oracle["cases"][i]["ids"].get<std::vector<int32_t>>();
    auto got = tokenizer->Encode(inputs[i], false);
    if (got != want && ++bad <= 8) {
      ADD_FAILURE() << "input " << i << ": " << Quote(inputs[i]) << "\n  got:  " << Ids(got)
                    << "\n  want: " << Ids(want);
    }
  }
  EXPECT_EQ(bad, 0) << bad << " of " << inputs.size() << " inputs differ from llama.cpp";
  if (!oracle["bos"].is_null()) {
    EXPECT_EQ(tokenizer->BosId(), oracle["bos"].get<int32_t>());
  }
  if (!oracle["eos"].is_null()) {
    EXPECT_EQ(tokenizer->EosId(), oracle["eos"].get<int32_t>());
  }
}

INSTANTIATE_TEST_SUITE_P(Vocabs, GgufOracle,
                         ::testing::Values("llama-spm", "phi-3", "baichuan", "gpt-2", "gpt-neox",
                                           "falcon", "mpt", "refact"));

TEST(GgufTokenizer, RefusesUnsupportedModel) {
  fs::path gguf = VocabDir() / "ggml-vocab-bert-bge.gguf";
  if (!fs::exists(gguf)) GTEST_SKIP() << "no " << gguf;
  try {
    LoadTokenizer(gguf);
    FAIL() << "bert vocabulary loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("\"bert\""), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace proctor::text
