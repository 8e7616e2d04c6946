// `BuildCorpus` against an independent reimplementation of the pipeline (tools/corpus_oracle.py:
// its own row reader, mulberry32 checked against the FORMATS.md goldens, Python Jinja2 for chat
// rows, and token ids from Hugging Face `tokenizers` (PyPI) or llama.cpp's tokenizer (through
// tools/llama_cpp_tokenize.c), both from tools/oracle/setup.sh), plus the error cases. Oracle
// tests skip when the oracles or fixtures are absent.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "eval/formats/corpus.h"
#include "eval/runners/corpus_builder.h"
#include "eval/testing_dumps.h"
#include "util/error.h"
#include "util/file.h"
#include "util/sha256.h"
#include "util/testing_oracles.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

fs::path Fixtures() {
  const char* env = std::getenv("PROCTOR_FIXTURES");
  return env != nullptr ? fs::path(env) : fs::path(PROCTOR_FIXTURES_DEFAULT);
}
fs::path Stories260K() { return Fixtures() / "stories260K" / "stories260K.gguf"; }

// Empty when the oracle Python and the real tokenizer files are installed, else why not.
const std::string& OracleProblem() {
  static const std::string problem = testing::OraclesProblem({"python", "tokenizers"});
  return problem;
}

std::tm OracleNow() {  // tools/chat_template_oracle.py FIXED_NOW: 2025-03-14 15:09:26
  std::tm now{};
  now.tm_year = 2025 - 1900;
  now.tm_mon = 2;
  now.tm_mday = 14;
  now.tm_hour = 15;
  now.tm_min = 9;
  now.tm_sec = 26;
  return now;
}

