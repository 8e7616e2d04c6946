// GGUF vocabularies as tokenizer.json: for every vocabulary in
// ../shared/fixtures/llama.cpp-vocab with llama.cpp's test vectors (byte-level BPE: gpt-2, falcon,
// mpt, refact; SentencePiece: llama-spm, phi-3),
// the exported files hold the GGUF tokenizer's vocabulary (every id's token and special flag,
// BOS, EOS) and encode every vector input to llama.cpp's ids, both in Hugging Face's own
// `tokenizers` (tools/oracle/hf_tokenize.py) and in proctor's tokenizer.json reader; a WordPiece
// vocabulary says why it has no such form.
#include "text/tokenizer/gguf_to_hf.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "formats/gguf.h"
#include "text/tokenizer/oracle_test_support.h"
#include "text/tokenizer/tokenizer.h"
#include "util/file.h"
#include "util/testing_files.h"

namespace proctor::text {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

fs::path VocabDir() { return FixturesDir() / "llama.cpp-vocab"; }

// llama.cpp's test vectors of `gguf`: the .inp texts and the .out ids.
void ReadVectors(const fs::path& gguf, std::vector<std::string>* inputs,
                 std::vector<std::vector<int32_t>>* expected) {
  const std::string text = ReadFileToString(fs::path(gguf).concat(".inp"));
  const std::string sep = "\n__ggml_vocab_test__\n";
  for (size_t pos = 0; pos < text.size();) {
    const size_t s = text.find(sep, pos);
    inputs->push_back(text.substr(pos, s == std::string::npos ? std::string::npos : s - pos));
    if (s == std::string::npos) break;
    pos = s + sep.size();
  }
  std::istringstream lines(ReadFileToString(fs::path(gguf).concat(".out")));
  for (std::string line; std::getline(lines, line);) {
    std::istringstream ids(line);
    std::vector<int32_t> row;
    for (int32_t id; ids >> id;) row.push_back(id);
    expected->push_back(row);
  }
}

class GgufToHf : public ::testing::TestWithParam<std::string> {};

TEST_P(GgufToHf, EncodesLikeLlamaCpp) {
  const fs::path gguf = VocabDir() / ("ggml-vocab-" + GetParam() + ".gguf");
  if (!fs::exists(gguf)) GTEST_SKIP() << "fixture absent: " << gguf;
  std::vector<std::string> inputs;
  std::vector<std::vector<int32_t>> expected;
  ReadVectors(gguf, &inputs, &expected);
  ASSERT_EQ(inputs.size(), expected.size());
  std::string why;
  const auto files = GgufVocabAsHfTokenizer(*GgufFile::Open(gguf), &why);
  ASSERT_TRUE(files.has_value()) << why;

  const auto ours = LoadHfTokenizer(files->tokenizer_json, files->tokenizer_config_json,
                                    GetParam() + " tokenizer.json");
  // The same vocabulary as the GGUF's own tokenizer (what the tokenizer fingerprint hashes):
  // every id's token and special flag, BOS and EOS.
  const auto source = LoadTokenizer(gguf);
  ASSERT_EQ(ours->VocabSize(), source->VocabSize());
  EXPECT_EQ(ours->BosId(), source->BosId());
  EXPECT_EQ(ours->EosId(), source->EosId());
  for (size_t id = 0; id < source->VocabSize(); ++id) {
    const auto i = static_cast<int32_t>(id);
    ASSERT_EQ(ours->IdToToken(i), source->IdToToken(i)) << id;
    ASSERT_EQ(ours->IsSpecial(i), source->IsSpecial(i)) << id << " " << *source->IdToToken(i);
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_EQ(Ids(ours->Encode(inputs[i], false)), Ids(expected[i]))
        << "proctor, case " << i << ": " << Quote(inputs[i]);
  }

  const auto& python = proctor::testing::Oracles("python");
  ASSERT_TRUE(python.problem.empty()) << python.problem;
  proctor::testing::TempDir dir;
  WriteFileAtomic(dir.path() / "tokenizer.json", files->tokenizer_json);
  WriteFileAtomic(dir.path() / "inputs.json", json(inputs).dump());
  std::string command;
  ASSERT_EQ(RunHfTokenize(dir.path() / "tokenizer.json", dir.path() / "inputs.json",
                          dir.path() / "out.json", &command),
            0)
      << command;
  const json hf = json::parse(ReadFileToString(dir.path() / "out.json"));
  for (size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_EQ(Ids(hf["cases"][i]["ids"].get<std::vector<int32_t>>()), Ids(expected[i]))
        << "tokenizers " << hf["version"] << ", case " << i << ": " << Quote(inputs[i]);
  }
}

INSTANTIATE_TEST_SUITE_P(Vocabs, GgufToHf,
                         ::testing::Values("gpt-2", "falcon", "mpt", "refact", "llama-spm",
                                           "phi-3"),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           std::string name = param.param;
                           for (char& c : name) c = c == '-' ? '_' : c;
                           return name;
                         });

TEST(GgufToHf, WordPieceHasNoSuchForm) {
  const fs::path gguf = VocabDir() / "ggml-vocab-bert-bge.gguf";
  if (!fs::exists(gguf)) GTEST_SKIP() << "fixture absent: " << gguf;
  std::string why;
  EXPECT_FALSE(GgufVocabAsHfTokenizer(*GgufFile::Open(gguf), &why).has_value());
  EXPECT_NE(why.find("\"bert\""), std::string::npos) << why;
}

}  // namespace
}  // namespace proctor::text
