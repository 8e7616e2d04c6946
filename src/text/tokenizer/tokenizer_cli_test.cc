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
#include "util/testing_files.h"

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
  // Found by fuzz_tokenizer: a component without a field it needs was an uncaught nlohmann
  // exception (std::terminate in the fuzzer, "unexpected error" from the CLI).
  expect_error("{" + model + R"(, "decoder": {"type": "Replace", "content": "x"}})",
               "test.json: [json.exception.out_of_range.403] key 'pattern' not found");
  expect_error("{" + model + R"(, "added_tokens": [{"id": "seven", "content": "x"}]})",
               "test.json: [json.exception.type_error.302]");
  // A good one encodes.
  auto ok = LoadHfTokenizer("{" + model + "}", "", "test.json");
  EXPECT_EQ(ok->Encode("ab", false), std::vector<int32_t>({2}));
  EXPECT_THROW(ok->Encode("\xff", false), Error);
}

}  // namespace
}  // namespace proctor::text

namespace proctor::text {
namespace {

// #18 class 5: tokenizer files whose ids or normalizers would allocate gigabytes, loop over a
// billion ids, or hand an embedding table an id it does not have. Each is refused naming the
// file and the value, in milliseconds, under a 1 GiB address-space limit; a dense vocabulary
// with holes and a normalizer that grows text within bounds still load and encode.
TEST(LoadTokenizer, IdsAndNormalizersThatWouldExhaustMemoryAreRefused) {
  const std::string vocab = R"("vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"])";
  const auto file = [&](const std::string& model_extra, const std::string& rest) {
    return R"({"model": {"type": "BPE", )" + vocab + model_extra + "}" + rest + "}";
  };
  const std::string added =
      R"(, "added_tokens": [{"id": 1000000000, "content": "<x>", "special": true}])";
  const std::string post =
      R"(, "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": )"
      R"({"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}], "pair": [], )"
      R"("special_tokens": {"<s>": {"id": "<s>", "ids": [2147483646], "tokens": ["<s>"]}}})";
  std::string replaces;
  for (int i = 0; i < 8; ++i) {
    replaces += std::string(i ? ", " : "") +
                R"({"type": "Replace", "pattern": {"String": "a"}, "content": "aaaaaaaaaa"})";
  }
  const std::string normalizer =
      R"(, "normalizer": {"type": "Sequence", "normalizers": [)" + replaces + "]}";
  const struct {
    std::string json;
    std::string message;
    bool at_encode;  // the normalizer's bound is met when text is encoded
  } cases[] = {
      {R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 2147483647}, "merges": []}})",
       "token 'b' has id 2147483647, but the file defines 2 tokens: ids must stay below 1028",
       false},
      {file("", added), "added token '<x>' has id 1000000000, but the file defines 4 tokens",
       false},
      {file("", post),
       "post_processor adds token id 2147483646, outside the vocabulary (ids 0 to 2)", false},
      {file("", normalizer),
       "the normalizer Sequence would grow a 2-byte text to 10001 bytes, more than the 4128", true},
  };
  const proctor::testing::TempDir dir;
  for (const auto& c : cases) {
    try {
      auto tokenizer = LoadHfTokenizer(c.json, "", "test.json");
      EXPECT_TRUE(c.at_encode) << "loaded: " << c.json;
      tokenizer->Encode("ab", false);
      ADD_FAILURE() << "encoded with: " << c.json;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("test.json: " + c.message), std::string::npos)
          << e.what();
    }
    // The same file through `proctor tokenize`, bounded in memory and time.
    if (!fs::exists(PROCTOR_BIN)) continue;
    const fs::path path = dir.path() / "tokenizer.json";
    WriteFileAtomic(path, c.json);
    const auto r = proctor::testing::RunCommand(fmt::format(
        "ulimit -v 1048576; timeout 10 '{}' tokenize '{}' --text ab", PROCTOR_BIN, path.string()));
    EXPECT_EQ(r.status, 1) << r.output;
    EXPECT_NE(r.output.find("tokenizer.json: " + c.message), std::string::npos) << r.output;
  }
  // Holes up to the bound, and growth up to 16 times, are what real files do: they load.
  auto holes = LoadHfTokenizer(
      R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 1027}, "merges": ["a b"]}})", "",
      "test.json");
  EXPECT_EQ(holes->Encode("ab", false), std::vector<int32_t>({1027}));
  auto grows = LoadHfTokenizer(
      file(
          "",
          R"(, "normalizer": {"type": "Replace", "pattern": {"String": "b"}, "content": "bbbbbbbbbbbbbbbb"})"),
      "", "test.json");
  EXPECT_EQ(grows->Encode("b", false).size(), 16u);
}

}  // namespace
}  // namespace proctor::text