void Write(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// A .txt document (CRLF, non-ASCII), text rows (an empty one, a blank line, a special token
// written in the text) and chat rows of all three layouts.
std::vector<fs::path> WriteMixedInputs(const fs::path& dir, bool with_chat) {
  Write(dir / "doc.txt",
        "The quick brown fox jumps over the lazy dog.\r\nSecond line \xe2\x80\x94 caf\xc3\xa9, "
        "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e.\n");
  Write(dir / "text.jsonl",
        "{\"text\": \"Once upon a time there was a little robot.\"}\n"
        "{\"text\": \"\"}\n"
        "\n"
        "{\"text\": \"It liked numbers: 3.14159, 2718, and 42!\", \"id\": 7}\n"
        "{\"text\": \"Tabs\\tand\\nnewlines\\n\\n  spaces.\"}\n"
        "{\"text\": \"A row that ends with the end token <|im_end|>\"}\n"
        "{\"text\": \"The last plain row.\"}\n");
  std::vector<fs::path> inputs = {dir / "doc.txt", dir / "text.jsonl"};
  if (with_chat) {
    Write(dir / "chat.jsonl",
          "{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"}, {\"role\": "
          "\"user\", \"content\": \"What is 2+2?\"}, {\"role\": \"assistant\", \"content\": "
          "\"4.\"}]}\n"
          "{\"prompt\": \"Name a colour.\", \"chosen\": \"Blue.\", \"rejected\": \"No.\"}\n"
          "{\"prompt\": [{\"role\": \"user\", \"content\": \"Hi!\"}], \"chosen\": [{\"role\": "
          "\"assistant\", \"content\": \"Hello there.\"}]}\n"
          "{\"prompt\": \"Say yes.\", \"completion\": \"Yes.\"}\n");
    inputs.push_back(dir / "chat.jsonl");
  }
  return inputs;
}

// Runs tools/corpus_oracle.py once for several "L:N:SEED" configs (N "max": every row used);
// returns its expected.json (the expected tokens are files in `work`).
json RunOracle(const std::vector<std::string>& tokenizer_args,
               const std::vector<std::string>& configs, const std::vector<fs::path>& inputs,
               const fs::path& work) {
  std::string cmd = fmt::format(
      "{} {} --out-dir {}", proctor::testing::Oracles("python").Path("python"),
      (fs::path(PROCTOR_SOURCE_DIR) / "tools/corpus_oracle.py").string(), work.string());
  for (const auto& a : tokenizer_args) cmd += fmt::format(" {}", a);
  for (const auto& c : configs) cmd += fmt::format(" --config {}", c);
  for (const auto& p : inputs) cmd += fmt::format(" {}", p.string());
  if (std::system(cmd.c_str()) != 0) {
    ADD_FAILURE() << "oracle failed: " << cmd;
    return json();
  }
  return json::parse(ReadFileToString(work / "expected.json"));
}

// Builds the corpus of every config the oracle computed and compares it with the oracle's.
void ExpectCorporaMatchOracle(const std::string& tokenizer,
                              const std::vector<std::string>& oracle_args,
                              const std::vector<std::string>& configs,
                              const std::vector<fs::path>& inputs, const fs::path& work) {
  const json want = RunOracle(oracle_args, configs, inputs, work);
  ASSERT_TRUE(want.is_object());
  ASSERT_EQ(want["configs"].size(), configs.size());
  bool some_stop_early = false, some_use_all = false;
  for (const json& c : want["configs"]) {
    const auto ctx_len = c["ctx_len"].get<int64_t>();
    const auto n_seqs = c["n_seqs"].get<int64_t>();
    const auto seed = c["seed"].get<uint32_t>();
    SCOPED_TRACE(fmt::format("{} ctx_len {} n_seqs {} seed {}", tokenizer, ctx_len, n_seqs, seed));
    const fs::path out = work / fmt::format("corpus_{}_{}_{}", ctx_len, n_seqs, seed);
    const CorpusBuildResult result = BuildCorpus({.tokenizer = tokenizer,
                                                  .inputs = inputs,
                                                  .out_dir = out,
                                                  .ctx_len = ctx_len,
                                                  .n_seqs = n_seqs,
                                                  .seed = seed,
                                                  .chat_now = OracleNow(),
                                                  .quiet = true});
    const std::string bytes = ReadFileToString(work / c["file"].get<std::string>());
    std::vector<int32_t> expected(bytes.size() / 4);
    std::memcpy(expected.data(), bytes.data(), bytes.size());
    const Corpus corpus = ReadCorpus(out);
    ASSERT_EQ(corpus.tokens.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      ASSERT_EQ(corpus.tokens[i], expected[i])
          << "token " << i << " (sequence " << i / ctx_len << ", position " << i % ctx_len << ")";
    }
    EXPECT_EQ(result.rows_used, c["rows_used"].get<int64_t>());
    EXPECT_EQ(result.rows_total, want["rows_total"].get<int64_t>());
    EXPECT_EQ(result.tokens_tokenized, c["tokens_tokenized"].get<int64_t>());
    EXPECT_EQ(corpus.n_seqs, n_seqs);
    EXPECT_EQ(corpus.ctx_len, ctx_len);
    some_stop_early |= result.rows_used < result.rows_total;
    some_use_all |= result.rows_used == result.rows_total;
  }
  EXPECT_TRUE(some_stop_early && some_use_all) << "the configs should cover both cases";
}

class CorpusOracle : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!OracleProblem().empty()) GTEST_SKIP() << "oracle unavailable: " << OracleProblem();
  }
  testing::TempDir temp_;
};

// Qwen3: no BOS; EOS <|im_end|> appended to text rows (not to the row that already ends with
// it); chat rows rendered by the template without special tokens.
TEST_F(CorpusOracle, Qwen3TextAndChatRowsMatchTheIndependentPipeline) {
  const fs::path model = testing::RealTokenizerDir("qwen3");
  if (!fs::exists(model / "tokenizer.json")) GTEST_SKIP() << "fixture absent: " << model;
  const auto inputs = WriteMixedInputs(temp_.path(), /*with_chat=*/true);
  ExpectCorporaMatchOracle(model.string(), {"--hf-dir", model.string()},
                           {"16:3:123", "7:max:123", "5:9:7", "1:max:42"}, inputs, temp_.path());
}

