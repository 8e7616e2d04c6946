// The forward pass against Hugging Face transformers' own logits (../shared/fixtures/hf-goldens):
// prompt logits in --compute f32 within 1e-4, the greedy continuation token for token, and the
// logits of every greedy step. Also: chunked prefill invariance and run-to-run determinism.
// Skips (with a message) when the fixtures are absent.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "formats/model_config.h"
#include "model/runtime_model.h"
#include "model/testing_goldens.h"
#include "util/testing_files.h"
#include "util/thread_pool.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;

using testing::Golden;
using testing::MaxAbsDiff;
using testing::PromptLogits;

fs::path CaseDir(const std::string& name) {
  return proctor::testing::FixturesDir() / "hf-goldens" / name;
}

std::unique_ptr<Golden> LoadGolden(const std::string& name) {
  return testing::LoadGolden(CaseDir(name));
}

class HfGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(HfGolden, PromptLogitsGreedyAndStepLogitsMatchTransformers) {
  const auto g = LoadGolden(GetParam());
  if (!g) GTEST_SKIP() << "fixture absent: " << CaseDir(GetParam());
  const testing::GoldenDistances d = testing::ExpectMatchesGolden(*g, GetParam());
  const float prompt_diff = d.prompt, step_diff = d.steps;

  // --compute bf16: measured distance (documented in docs/engine.md), loosely bounded.
  RuntimeOptions bf16_options;
  bf16_options.compute = ops::ComputeMode::kBF16;
  const RuntimeModel bf16(g->config, g->weights, bf16_options);
  const float bf16_diff = MaxAbsDiff(PromptLogits(bf16, g->prompt, 512), g->logits);
  std::printf(
      "[ distance ] %s: f32 prompt %.3g, f32 steps %.3g, f32 hidden %.3g, bf16 prompt %.3g\n",
      GetParam().c_str(), prompt_diff, step_diff, d.hidden, bf16_diff);
  RecordProperty("bf16_max_abs_diff", std::to_string(bf16_diff));
  EXPECT_GT(bf16_diff, 0.0f);  // bf16 rounding is really applied
  EXPECT_LE(bf16_diff, 0.5f);
}

INSTANTIATE_TEST_SUITE_P(Cases, HfGolden,
                         ::testing::Values("llama-f32", "llama-bf16-tied-rope-llama3",
                                           "qwen2-f32-bias", "qwen3-f32", "qwen3-bf16",
                                           "qwen3-f32-long", "gemma2-f32", "gemma3-f32",
                                           "qwen3_5-f32", "qwen3_next-f32"),
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

// Gemma and the Qwen3.5 hybrid: chunked prefill at several chunk sizes gives the prompt logits of
// one pass (the sliding layers' window crosses chunk boundaries and their caches drop rows the
// window left behind; the DeltaNet layers carry their conv and recurrent state across chunks).
TEST(HfGoldenChunking, WindowedAndHybridPromptsAreChunkInvariant) {
  for (const std::string name : {"gemma2-f32", "gemma3-f32", "qwen3_5-f32", "qwen3_next-f32"}) {
    SCOPED_TRACE(name);
    const auto g = LoadGolden(name);
    if (!g) GTEST_SKIP() << "fixture absent: " << CaseDir(name);
    const RuntimeModel model(g->config, g->weights, RuntimeOptions{});
    const std::vector<float> whole = PromptLogits(model, g->prompt, 512);
    EXPECT_LE(MaxAbsDiff(whole, g->logits), 1e-4f);
    // The matrix products' kernel depends on the chunk (a matrix-vector kernel for one token, a
    // blocked one for more), so their f32 roundings differ. The hybrids also change form: one-token
    // chunks run the recurrent delta rule, longer ones the chunked form, as transformers does, and
    // the gated RMSNorm after it scales each head's rounding up with the head. transformers 5.23's
    // own two forms give logits 2.8e-5 apart on qwen3_5-f32 (8.2e-6 on qwen3_next-f32), and
    // versions of it differ by 6e-5 there: hence the hybrids' looser bound.
    const float bound = name.starts_with("qwen3_") ? 5e-5f : 1e-5f;
    for (const int64_t chunk : {1, 7, 64}) {
      const float diff = MaxAbsDiff(PromptLogits(model, g->prompt, chunk), whole);
      EXPECT_LE(diff, bound) << "chunk " << chunk;
      std::printf("[ chunking ] %s chunk %lld: %.3g\n", name.c_str(), static_cast<long long>(chunk),
                  diff);
    }
  }
}

// A sliding layer's cache holds what its window can reach, not the context: after 240 positions
// in steps of 8 with window 16, the sliding layer (0) of gemma3-f32 holds at most 2 x 16 + 8 rows
// from a late first position, while the global layer (1) holds all 240.
TEST(HfGoldenChunking, SlidingLayerCacheIsBoundedByTheWindow) {
  const auto g = LoadGolden("gemma3-f32");
  if (!g) GTEST_SKIP() << "fixture absent: " << CaseDir("gemma3-f32");
  ASSERT_EQ(g->config.SlidingWindowForLayer(0), 16);
  ASSERT_EQ(g->config.SlidingWindowForLayer(1), 0);
  const RuntimeModel model(g->config, g->weights, RuntimeOptions{});
  ModelCache cache = model.MakeCache();
  std::vector<int32_t> ids(8);
  for (int step = 0; step < 30; ++step) {
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>((step * 8 + i) % 512);
    model.ForwardHidden(ids, cache);
    const FullAttentionKvCache& local = cache.Attention(0);
    EXPECT_LE(local.held(), 2 * 16 + 8) << "step " << step;
    // Still held: every key the step's first query (at length - 8) could see.
    EXPECT_LE(local.first_position(), std::max<int64_t>(0, local.length() - 8 - 16 + 1))
        << "step " << step;
  }
  EXPECT_EQ(cache.Attention(1).held(), 240);
  EXPECT_GT(cache.Attention(0).first_position(), 180);
  EXPECT_LT(cache.layer(0).MemoryBytes() * 3, cache.layer(1).MemoryBytes());
}

// Hugging Face's "dynamic" rope rescales its frequencies for a forward that reaches past
// max_position_embeddings (hf_oracle_test's dynamic case stays inside it and matches); past it
// the engine refuses, naming the limit and the position, instead of giving other logits.
TEST(HfGoldenRefusals, DynamicRopePastMaxPositionsIsRefused) {
  const fs::path dir = CaseDir("llama-f32");
  if (!fs::exists(dir / "config.json")) GTEST_SKIP() << "fixture absent: " << dir;
  std::ifstream in(dir / "config.json");
  nlohmann::json json = nlohmann::json::parse(in);
  json["max_position_embeddings"] = 32;
  json["rope_parameters"] = {{"rope_type", "dynamic"}, {"factor", 2.0}, {"rope_theta", 10000.0}};
  const ModelConfig config = ParseHfConfig(json, "dynamic");
  WeightStore weights;
  LoadSafetensorsDirectory(dir, weights);
  const RuntimeModel model(config, weights, RuntimeOptions{});
  ModelCache cache = model.MakeCache();
  const std::vector<int32_t> ids(32, 7);
  EXPECT_NO_THROW(model.ForwardHidden(ids, cache));  // positions 0..31: inside
  const std::vector<int32_t> one = {7};
  EXPECT_ERROR_CONTAINS(model.ForwardHidden(one, cache), "dynamic", "max_position_embeddings 32",
                        "33 positions");
}

}  // namespace
}  // namespace proctor
