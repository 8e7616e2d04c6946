// End-to-end tests of `proctor tokenize` (the built executable) and of LoadTokenizer's path
// handling and errors, on the committed synthetic tokenizer.json and the fixture GGUFs.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "text/tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/file.h"

namespace proctor::text {
namespace {

namespace fs = std::filesystem;

fs::path Synthetic(const std::string& name) {
  return fs::path(PROCTOR_SOURCE_DIR) / "testdata/tokenizer/synthetic" / (name + ".json");
}

// Runs a command; returns stdout and sets *status.
std::string RunCommand(const std::string& cmd, int* status) {
  std::string out;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  *status = pclose(pipe);
  return out;
}

TEST(TokenizeCli, IdsOnlyMatchesTheLibraryAndDecodeRoundTrips) {
  if (!fs::exists(PROCTOR_BIN)) GTEST_SKIP() << "no " << PROCTOR_BIN << " (build target proctor)";
  fs::path file = Synthetic("byte_level_added");
  auto tokenizer = LoadTokenizer(file);
  const std::string text = "Hello world, the token 123";
  for (bool special : {true, false}) {
    auto ids = tokenizer->Encode(text, special);
    int status = -1;
    std::string out = RunCommand(fmt::format("{} tokenize {} --text '{}' --ids-only{}", PROCTOR_BIN,
                                             file.string(), text, special ? "" : " --no-special"),
                                 &status);
    EXPECT_EQ(status, 0);
    EXPECT_EQ(out, fmt::format("{}\n", fmt::join(ids, " ")));
  }
  auto ids = tokenizer->Encode(text, false);
  int status = -1;
  std::string out = RunCommand(
      fmt::format("{} tokenize {} --decode {}", PROCTOR_BIN, file.string(), fmt::join(ids, ",")),
      &status);
  EXPECT_EQ(status, 0);
  EXPECT_EQ(out, " hello world, the token 123\n");  // the file lowercases and adds a space
}

TEST(TokenizeCli, PrintsPiecesAndRefusesBadIds) {
  if (!fs::exists(PROCTOR_BIN)) GTEST_SKIP() << "no " << PROCTOR_BIN;
  fs::path file = Synthetic("metaspace_nfkc");
  int status = -1;
  std::string out = RunCommand(
      fmt::format("{} tokenize {} --text 'the end'", PROCTOR_BIN, file.string()), &status);
  EXPECT_EQ(status, 0);
  EXPECT_NE(out.find("\"<s>\""), std::string::npos) << out;
  EXPECT_NE(out.find("\n356\t\"the\"\n"), std::string::npos) << out;
  EXPECT_NE(out.find(" tokens ("), std::string::npos) << out;
  out = RunCommand(fmt::format("{} tokenize {} --decode 1,x 2>&1", PROCTOR_BIN, file.string()),
                   &status);
  EXPECT_NE(status, 0);
  EXPECT_NE(out.find("'x' is not a token id"), std::string::npos) << out;
  out = RunCommand(fmt::format("{} tokenize {} --decode 99999999 2>&1", PROCTOR_BIN, file.string()),
                   &status);
  EXPECT_NE(status, 0);
  EXPECT_NE(out.find("outside the vocabulary"), std::string::npos) << out;
}

TEST(LoadTokenizer, AcceptsFolderFileAndGguf) {
  fs::path dir = fs::temp_directory_path() / fmt::format("proctor-tok-{}", ::getpid());
  fs::create_directories(dir);
  fs::copy_file(Synthetic("metaspace_nfkc"), dir / "tokenizer.json",
                fs::copy_options::overwrite_existing);
  WriteFileAtomic(dir / "tokenizer_config.json",
                  R"({"bos_token": {"content": "<s>"}, "eos_token": "</s>"})");
  auto from_dir = LoadTokenizer(dir);
  auto from_file = LoadTokenizer(Synthetic("metaspace_nfkc"));
  EXPECT_EQ(from_dir->Encode("Some Text", true), from_file->Encode("Some Text", true));
  EXPECT_EQ(from_dir->BosId(), from_dir->TokenToId("<s>"));
  EXPECT_EQ(from_dir->EosId(), from_dir->TokenToId("</s>"));
  EXPECT_TRUE(from_dir->IsSpecial(from_dir->BosId()));
  EXPECT_EQ(from_dir->IdToToken(from_dir->BosId()).value_or(""), "<s>");
  fs::remove_all(dir);

  const char* env = std::getenv("PROCTOR_FIXTURES");
  fs::path gguf = (env ? fs::path(env) : fs::path(PROCTOR_FIXTURES_DEFAULT)) /
                  "llama.cpp-vocab/ggml-vocab-llama-spm.gguf";
  if (!fs::exists(gguf)) GTEST_SKIP() << "no " << gguf;
  auto spm = LoadTokenizer(gguf);
  EXPECT_EQ(spm->VocabSize(), 32000u);
  EXPECT_EQ(spm->BosId(), 1);
  EXPECT_EQ(spm->EosId(), 2);
  // Decoding the encoding gives the text back (the added space prefix is removed).
  const std::string text = "Hello world\n  two  spaces";
  EXPECT_EQ(spm->Decode(spm->Encode(text, false), false), text);
  EXPECT_EQ(spm->Encode(text, true).front(), 1);
}

TEST(LoadTokenizer, ErrorsNameTheProblem) {
  auto expect_error = [](const std::string& json, const std::string& needle) {
    try {
      LoadHfTokenizer(json, "", "test.json");
      ADD_FAILURE() << "loaded: " << json;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  const std::string model =
      R"("model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]})";
  expect_error("{" + model + R"(, "normalizer": {"type": "BertNormalizer"}})",
               "normalizer type \"BertNormalizer\" is not supported");
  expect_error("{" + model + R"(, "pre_tokenizer": {"type": "UnicodeScripts"}})",
               "pre_tokenizer type \"UnicodeScripts\"");
  expect_error("{" + model + R"(, "decoder": {"type": "WordPiece"}})",
               "decoder type \"WordPiece\"");
  expect_error("{" + model + R"(, "post_processor": {"type": "BertProcessing"}})",
               "post_processor type \"BertProcessing\"");
  expect_error("{" + model + R"(, "extra": 1})", "top-level field \"extra\"");
  expect_error(R"({"model": {"type": "Unigram", "vocab": []}})", "model type \"Unigram\"");
  expect_error(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]}})",
               "merge 0 'a b'");
  expect_error(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [], "dropout": 0.1}})",
               "dropout");
  expect_error("{" + model + ", ", "invalid JSON");
  // A good one encodes.
  auto ok = LoadHfTokenizer("{" + model + "}", "", "test.json");
  EXPECT_EQ(ok->Encode("ab", false), std::vector<int32_t>({2}));
  EXPECT_THROW(ok->Encode("\xff", false), Error);
}

}  // namespace
}  // namespace proctor::text
