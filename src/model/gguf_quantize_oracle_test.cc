// proctor's GGUF writer against llama-quantize itself (llama_model_quantize through
// tools/llama_quantize_oracle.cc, built by tools/oracle/setup.sh from the llama-cpp-python 0.3.36
// sdist): for every file type proctor writes, QuantizeModelToGguf makes the very file llama.cpp
// makes from the same source, byte for byte from the header to the last tensor's padding, so
// the metadata (tokenizer, chat template, file type), the tensor order, the per-tensor types
// (llama.cpp's rules and shape fallbacks) and every block agree. Two sources:
//   - stories260K (a trained model with its tokenizer; rows of 64 and 172 values send every
//     K-quant through the shape fallbacks);
//   - an 8-layer random llama with rows of 256 and 512 (tools/write_quant_test_model.py): the
//     K-quants themselves and the q4_k_s / q4_k_m / q5_k_m per-layer rules.
// llama.cpp then runs proctor's q4_k_m stories260K file (tools/llama_cpp_logits.c): it loads, and
// its logits are finite.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "model/gguf_quantize.h"
#include "model/gguf_recipe.h"
#include "util/testing_files.h"
#include "util/testing_oracles.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;

std::string FileBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The source model of a test: "stories260K" (the fixture) or "random8" (written into `dir`).
fs::path SourceModel(const std::string& which, const fs::path& dir, std::string* skip) {
  if (which == "stories260K") {
    fs::path gguf = testing::FixturesDir() / "stories260K" / "stories260K.gguf";
    if (!fs::exists(gguf)) *skip = "fixture absent: " + gguf.string();
    return gguf;
  }
  fs::path gguf = dir / "random8.gguf";
  const testing::CommandOutput r =
      testing::RunCommand(fmt::format("/usr/bin/python3 {}/tools/write_quant_test_model.py {} 8",
                                      PROCTOR_SOURCE_DIR, gguf.string()));
  if (r.status != 0) *skip = "tools/write_quant_test_model.py failed: " + r.output;
  return gguf;
}

struct Case {
  std::string source;
  GgufFileType type;
};

std::vector<Case> AllCases() {
  std::vector<Case> cases;
  for (const char* source : {"stories260K", "random8"}) {
    for (const GgufFileType& type : GgufFileTypes()) cases.push_back(Case{source, type});
  }
  return cases;
}

class GgufQuantizeOracle : public ::testing::TestWithParam<Case> {};

TEST_P(GgufQuantizeOracle, SameFileAsLlamaQuantize) {
  const auto& llama_cpp = testing::Oracles("llama.cpp");
  if (!llama_cpp.problem.empty()) GTEST_SKIP() << "oracle unavailable: " << llama_cpp.problem;
  const Case& c = GetParam();
  testing::TempDir dir;
  std::string skip;
  const fs::path source = SourceModel(c.source, dir.path(), &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;

  const fs::path theirs = dir.path() / "llama.gguf", ours = dir.path() / "proctor.gguf";
  fs::create_directories(dir.path() / "dump");
  const testing::CommandOutput r = testing::RunCommand(
      fmt::format("{} {} {} {} {}", llama_cpp.Path("llama_quantize_oracle"), source.string(),
                  theirs.string(), c.type.llama_ftype, (dir.path() / "dump").string()));
  ASSERT_EQ(r.status, 0) << r.output;
  const GgufQuantizeReport report = QuantizeModelToGguf(
      source.string(), ours, GgufQuantizeOptions{.type = std::string(c.type.name)});
  EXPECT_EQ(report.file_bytes, fs::file_size(ours));
  const std::string a = FileBytes(theirs), b = FileBytes(ours);
  ASSERT_EQ(a.size(), b.size());
  size_t first_difference = 0;
  while (first_difference < a.size() && a[first_difference] == b[first_difference]) {
    ++first_difference;
  }
  EXPECT_EQ(first_difference, a.size()) << "the files differ first at byte " << first_difference;
}

INSTANTIATE_TEST_SUITE_P(EveryFileType, GgufQuantizeOracle, ::testing::ValuesIn(AllCases()),
                         [](const ::testing::TestParamInfo<Case>& param) {
                           return param.param.source + "_" + std::string(param.param.type.name);
                         });

TEST(GgufQuantizeOracle, LlamaCppRunsProctorsFile) {
  const auto& llama_cpp = testing::Oracles("llama.cpp");
  if (!llama_cpp.problem.empty()) GTEST_SKIP() << "oracle unavailable: " << llama_cpp.problem;
  testing::TempDir dir;
  std::string skip;
  const fs::path source = SourceModel("stories260K", dir.path(), &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  const fs::path ours = dir.path() / "stories260K-q4_k_m.gguf";
  QuantizeModelToGguf(source.string(), ours, GgufQuantizeOptions{.type = "q4_k_m"});
  const fs::path logits = dir.path() / "logits.f32";
  const testing::CommandOutput r = testing::RunCommand(
      fmt::format("{} {} {} 1,403,407,261,378 {} 1", llama_cpp.Path("llama_cpp_logits"),
                  llama_cpp.Path("llama_cpp_lib"), ours.string(), logits.string()));
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string bytes = FileBytes(logits);
  ASSERT_EQ(bytes.size(), 5u * 512u * sizeof(float));
  std::vector<float> values(5 * 512);
  std::memcpy(values.data(), bytes.data(), bytes.size());
  for (const float v : values) ASSERT_TRUE(std::isfinite(v));
}

}  // namespace
}  // namespace proctor
