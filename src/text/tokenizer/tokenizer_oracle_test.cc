// Oracle tests: token ids and decoded text identical to Hugging Face's own Rust `tokenizers`
// (PyPI 0.23.2, tools/oracle/hf_tokenize.py) on the real tokenizer.json files of six model
// families (../shared/fixtures/tokenizers), for hand-written hard inputs and every line of
// wikitext-2; and the llama.cpp tokenizer test vectors for the vocabularies whose tokenizer.json
// we have. tools/oracle/setup.sh installs the oracle; without it (or the fixtures) the tests skip.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "text/tokenizer/oracle_test_support.h"
#include "text/tokenizer/tokenizer.h"
#include "util/file.h"

namespace proctor::text {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// Empty when the tokenizers oracle is usable, else why not.
const std::string& OracleProblem() {
  static const std::string problem = proctor::testing::OraclesProblem({"python", "tokenizers"});
  return problem;
}

fs::path ModelJson(const std::string& model) { return RealTokenizerDir(model) / "tokenizer.json"; }

// Runs the Python oracle on inputs; returns its parsed output.
json RunOracle(const std::string& model, const std::vector<std::string>& inputs,
               const std::string& tag, const fs::path& tokenizer_json) {
  fs::path dir = OracleRunsDir();
  fs::create_directories(dir);
  fs::path in = dir / (model + "-" + tag + "-inputs.json");
  fs::path out = dir / (model + "-" + tag + "-oracle.json");
  WriteFileAtomic(in, json(inputs).dump());
  std::string cmd;
  if (RunHfTokenize(tokenizer_json, in, out, &cmd) != 0) {
    ADD_FAILURE() << "oracle failed: " << cmd;
    return json();
  }
  return json::parse(ReadFileToString(out));
}

// Loads a tokenizer and compares it with the oracle.
class OracleFixture {
 protected:
  std::unique_ptr<Tokenizer> tokenizer_;
  double load_seconds_ = 0;

  void Load(const fs::path& path) {
    auto t0 = std::chrono::steady_clock::now();
    tokenizer_ = LoadTokenizer(path);
    load_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  // Compares every field with the oracle; prints each mismatching input.
  void Compare(const std::vector<std::string>& inputs, const json& oracle, bool with_special) {
    ASSERT_TRUE(oracle.is_object());
    const json& cases = oracle["cases"];
    ASSERT_EQ(cases.size(), inputs.size());
    int bad = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const json& c = cases[i];
      auto ids = tokenizer_->Encode(inputs[i], false);
      std::vector<std::string> problems;
      auto want = c["ids"].get<std::vector<int32_t>>();
      if (ids != want) problems.push_back("ids\n  got:  " + Ids(ids) + "\n  want: " + Ids(want));
      std::string decoded = tokenizer_->Decode(want, false);
      if (decoded != c["decoded"].get<std::string>()) {
        problems.push_back("decode(ids)\n  got:  " + Quote(decoded) +
                           "\n  want: " + Quote(c["decoded"].get<std::string>()));
      }
      if (with_special) {
        auto ids_special = tokenizer_->Encode(inputs[i], true);
        auto want_special = c["ids_special"].get<std::vector<int32_t>>();
        if (ids_special != want_special) {
          problems.push_back("ids with special tokens\n  got:  " + Ids(ids_special) +
                             "\n  want: " + Ids(want_special));
        }
        std::string skipped = tokenizer_->Decode(want_special, true);
        if (skipped != c["decoded_skip"].get<std::string>()) {
          problems.push_back("decode(ids_special, skip_special)\n  got:  " + Quote(skipped) +
                             "\n  want: " + Quote(c["decoded_skip"].get<std::string>()));
        }
      }
      if (!problems.empty() && ++bad <= 8) {
        std::string msg = "input " + std::to_string(i) + ": " + Quote(inputs[i]);
        for (const auto& p : problems) msg += "\n " + p;
        ADD_FAILURE() << msg;
      }
    }
    EXPECT_EQ(bad, 0) << bad << " of " << inputs.size() << " inputs differ from the oracle";
  }
};

std::vector<std::string> HardInputs() {
  json inputs_json = json::parse(
      ReadFileToString(fs::path(PROCTOR_SOURCE_DIR) / "testdata/tokenizer/hard_inputs.json"));
  return inputs_json.get<std::vector<std::string>>();
}

class HfOracle : public OracleFixture, public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!OracleProblem().empty()) GTEST_SKIP() << "oracle unavailable: " << OracleProblem();
    if (!fs::exists(ModelJson(GetParam()))) {
      GTEST_SKIP() << "fixture absent: " << ModelJson(GetParam());
    }
    Load(ModelJson(GetParam()).parent_path());
  }
};

TEST_P(HfOracle, HardInputs) {
  auto inputs = HardInputs();
  ASSERT_GE(inputs.size(), 60u);
  json oracle = RunOracle(GetParam(), inputs, "hard", ModelJson(GetParam()));
  Compare(inputs, oracle, true);
  std::printf("[ load ] %s tokenizer.json: proctor %.3f s, tokenizers %s %.3f s\n",
              GetParam().c_str(), load_seconds_, oracle.value("version", "?").c_str(),
              oracle.value("load_seconds", 0.0));
}

