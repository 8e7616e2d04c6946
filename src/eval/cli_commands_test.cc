// End to end through the built `proctor` binary: demo, inspect (valid and damaged dumps) and
// kl's errors. Skips when the binary has not been built.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

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
  const CommandRun demo = Proctor(fmt::format("demo --dir {} --vocab 500 --ctx 16 --top-k 32", dir.string()));
  ASSERT_EQ(demo.status, 0) << demo.output;
  EXPECT_NE(demo.output.find("SYNTHETIC"), std::string::npos);
  EXPECT_NE(demo.output.find("noise sigma 0.5"), std::string::npos);
  const CommandRun ok = Proctor("inspect " + dir.string());
  EXPECT_EQ(ok.status, 0) << ok.output;
  EXPECT_NE(ok.output.find("integrity: OK (60 records"), std::string::npos) << ok.output;
  EXPECT_NE(ok.output.find("top_k              32"), std::string::npos) << ok.output;
  // A NaN logit in seq-2.bin, record 1: inspect fails and names the file.
  const auto seq2 = dir / "seq-2.bin";
  std::string bytes = testing::ReadBytes(seq2);
  const size_t record = 6 * 32 + 4;
  bytes[record + 4 * 32 + 2] = 0x00;
  bytes[record + 4 * 32 + 3] = 0x7E;
  testing::WriteBytes(seq2, bytes);
  const CommandRun bad = Proctor("inspect " + dir.string());
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.output.find(seq2.string()), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("NaN"), std::string::npos) << bad.output;
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
  EXPECT_NE(missing_dump.output.find("/nonexistent/dump"), std::string::npos) << missing_dump.output;
}

}  // namespace
}  // namespace proctor
