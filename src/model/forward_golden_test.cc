// The forward pass against Hugging Face transformers' own logits (../shared/fixtures/hf-goldens):
// prompt logits in --compute f32 within 1e-4, the greedy continuation token for token, and the
// logits of every greedy step. Also: chunked prefill invariance and run-to-run determinism.
// Skips (with a message) when the fixtures are absent.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/greedy.h"
#include "model/model_config.h"
#include "model/runtime_model.h"
#include "model/safetensors.h"
#include "model/test_util.h"
#include "util/thread_pool.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;

struct Golden {
  ModelConfig config;
  WeightStore weights;
  std::vector<int32_t> prompt, greedy;
  std::vector<float> logits;         // [prompt, vocab]
  std::vector<float> greedy_logits;  // [greedy, vocab]
};

std::vector<float> ReadF32(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<float> out(fs::file_size(path) / sizeof(float));
  in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(out.size() * 4));
  return out;
}

fs::path CaseDir(const std::string& name) {
  return proctor::testing::FixturesDir() / "hf-goldens" / name;
}

std::unique_ptr<Golden> LoadGolden(const std::string& name) {
  const fs::path dir = CaseDir(name);
  if (!fs::exists(dir / "model.safetensors")) return nullptr;
  auto g = std::make_unique<Golden>();
  std::ifstream config_file(dir / "config.json");
  g->config = ParseHfConfig(nlohmann::json::parse(config_file), (dir / "config.json").string());
  g->weights.set_origin(dir.string());
  LoadSafetensorsDirectory(dir, g->weights);
  std::ifstream tokens_file(dir / "tokens.json");
  const auto tokens = nlohmann::json::parse(tokens_file);
  g->prompt = tokens["prompt"].get<std::vector<int32_t>>();
  g->greedy = tokens["greedy"].get<std::vector<int32_t>>();
  g->logits = ReadF32(dir / "logits.f32");
  g->greedy_logits = ReadF32(dir / "greedy_logits.f32");
  return g;
}

// Prompt logits [T, V] through RunTeacherForced with the given chunk.
std::vector<float> PromptLogits(const RuntimeModel& model, std::span<const int32_t> prompt,
                                int64_t chunk) {
  const size_t v = static_cast<size_t>(model.vocab_size());
  std::vector<float> out(prompt.size() * v);
  RunTeacherForced(model, prompt, chunk, [&](int64_t start, const MatView& logits) {
    for (int64_t r = 0; r < logits.rows; ++r) {
      std::copy_n(logits.RowAs<float>(r), v, out.begin() + (start + r) * v);
    }
  });
  return out;
}

float MaxAbsDiff(std::span<const float> a, std::span<const float> b) {
  EXPECT_EQ(a.size(), b.size());
  float m = 0.0f;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

class HfGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(HfGolden, PromptLogitsGreedyAndStepLogitsMatchTransformers) {
  const auto g = LoadGolden(GetParam());
  if (!g) GTEST_SKIP() << "fixture absent: " << CaseDir(GetParam());
  const RuntimeModel model(g->config, g->weights, RuntimeOptions{});
  const std::vector<float> logits = PromptLogits(model, g->prompt, 512);
  const float prompt_diff = MaxAbsDiff(logits, g->logits);
  EXPECT_LE(prompt_diff, 1e-4f) << GetParam();

  std::vector<float> steps;
  GreedyOptions options;
  options.max_new_tokens = static_cast<int>(g->greedy.size());
  options.on_step = [&](int, std::span<const float> row) {
    steps.insert(steps.end(), row.begin(), row.end());
  };
  const std::vector<int32_t> greedy = GreedyGenerate(model, g->prompt, options);
  EXPECT_EQ(greedy, g->greedy) << GetParam();
  const float step_diff = MaxAbsDiff(steps, g->greedy_logits);
  EXPECT_LE(step_diff, 1e-4f) << GetParam();

  // --compute bf16: measured distance (documented in docs/engine.md), loosely bounded.
  RuntimeOptions bf16_options;
  bf16_options.compute = ops::ComputeMode::kBF16;
  const RuntimeModel bf16(g->config, g->weights, bf16_options);
  const float bf16_diff = MaxAbsDiff(PromptLogits(bf16, g->prompt, 512), g->logits);
  std::printf("[ distance ] %s: f32 prompt %.3g, f32 steps %.3g, bf16 prompt %.3g\n",
              GetParam().c_str(), prompt_diff, step_diff, bf16_diff);
  RecordProperty("bf16_max_abs_diff", std::to_string(bf16_diff));
  EXPECT_GT(bf16_diff, 0.0f);  // bf16 rounding is really applied
  EXPECT_LE(bf16_diff, 0.5f);
}

INSTANTIATE_TEST_SUITE_P(Cases, HfGolden,
                         ::testing::Values("llama-f32", "llama-bf16-tied-rope-llama3",
                                           "qwen2-f32-bias", "qwen3-f32", "qwen3-bf16",
                                           "qwen3-f32-long"),
                         [](const auto& case_info) {
                           std::string n = case_info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

TEST(HfGoldenChunking, LongPromptIsChunkInvariantAndDeterministic) {
  const auto g = LoadGolden("qwen3-f32-long");
  if (!g) GTEST_SKIP() << "fixture absent: " << CaseDir("qwen3-f32-long");
  ASSERT_EQ(g->prompt.size(), 600u);
  const RuntimeModel model(g->config, g->weights, RuntimeOptions{});
  const std::vector<float> reference = PromptLogits(model, g->prompt, 512);
  EXPECT_LE(MaxAbsDiff(reference, g->logits), 1e-4f);
  for (const int64_t chunk : {1, 7, 64}) {
    EXPECT_LE(MaxAbsDiff(PromptLogits(model, g->prompt, chunk), reference), 1e-5f)
        << "chunk " << chunk;
  }
  // Same chunk, same thread count: bit-identical.
  const std::vector<float> again = PromptLogits(model, g->prompt, 512);
  EXPECT_TRUE(std::equal(reference.begin(), reference.end(), again.begin()));
  const std::vector<float> seven_a = PromptLogits(model, g->prompt, 7);
  const std::vector<float> seven_b = PromptLogits(model, g->prompt, 7);
  EXPECT_TRUE(std::equal(seven_a.begin(), seven_a.end(), seven_b.begin()));
}

TEST(HfGoldenRefusals, GemmaAndHybridsAreRefusedWithTheArchitectureNamed) {
  for (const char* name : {"gemma2-f32", "gemma3-f32", "qwen3_next-f32", "qwen3_5-f32"}) {
    const fs::path path = CaseDir(name) / "config.json";
    if (!fs::exists(path)) GTEST_SKIP() << "fixture absent: " << path;
    std::ifstream in(path);
    const auto json = nlohmann::json::parse(in);
    const std::string type = json["model_type"];
    EXPECT_ERROR_CONTAINS(ParseHfConfig(json, path.string()), type.c_str());
  }
}

}  // namespace
}  // namespace proctor