std::vector<std::string> WikitextLines() {
  fs::path file = FixturesDir() / "wikitext-2" / "wiki.test.raw";
  if (!fs::exists(file)) return {};
  std::string text = ReadFileToString(file);
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    size_t end = nl == std::string::npos ? text.size() : nl + 1;
    lines.push_back(text.substr(pos, end - pos));
    pos = end;
  }
  return lines;
}

TEST_P(HfOracle, Wikitext2) {
  auto lines = WikitextLines();
  if (lines.empty()) GTEST_SKIP() << "no wikitext-2 fixture under " << FixturesDir();
  // Throughput, single thread, first pass over the lines (cold word cache, as the oracle's
  // timed pass), reported and not asserted.
  size_t bytes = 0;
  for (const auto& l : lines) bytes += l.size();
  auto t0 = std::chrono::steady_clock::now();
  size_t count = 0;
  for (const auto& l : lines) count += tokenizer_->Encode(l, false).size();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  json oracle = RunOracle(GetParam(), lines, "wikitext", ModelJson(GetParam()));
  Compare(lines, oracle, false);
  std::printf(
      "[ perf ] %s wikitext-2 (%zu lines, %.2f MB, %zu tokens), one thread: proctor "
      "%.3f s (%.2f MB/s), tokenizers (Python) %.3f s (%.2f MB/s)\n",
      GetParam().c_str(), lines.size(), bytes / 1e6, count, seconds, bytes / 1e6 / seconds,
      oracle.value("encode_seconds", 0.0), bytes / 1e6 / oracle.value("encode_seconds", 1.0));
}

INSTANTIATE_TEST_SUITE_P(Models, HfOracle,
                         ::testing::Values("qwen3", "llama3", "llama3_1", "gemma3", "llama2",
                                           "deepseek_v3"));

// Small synthetic tokenizer.json files (tools/oracle/make_synthetic_tokenizers.py) that use the
// components the real files do not: every one must match the oracle on the hard inputs.
class SyntheticOracle : public OracleFixture, public ::testing::TestWithParam<std::string> {};

TEST_P(SyntheticOracle, HardInputs) {
  if (!OracleProblem().empty()) GTEST_SKIP() << "oracle unavailable: " << OracleProblem();
  fs::path file =
      fs::path(PROCTOR_SOURCE_DIR) / "testdata/tokenizer/synthetic" / (GetParam() + ".json");
  Load(file);
  auto inputs = HardInputs();
  Compare(inputs, RunOracle("synthetic-" + GetParam(), inputs, "hard", file), true);
}

INSTANTIATE_TEST_SUITE_P(Files, SyntheticOracle,
                         ::testing::Values("metaspace_nfkc", "metaspace_always", "subword_prefix",
                                           "word_suffix", "split_behaviors", "byte_level_added"));

// llama.cpp's test-tokenizer-0 vectors: cases separated by "\n__ggml_vocab_test__\n", one line
// of expected ids (no BOS/EOS) per case.
struct VocabVectors {
  std::vector<std::string> inputs;
  std::vector<std::vector<int32_t>> expected;
};

VocabVectors ReadVocabVectors(const fs::path& inp, const fs::path& out) {
  VocabVectors v;
  std::string text = ReadFileToString(inp);
  const std::string sep = "\n__ggml_vocab_test__\n";
  size_t pos = 0;
  while (pos < text.size()) {
    size_t s = text.find(sep, pos);
    if (s == std::string::npos) {
      v.inputs.push_back(text.substr(pos));
      break;
    }
    v.inputs.push_back(text.substr(pos, s - pos));
    pos = s + sep.size();
  }
  std::istringstream lines(ReadFileToString(out));
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream ids(line);
    std::vector<int32_t> row;
    int32_t id;
    while (ids >> id) row.push_back(id);
    v.expected.push_back(row);
  }
  return v;
}

class LlamaCppVectorsJson : public ::testing::TestWithParam<std::pair<std::string, std::string>> {};

TEST_P(LlamaCppVectorsJson, MatchTokenizerJson) {
  auto [vocab, model] = GetParam();
  fs::path inp = FixturesDir() / "llama.cpp-vocab" / ("ggml-vocab-" + vocab + ".gguf.inp");
  if (!fs::exists(inp)) GTEST_SKIP() << "no " << inp;
  if (!OracleProblem().empty()) GTEST_SKIP() << "tokenizer.json unavailable: " << OracleProblem();
  if (!fs::exists(ModelJson(model))) GTEST_SKIP() << "fixture absent: " << ModelJson(model);
  VocabVectors v = ReadVocabVectors(inp, fs::path(inp).replace_extension(".out"));
  ASSERT_EQ(v.inputs.size(), v.expected.size()) << inp;
  auto tokenizer = LoadTokenizer(ModelJson(model));
  for (size_t i = 0; i < v.inputs.size(); ++i) {
    EXPECT_EQ(Ids(tokenizer->Encode(v.inputs[i], false)), Ids(v.expected[i]))
        << "case " << i << ": " << Quote(v.inputs[i]);
  }
}

INSTANTIATE_TEST_SUITE_P(Vocabs, LlamaCppVectorsJson,
                         ::testing::Values(std::make_pair("qwen2", "qwen3"),
                                           std::make_pair("llama-bpe", "llama3"),
                                           std::make_pair("gemma-4", "gemma3")));

}  // namespace
}  // namespace proctor::text