// Llama 3.1: the post-processor adds <|begin_of_text|> to text rows; the chat template writes
// it itself (encoded without special tokens, so exactly once).
TEST_F(CorpusOracle, Llama31BosOnTextRowsMatchesTheIndependentPipeline) {
  const fs::path model = testing::RealTokenizerDir("llama3_1");
  if (!fs::exists(model / "tokenizer.json")) GTEST_SKIP() << "fixture absent: " << model;
  const auto inputs = WriteMixedInputs(temp_.path(), /*with_chat=*/true);
  ExpectCorporaMatchOracle(model.string(), {"--hf-dir", model.string()}, {"9:max:123", "32:2:99"},
                           inputs, temp_.path());
}

// A GGUF vocabulary (stories260K, llama SPM: BOS added, EOS 2) against llama.cpp's tokenizer.
TEST_F(CorpusOracle, Stories260KGgufMatchesLlamaCppTokens) {
  if (!fs::exists(Stories260K())) GTEST_SKIP() << "fixture absent: " << Stories260K();
  const auto& llama_cpp = proctor::testing::Oracles("llama.cpp");
  if (!llama_cpp.problem.empty()) GTEST_SKIP() << "oracle unavailable: " << llama_cpp.problem;
  auto inputs = WriteMixedInputs(temp_.path(), /*with_chat=*/false);
  const fs::path story = Fixtures() / "tinystories" / "tinystories_sample.txt";
  if (fs::exists(story)) inputs.push_back(story);
  ExpectCorporaMatchOracle(Stories260K().string(),
                           {"--gguf", Stories260K().string(), "--add-bos", "--llama-cpp-tokenize",
                            llama_cpp.Path("llama_cpp_tokenize")},
                           {"64:max:123", "10:3:5"}, inputs, temp_.path());
}

// Without the oracle: the manifest records what was done, and errors say what is wrong.
class CorpusBuild : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(Stories260K())) GTEST_SKIP() << "fixture absent: " << Stories260K();
  }
  std::string BuildError(const std::vector<fs::path>& inputs, int64_t ctx_len, int64_t n_seqs) {
    try {
      BuildCorpus({.tokenizer = Stories260K().string(),
                   .inputs = inputs,
                   .out_dir = temp_.path() / "out",
                   .ctx_len = ctx_len,
                   .n_seqs = n_seqs,
                   .quiet = true});
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  }
  testing::TempDir temp_;
};

TEST_F(CorpusBuild, ManifestRecordsTokenizerSeedSourcesAndSha) {
  const auto inputs = WriteMixedInputs(temp_.path(), /*with_chat=*/false);
  const CorpusBuildResult r = BuildCorpus({.tokenizer = Stories260K().string(),
                                           .inputs = inputs,
                                           .out_dir = temp_.path() / "c",
                                           .ctx_len = 8,
                                           .n_seqs = 4,
                                           .seed = 9,
                                           .quiet = true});
  const json m = json::parse(ReadFileToString(temp_.path() / "c" / "manifest.json"));
  EXPECT_EQ(m["format_version"], 1);
  EXPECT_EQ(m["kind"], "kl-eval-corpus");
  EXPECT_EQ(m["tokenizer"], Stories260K().string());
  EXPECT_EQ(m["vocab_size"], 512);
  EXPECT_EQ(m["ctx_len"], 8);
  EXPECT_EQ(m["n_seqs"], 4);
  EXPECT_EQ(m["n_tokens"], 32);
  EXPECT_EQ(m["seed"], 9);
  EXPECT_TRUE(m["chat_template"].is_null());
  ASSERT_EQ(m["sources"].size(), 2u);
  EXPECT_EQ(m["sources"][0]["sha256"], Sha256FileHex(inputs[0]));
  EXPECT_EQ(m["sources"][1]["rows"], 6);  // the blank line is no row; the "" row is
  EXPECT_EQ(m["tokens_sha256"], Sha256FileHex(temp_.path() / "c" / "tokens.bin"));
  EXPECT_EQ(r.tokens_sha256, m["tokens_sha256"]);
  EXPECT_EQ(r.rows_total, 7);
}

