// End to end through the built `proctor` binary: demo (--dir, --json), inspect (valid and
// damaged dumps), dump at 1 and 2 threads, and kl's errors. Skips when the binary has not been
// built.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "eval/testing_dumps.h"

namespace proctor {
namespace {

struct CommandRun {
  int status;
  std::string output;  // stdout and stderr
};

CommandRun Proctor(const std::string& args) {
  FILE* pipe = ::popen(fmt::format("{} --quiet {} 2>&1", PROCTOR_BIN, args).c_str(), "r");
  std::string out;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.append(buffer, n);
  return {::pclose(pipe), out};
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(PROCTOR_BIN)) GTEST_SKIP() << PROCTOR_BIN << " is not built";
  }
  testing::TempDir temp_;
};

TEST_F(Cli, DemoThenInspectThenDamage) {
  const auto dir = temp_.path() / "demo";
  const auto json_path = temp_.path() / "demo.json";
  const CommandRun demo =
      Proctor(fmt::format("demo --dir {} --n-seqs 3 --ctx-len 16 --top-k 32 --bits 4 --json {}",
                          dir.string(), json_path.string()));
  ASSERT_EQ(demo.status, 0) << demo.output;
  EXPECT_NE(demo.output.find("teacher (bf16)"), std::string::npos) << demo.output;
  EXPECT_NE(demo.output.find("affine4-g64"), std::string::npos) << demo.output;
  EXPECT_NE(demo.output.find("perplexity"), std::string::npos) << demo.output;
  const auto json = nlohmann::json::parse(testing::ReadBytes(json_path));
  EXPECT_EQ(json["schema"], "proctor-results");
  EXPECT_EQ(json["command"], "demo");
  EXPECT_EQ(json["inputs"][0]["role"], "teacher");
  EXPECT_EQ(json["outputs"].size(), 3u);  // corpus, dump, the 4-bit candidate
  const auto& candidates = json["results"]["candidates"];
  ASSERT_EQ(candidates.size(), 2u);
  EXPECT_EQ(candidates[0]["kl"]["top1_agreement"], 1.0);
  EXPECT_TRUE(std::filesystem::exists(dir / "teacher" / "model.safetensors"));  // --dir keeps it
  const CommandRun ok = Proctor("inspect " + (dir / "dump").string());
  EXPECT_EQ(ok.status, 0) << ok.output;
  EXPECT_NE(ok.output.find("integrity: OK (45 records"), std::string::npos) << ok.output;
  EXPECT_NE(ok.output.find("top_k              32"), std::string::npos) << ok.output;
  // A NaN logit in seq-2.bin, record 1: inspect fails and names the file.
  const auto seq2 = dir / "dump" / "seq-2.bin";
  std::string bytes = testing::ReadBytes(seq2);
  const size_t record = 6 * 32 + 4;
  bytes[record + 4 * 32 + 2] = 0x00;
  bytes[record + 4 * 32 + 3] = 0x7E;
  testing::WriteBytes(seq2, bytes);
  const CommandRun bad = Proctor("inspect " + (dir / "dump").string());
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.output.find(seq2.string()), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("NaN"), std::string::npos) << bad.output;
}

// `proctor dump` selects a chunk's top-k across the thread pool and writes the records in
// position order: the files are byte-identical at 1 and 2 threads (an uneven chunk of 7 rows).
TEST_F(Cli, DumpIsByteIdenticalAtOneAndTwoThreads) {
  const auto dir = temp_.path() / "demo";
  const CommandRun demo =
      Proctor(fmt::format("demo --dir {} --n-seqs 3 --ctx 40 --top-k 16 --bits 8", dir.string()));
  ASSERT_EQ(demo.status, 0) << demo.output;
  // The old spelling of --ctx-len still works, with a note.
  EXPECT_NE(demo.output.find("--ctx is now --ctx-len"), std::string::npos) << demo.output;
  std::vector<std::filesystem::path> outs;
  for (const int threads : {1, 2}) {
    outs.push_back(temp_.path() / fmt::format("dump-t{}", threads));
    const CommandRun dump = Proctor(fmt::format(
        "--threads {} dump --teacher {} --corpus {} --top-k 100 --chunk 7 --out {}", threads,
        (dir / "teacher").string(), (dir / "corpus").string(), outs.back().string()));
    ASSERT_EQ(dump.status, 0) << dump.output;
  }
  for (const char* name : {"tokens.bin", "seq-0.bin", "seq-1.bin", "seq-2.bin"}) {
    const std::string one = testing::ReadBytes(outs[0] / name);
    if (name[0] == 's') {
      EXPECT_EQ(one.size(), 39u * (6 * 100 + 4)) << name;  // 39 records
    }
    EXPECT_TRUE(one == testing::ReadBytes(outs[1] / name)) << name << " differs";
  }
}

TEST_F(Cli, KlNamesAMissingCandidateAndAMissingDump) {
  testing::TinyCase().WriteDump(temp_.path());
  const CommandRun missing_model = Proctor(fmt::format(
      "kl --reference-logits {} --candidate /nonexistent/model-dir", temp_.path().string()));
  EXPECT_NE(missing_model.status, 0);
  EXPECT_NE(missing_model.output.find("/nonexistent/model-dir"), std::string::npos)
      << missing_model.output;
  const CommandRun missing_dump = Proctor("kl --reference-logits /nonexistent/dump --candidate x");
  EXPECT_NE(missing_dump.status, 0);
  EXPECT_NE(missing_dump.output.find("/nonexistent/dump"), std::string::npos)
      << missing_dump.output;
}

}  // namespace
}  // namespace proctor
