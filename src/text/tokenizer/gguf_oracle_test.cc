// GGUF vocabulary tests: llama.cpp's tokenizer test vectors for every vocabulary-only GGUF in
// ../shared/fixtures/llama.cpp-vocab that has them, and ids identical to llama.cpp itself (its
// tokenizer from the llama-cpp-python 0.3.36 source, through tools/llama_cpp_tokenize.c, built by
// tools/oracle/setup.sh) on the hard inputs for every supported GGUF there. Skip with a message
// when the fixtures or the oracle are absent.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "text/tokenizer/gguf_presets.h"
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

// llama.cpp's tokenizer on `inputs`: {"cases": [{"ids"}], "bos": id|null, "eos": id|null}.
json LlamaCppTokenize(const fs::path& gguf, const std::vector<std::string>& inputs,
                      const std::string& tool) {
  const fs::path runs = OracleRunsDir();
  fs::create_directories(runs);
  const fs::path in = runs / ("gguf-" + gguf.stem().string() + "-inputs.bin");
  const fs::path out = runs / ("gguf-" + gguf.stem().string() + "-ids.txt");
  std::string records;
  for (const auto& text : inputs) records += std::to_string(text.size()) + "\n" + text;
  WriteFileAtomic(in, records);
  const std::string cmd =
      fmt::format("{} {} {} {}", tool, gguf.string(), in.string(), out.string());
  if (std::system(cmd.c_str()) != 0) {
    ADD_FAILURE() << "oracle failed: " << cmd;
    return json();
  }
  std::istringstream lines(ReadFileToString(out));
  json result{{"cases", json::array()}};
  std::string line, word;
  for (const char* key : {"bos", "eos"}) {
    int32_t id = -1;
    std::getline(lines, line);
    std::istringstream(line) >> word >> id;
    result[key] = id < 0 ? json() : json(id);
  }
  while (std::getline(lines, line)) {
    std::vector<int32_t> ids;
    std::istringstream row(line);
    for (int32_t id; row >> id;) ids.push_back(id);
    result["cases"].push_back({{"ids", ids}});
  }
  return result;
}

class GgufOracle : public ::testing::TestWithParam<std::string> {};

TEST_P(GgufOracle, HardInputsMatchLlamaCpp) {
  fs::path gguf = VocabDir() / ("ggml-vocab-" + GetParam() + ".gguf");
  if (!fs::exists(gguf)) GTEST_SKIP() << "fixture absent: " << gguf;
  const auto& llama_cpp = proctor::testing::Oracles("llama.cpp");
  if (!llama_cpp.problem.empty()) GTEST_SKIP() << "oracle unavailable: " << llama_cpp.problem;
  auto inputs = json::parse(ReadFileToString(fs::path(PROCTOR_SOURCE_DIR) /
                                             "testdata/tokenizer/hard_inputs.json"))
                    .get<std::vector<std::string>>();
  json oracle = LlamaCppTokenize(gguf, inputs, llama_cpp.Path("llama_cpp_tokenize"));
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

// gpt-2's vocabulary-only GGUF with its tokenizer.ggml.pre string replaced by `pre`: the same
// vocabulary and merges, split by another pre-tokenizer. A vocabulary-only file has no tensor
// data after its header, so the value can grow or shrink in place.
std::string WithPreTokenizer(const std::string& gguf, const std::string& pre) {
  const std::string key = "tokenizer.ggml.pre";
  std::string needle(8, '\0');
  const uint64_t key_len = key.size();
  std::memcpy(needle.data(), &key_len, 8);
  needle += key;
  const size_t at = gguf.find(needle);
  if (at == std::string::npos) return "";
  const size_t type_at = at + needle.size(), len_at = type_at + 4;
  uint32_t type = 0;
  uint64_t old_len = 0;
  std::memcpy(&type, gguf.data() + type_at, 4);
  std::memcpy(&old_len, gguf.data() + len_at, 8);
  if (type != 8) return "";  // a string
  std::string value(8, '\0');
  const uint64_t new_len = pre.size();
  std::memcpy(value.data(), &new_len, 8);
  value += pre;
  return gguf.substr(0, len_at) + value + gguf.substr(len_at + 8 + old_len);
}

// Every pre-tokenizer proctor knows compiles and splits as llama.cpp's own: each one on gpt-2's
// vocabulary, ids on the hard inputs (Greek, CJK, Hangul, emoji, digits, contractions, control
// characters, ...) equal llama.cpp's.
TEST(GgufPresets, EveryPresetSplitsAsLlamaCpp) {
  const fs::path gpt2 = VocabDir() / "ggml-vocab-gpt-2.gguf";
  if (!fs::exists(gpt2)) GTEST_SKIP() << "fixture absent: " << gpt2;
  const auto& llama_cpp = proctor::testing::Oracles("llama.cpp");
  if (!llama_cpp.problem.empty()) GTEST_SKIP() << "oracle unavailable: " << llama_cpp.problem;
  const auto inputs = json::parse(ReadFileToString(fs::path(PROCTOR_SOURCE_DIR) /
                                                   "testdata/tokenizer/hard_inputs.json"))
                          .get<std::vector<std::string>>();
  const std::string original = ReadFileToString(gpt2);
  std::vector<std::string> names;
  std::istringstream list(GgufBpePresetNames());
  for (std::string name; std::getline(list, name, ',');) {
    names.push_back(name.substr(name.find_first_not_of(' ')));
  }
  ASSERT_GE(names.size(), 60u);
  const fs::path runs = OracleRunsDir() / "presets";
  fs::create_directories(runs);
  int checked = 0;
  for (const std::string& name : names) {
    SCOPED_TRACE("preset " + name);
    const std::string bytes = WithPreTokenizer(original, name);
    ASSERT_FALSE(bytes.empty());
    const fs::path gguf = runs / ("ggml-vocab-" + name + ".gguf");
    WriteFileAtomic(gguf, bytes);
    std::unique_ptr<Tokenizer> tokenizer;
    ASSERT_NO_THROW(tokenizer = LoadTokenizer(gguf));
    const json oracle = LlamaCppTokenize(gguf, inputs, llama_cpp.Path("llama_cpp_tokenize"));
    ASSERT_EQ(oracle["cases"].size(), inputs.size());
    int bad = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const auto want = oracle["cases"][i]["ids"].get<std::vector<int32_t>>();
      const auto got = tokenizer->Encode(inputs[i], false);
      if (got != want && ++bad <= 3) {
        ADD_FAILURE() << "input " << i << ": " << Quote(inputs[i]) << "\n  got:  " << Ids(got)
                      << "\n  want: " << Ids(want);
      }
    }
    EXPECT_EQ(bad, 0) << bad << " of " << inputs.size() << " inputs differ from llama.cpp";
    ++checked;
  }
  std::printf("[ presets ] %d pre-tokenizers checked against llama.cpp\n", checked);
}

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