TEST_F(CorpusBuild, TooLittleTextSaysHowManyTokensAreNeededAndGiven) {
  Write(temp_.path() / "small.jsonl", "{\"text\": \"One short row.\"}\n");
  const std::string e = BuildError({temp_.path() / "small.jsonl"}, 64, 8);
  EXPECT_NE(e.find("needs 512 tokens"), std::string::npos) << e;
  EXPECT_NE(e.find("1 row(s) of the inputs gave"), std::string::npos) << e;
}

TEST_F(CorpusBuild, MalformedRowsNameTheFileAndLine) {
  const fs::path bad = temp_.path() / "bad.jsonl";
  Write(bad, "{\"text\": \"fine\"}\n\n{\"text\": \"broken\"\n");
  std::string e = BuildError({bad}, 4, 1);
  EXPECT_NE(e.find(fmt::format("{}' line 3: not valid JSON", bad.string())), std::string::npos)
      << e;

  Write(bad, "{\"text\": \"fine\"}\n{\"title\": \"x\", \"body\": \"y\"}\n");
  e = BuildError({bad}, 4, 1);
  EXPECT_NE(e.find("line 2: a row needs \"text\""), std::string::npos) << e;
  EXPECT_NE(e.find("[title, body]"), std::string::npos) << e;

  Write(bad, "[1, 2]\n");
  e = BuildError({bad}, 4, 1);
  EXPECT_NE(e.find("line 1: expected a JSON object per line, found array"), std::string::npos) << e;

  Write(bad, "{\"text\": 5}\n");
  e = BuildError({bad}, 4, 1);
  EXPECT_NE(e.find("line 1: \"text\" must be a string, found number"), std::string::npos) << e;

  Write(bad, "{\"prompt\": 3, \"chosen\": \"x\"}\n");
  e = BuildError({bad}, 4, 1);
  EXPECT_NE(e.find("line 1: \"prompt\" must be a string or a list"), std::string::npos) << e;
}

TEST_F(CorpusBuild, UnsupportedInputsAreErrors) {
  Write(temp_.path() / "data.json", "[{\"text\": \"a\"}]\n");
  std::string e = BuildError({temp_.path() / "data.json"}, 4, 1);
  EXPECT_NE(e.find("a .json file cannot be read; give .jsonl"), std::string::npos) << e;
  Write(temp_.path() / "binary.raw", std::string("\xff\xfe text", 7));
  e = BuildError({temp_.path() / "binary.raw"}, 4, 1);
  EXPECT_NE(e.find("binary.raw': "), std::string::npos) << e;  // not UTF-8
  e = BuildError({temp_.path() / "missing.txt"}, 4, 1);
  EXPECT_NE(e.find("missing.txt' is not a readable file"), std::string::npos) << e;
}

// stories260K has no chat template: a chat row is an error naming the row; but only when the
// row is used (rows past the point where the corpus is full are never rendered).
TEST_F(CorpusBuild, ChatRowWithoutATemplateIsAnErrorNamingTheRow) {
  const fs::path chat = temp_.path() / "chat.jsonl";
  Write(chat, "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}]}\n");
  const std::string e = BuildError({chat}, 4, 1);
  EXPECT_NE(e.find(fmt::format("{}' line 1: the chat template failed", chat.string())),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("no chat template"), std::string::npos) << e;
}

TEST_F(CorpusBuild, ZeroSizesAreErrors) {
  Write(temp_.path() / "a.txt", "text");
  EXPECT_NE(BuildError({temp_.path() / "a.txt"}, 0, 1).find("--ctx-len must be >= 1"),
            std::string::npos);
  EXPECT_NE(BuildError({temp_.path() / "a.txt"}, 1, 0).find("--n-seqs must be >= 1"),
            std::string::npos);
}

}  // namespace
}  // namespace proctor
