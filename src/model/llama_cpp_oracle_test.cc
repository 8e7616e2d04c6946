// llama.cpp as a second oracle: stories260K's teacher-forced logits agree with llama.cpp's F32
// path (F32 KV cache, flash attention off) to 1e-4, and llama.cpp's HTTP server (llama-server,
// same settings, temperature 0) continues prompts with the engine's greedy tokens.
// tools/oracle/setup.sh builds llama.cpp from the llama-cpp-python 0.3.36 sdist and compiles
// tools/llama_cpp_logits.c against its libllama; the test skips (with the reason) when that is
// impossible.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/greedy.h"
#include "model/load.h"
#include "model/teacher_forced.h"
#include "util/testing_files.h"
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
  const Tensor logits = AllTeacherForcedLogits(model, tokens, 64);
  for (size_t i = 0; i < reference.size(); ++i) {
    max_diff = std::max(max_diff, std::abs(logits.f32()[i] - reference[i]));
  }
  std::printf("[ distance ] stories260K vs llama.cpp F32: max |diff| %.3g\n", max_diff);
  EXPECT_LE(max_diff, 1e-4f);
}

// llama-server's /completion at temperature 0 (greedy; F32 KV cache, flash attention off, one
// slot, no prompt cache) on stories260K: the same new tokens as the engine's greedy decoding, from
// BOS alone and from three story prefixes, 48 tokens each (EOS ignored).
TEST(LlamaCppOracle, LlamaServerGreedyCompletionsEqualTheEngines) {
  const fs::path gguf = proctor::testing::FixturesDir() / "stories260K" / "stories260K.gguf";
  if (!fs::exists(gguf)) GTEST_SKIP() << "fixture absent: " << gguf;
  if (const std::string problem = proctor::testing::OraclesProblem({"python", "llama.cpp"});
      !problem.empty()) {
    GTEST_SKIP() << "oracle unavailable: " << problem;
  }
  const LoadedModel loaded = LoadModel(gguf.string());
  const RuntimeModel model(loaded.config, loaded.weights, RuntimeOptions{});
  GreedyOptions greedy;
  greedy.max_new_tokens = 48;
  const std::vector<std::vector<int32_t>> prompts = {
      {1}, {1, 403, 407, 261, 378}, {1, 71, 290, 300, 268, 341}, {1, 333, 423, 280, 427, 266, 33}};
  nlohmann::json requests = nlohmann::json::array();
  for (const auto& prompt : prompts) {
    requests.push_back({{"prompt", prompt},
                        {"n_predict", greedy.max_new_tokens},
                        {"temperature", 0},
                        {"ignore_eos", true},
                        {"cache_prompt", false},
                        {"return_tokens", true}});
  }
  const proctor::testing::TempDir tmp;
  const fs::path requests_path = tmp.path() / "requests.json";
  std::ofstream(requests_path) << requests.dump();
  std::string out;
  const std::string command = fmt::format(
      "{} {}/tools/oracle/llama_server_complete.py {} {} {} -- --ctx-size 256 --parallel 1 "
      "--threads 2 --cache-type-k f32 --cache-type-v f32 --flash-attn off 2>&1",
      proctor::testing::Oracles("python").Path("python"), PROCTOR_SOURCE_DIR,
      proctor::testing::Oracles("llama.cpp").Path("llama_server"), gguf.string(),
      requests_path.string());
  ASSERT_TRUE(RunShell(command, &out)) << out;
  const nlohmann::json responses = nlohmann::json::parse(out);
  ASSERT_EQ(responses.size(), prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    SCOPED_TRACE(fmt::format("prompt {}", fmt::join(prompts[i], ",")));
    const std::vector<int32_t> mine = GreedyGenerate(model, prompts[i], greedy);
    const auto theirs = responses[i]["tokens"].get<std::vector<int32_t>>();
    EXPECT_EQ(mine, theirs);
    std::printf("[ llama-server ] %zu-token prompt: %zu tokens, %s\n", prompts[i].size(),
                theirs.size(), mine == theirs ? "identical" : "different");
  }
}

}  // namespace
}  // namespace proctor
