// The results JSON envelope: its keys, input hashes against sha256sum (an independent
// implementation), the timing split arithmetic and the atomic write.
#include "eval/runners/results_json.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "eval/formats/corpus.h"
#include "eval/testing_dumps.h"

namespace proctor {
namespace {

using testing::TempDir;

std::string Sha256sum(const std::filesystem::path& path) {
  FILE* pipe = ::popen(("sha256sum '" + path.string() + "'").c_str(), "r");
  char buffer[65] = {};
  const size_t n = std::fread(buffer, 1, 64, pipe);
  ::pclose(pipe);
  return std::string(buffer, n);
}

std::filesystem::path Stories260K() {
  const char* env = std::getenv("PROCTOR_FIXTURES");
  return std::filesystem::path(env != nullptr ? env : PROCTOR_FIXTURES_DEFAULT) / "stories260K" /
         "stories260K.gguf";
}

TEST(ResultsJson, EnvelopeHoldsEveryDocumentedKeyAndIsWrittenAtomically) {
  TempDir temp;
  testing::WriteBytes(temp.path() / "data.txt", "hello\n");
  WriteCorpus(temp.path() / "corpus", std::vector<int32_t>{1, 2, 3, 4}, 2,
              {{"tokenizer", "tok"}, {"vocab_size", 10}});
  testing::TinyCase().WriteDump(temp.path() / "dump");
  ResultsEnvelope env{.command = "kl", .threads = 3};
  env.inputs.push_back(DescribeFileInput("data", temp.path() / "data.txt"));
  env.inputs.push_back(DescribeCorpusInput("corpus", temp.path() / "corpus"));
  env.inputs.push_back(DescribeReferenceLogitsInput("reference_logits", temp.path() / "dump"));
  env.inputs.push_back(DescribeModelInput("candidate", "no-such-model-anywhere"));
  env.settings = {{"chunk_size", 16}};
  env.results = {{"kl", {{"mean", 0.5}}}};
  env.timings = {.total_seconds = 10,
                 .forward_seconds = 6,
                 .scoring_seconds = 1,
                 .io_seconds = 0.5,
                 .load_seconds = 2};
  env.warnings = {"w"};
  const auto path = temp.path() / "out.json";
  WriteResultsJson(path, env);
  const auto j = nlohmann::json::parse(testing::ReadBytes(path));
  std::vector<std::string> keys;
  for (const auto& [key, value] : j.items()) keys.push_back(key);
  // Key order as documented in docs/results-json.md (nlohmann::json sorts, so compare sets).
  for (const char* key :
       {"schema", "schema_version", "command", "proctor_version", "threads", "command_line",
        "created", "inputs", "settings", "results", "timings", "warnings", "outputs"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(keys.size(), 13u);
  EXPECT_EQ(j["schema"], "proctor-results");
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["command"], "kl");
  EXPECT_EQ(j["threads"], 3);
  EXPECT_FALSE(j["proctor_version"].get<std::string>().empty());
  ASSERT_FALSE(j["command_line"].empty());
  EXPECT_NE(j["command_line"][0].get<std::string>().find("eval_test"), std::string::npos);
  EXPECT_EQ(j["inputs"][0]["sha256"], Sha256sum(temp.path() / "data.txt"));
  EXPECT_EQ(j["inputs"][0]["bytes"], 6);
  EXPECT_EQ(j["inputs"][1]["kind"], "corpus");
  EXPECT_EQ(j["inputs"][1]["tokens_sha256"], Sha256sum(temp.path() / "corpus" / "tokens.bin"));
  EXPECT_EQ(j["inputs"][1]["manifest_sha256"], Sha256sum(temp.path() / "corpus" / "manifest.json"));
  EXPECT_EQ(j["inputs"][1]["vocab_size"], 10);
  EXPECT_EQ(j["inputs"][2]["kind"], "reference-logits");
  EXPECT_EQ(j["inputs"][2]["tokens_sha256"], Sha256sum(temp.path() / "dump" / "tokens.bin"));
  EXPECT_EQ(j["inputs"][2]["manifest_sha256"], Sha256sum(temp.path() / "dump" / "manifest.json"));
  EXPECT_EQ(j["inputs"][2]["model"], "tiny-teacher");
  EXPECT_EQ(j["inputs"][3]["kind"], "unresolved");
  EXPECT_EQ(j["timings"]["other_seconds"], 2.5);
  EXPECT_EQ(j["timings"]["forward_seconds"], 6);
  EXPECT_EQ(j["results"]["kl"]["mean"], 0.5);
  EXPECT_EQ(j["warnings"][0], "w");
  // Nothing but the file itself is left behind (the temporary was renamed).
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(temp.path())) {
    files += entry.is_regular_file() ? 1 : 0;
  }
  EXPECT_EQ(files, 2);  // data.txt and out.json
}

TEST(ResultsJson, AModelFileIsHashedWhole) {
  if (!std::filesystem::exists(Stories260K())) GTEST_SKIP() << "fixture absent: " << Stories260K();
  const auto j = DescribeModelInput("candidate", Stories260K().string());
  EXPECT_EQ(j["kind"], "model-file");
  EXPECT_EQ(j["sha256"], Sha256sum(Stories260K()));
  EXPECT_EQ(j["bytes"], std::filesystem::file_size(Stories260K()));
}

TEST(ResultsJson, AModelDirectoryListsEveryFile) {
  TempDir temp;
  testing::WriteBytes(temp.path() / "config.json", "{}");
  testing::WriteBytes(temp.path() / "model.safetensors", "xyz");
  const auto j = DescribeModelInput("reference", temp.path().string());
  EXPECT_EQ(j["kind"], "model-directory");
  ASSERT_EQ(j["files"].size(), 2u);
  EXPECT_EQ(j["files"][0]["name"], "config.json");
  EXPECT_EQ(j["files"][1]["sha256"], Sha256sum(temp.path() / "model.safetensors"));
}

TEST(ResultsJson, ScopedSecondsAccumulates) {
  double sink = 1.0;
  { ScopedSeconds t(&sink); }
  EXPECT_GE(sink, 1.0);
  EXPECT_LT(sink, 2.0);
}

}  // namespace
}  // namespace proctor
