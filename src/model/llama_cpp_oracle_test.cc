// llama.cpp as a second oracle: stories260K's teacher-forced logits agree with llama.cpp's F32
// path (F32 KV cache, flash attention off) to 1e-4. tools/oracle/setup.sh builds llama.cpp from
// the llama-cpp-python 0.3.36 sdist and compiles tools/llama_cpp_logits.c against its libllama;
// the test skips (with the reason) when that is impossible.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>

#include "model/greedy.h"
#include "model/load.h"
#include "model/test_util.h"
#include "util/testing_oracles.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;

bool RunShell(const std::string& command, std::string* out) {
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return false;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) out->append(buffer, n);
  return pclose(pipe) == 0;
}

TEST(LlamaCppOracle, Stories260KLogitsAgreeWithLlamaCppF32) {
  const fs::path gguf = proctor::testing::FixturesDir() / "stories260K" / "stories260K.gguf";
  if (!fs::exists(gguf)) GTEST_SKIP() << "fixture absent: " << gguf;
  const auto& llama_cpp = proctor::testing::Oracles("llama.cpp");
  if (!llama_cpp.problem.empty()) GTEST_SKIP() << "oracle unavailable: " << llama_cpp.problem;
  const std::string tool = llama_cpp.Path("llama_cpp_logits");
  const std::string lib = llama_cpp.Path("llama_cpp_lib");
  const std::string oracle_dir = std::string(PROCTOR_BINARY_DIR) + "/oracle/runs";
  fs::create_directories(oracle_dir);

  const LoadedModel loaded = LoadModel(gguf.string());
  const RuntimeModel model(loaded.config, loaded.weights, RuntimeOptions{});
  // A real sequence: BOS and the model's own greedy story (teacher-forced), 200 tokens.
  GreedyOptions greedy;
  greedy.max_new_tokens = 199;
  std::vector<int32_t> tokens = {1};
  const std::vector<int32_t> story = GreedyGenerate(model, tokens, greedy);
  tokens.insert(tokens.end(), story.begin(), story.end());
  ASSERT_EQ(tokens.size(), 200u);

  const std::string out_path = oracle_dir + "/stories260K.logits.f32";
  std::string ignored;
  ASSERT_TRUE(RunShell(fmt::format("{} {} {} {} {} 1 2>&1", tool, lib, gguf.string(),
                                   fmt::join(tokens, ","), out_path),
                       &ignored))
      << ignored;
  const size_t vocab = static_cast<size_t>(model.vocab_size());
  std::vector<float> reference(tokens.size() * vocab);
  std::ifstream in(out_path, std::ios::binary);
  in.read(reinterpret_cast<char*>(reference.data()),
          static_cast<std::streamsize>(reference.size() * sizeof(float)));
  ASSERT_TRUE(in.good()) << "short file " << out_path;

  float max_diff = 0.0f;
  RunTeacherForced(model, tokens, 64, [&](int64_t start, const MatView& logits) {
    for (int64_t r = 0; r < logits.rows; ++r) {
      const float* ref = reference.data() + static_cast<size_t>(start + r) * vocab;
      for (size_t i = 0; i < vocab; ++i) {
        max_diff = std::max(max_diff, std::abs(logits.RowAs<float>(r)[i] - ref[i]));
      }
    }
  });
  std::printf("[ distance ] stories260K vs llama.cpp F32: max |diff| %.3g\n", max_diff);
  EXPECT_LE(max_diff, 1e-4f);
}

}  // namespace
}  // namespace proctor
