// Unit tests of the engine pieces that need no fixtures: KV cache storage and growth, argmax
// ties, synthetic models of every weight type (chunking invariance, decode = prefill, bf16 KV
// and compute distances), teacher-forced chunks, and errors for bad input.
#include "model/runtime_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "model/greedy.h"
#include "model/kv_cache.h"
#include "model/load.h"
#include "model/synthetic_model.h"
#include "model/teacher_forced.h"
#include "ops/convert.h"
#include "util/half.h"
#include "util/testing_files.h"

namespace proctor {
namespace {

TEST(KvCache, AppendsGrowsAndRoundsToBf16) {
  FullAttentionKvCache f32(3, 3, KvScheme::Dense(DType::kF32), 1);
  FullAttentionKvCache bf16(3, 3, KvScheme::Dense(DType::kBF16), 1);
  Tensor rows = Tensor::F32(40, 3);  // more rows than the initial capacity (16)
  for (int64_t r = 0; r < 40; ++r) {
    for (int64_t c = 0; c < 3; ++c)
      rows.RowF32(r)[c] = 1.0f + 1e-3f * static_cast<float>(r * 3 + c);
  }
  for (int64_t begin = 0; begin < 40; begin += 13) {
    const int64_t end = std::min<int64_t>(40, begin + 13);
    f32.Append(rows.View().RowRange(begin, end), rows.View().RowRange(begin, end));
    bf16.Append(rows.View().RowRange(begin, end), rows.View().RowRange(begin, end));
  }
  ASSERT_EQ(f32.length(), 40);
  ASSERT_EQ(f32.Keys().rows(), 40);
  EXPECT_EQ(bf16.Values().dense.type, DType::kBF16);
  for (int64_t r = 0; r < 40; ++r) {
    for (int64_t c = 0; c < 3; ++c) {
      const float v = rows.RowF32(r)[c];
      EXPECT_EQ(f32.Keys().dense.RowAs<float>(r)[c], v);
      EXPECT_EQ(bf16.Keys().dense.RowAs<uint16_t>(r)[c], F32ToBF16(v));
      EXPECT_EQ(BF16ToF32(bf16.Values().dense.RowAs<uint16_t>(r)[c]), RoundToBF16(v));
    }
  }
  EXPECT_GE(f32.MemoryBytes(), size_t{40} * 3 * 4 * 2);
}

TEST(KvCache, SchemeParsing) {
  EXPECT_EQ(ParseKvScheme("bf16").key_storage, DType::kBF16);
  EXPECT_EQ(ParseKvScheme("f32").Name(), "f32");
  EXPECT_ERROR_CONTAINS(ParseKvScheme("q4_0"), "q4_0", "f32, bf16, f16");
  EXPECT_ERROR_CONTAINS(ParseComputeMode("f16"), "f16");
}

TEST(Greedy, ArgmaxTakesTheLowestIndexOnTiesAndSkipsNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> a = {1.0f, 3.0f, 2.0f, 3.0f};
  EXPECT_EQ(ArgmaxLowestIndex(a), 1);
  const std::vector<float> b = {nan, -1.0f, nan, -0.5f, -0.5f};
  EXPECT_EQ(ArgmaxLowestIndex(b), 3);
  const std::vector<float> c = {-INFINITY, -INFINITY};
  EXPECT_EQ(ArgmaxLowestIndex(c), 0);
}

float MaxAbsDiff(const Tensor& a, const Tensor& b) {
  float m = 0.0f;
  for (int64_t r = 0; r < a.rows(); ++r) {
    for (int64_t c = 0; c < a.cols(); ++c) {
      m = std::max(m, std::abs(a.RowF32(r)[c] - b.RowF32(r)[c]));
    }
  }
  return m;
}

// All logits of `tokens`, prefilled in chunks of `chunk`.
Tensor AllLogits(const RuntimeModel& model, std::span<const int32_t> tokens, int64_t chunk) {
  return AllTeacherForcedLogits(model, tokens, chunk);
}

class SyntheticTiny : public ::testing::TestWithParam<DType> {};

TEST_P(SyntheticTiny, ChunkingDecodeAndModesAgree) {
  const SyntheticModel m = BuildSyntheticModel(SyntheticConfig("tiny"), GetParam());
  std::vector<int32_t> tokens;
  tokens.reserve(70);
  for (int i = 0; i < 70; ++i) tokens.push_back((i * 37 + 11) % 512);
  const RuntimeModel model(m.config, m.weights);
  const Tensor whole = AllLogits(model, tokens, 512);
  for (const int64_t chunk : {1, 5, 64}) {
    EXPECT_LE(MaxAbsDiff(AllLogits(model, tokens, chunk), whole), 1e-5f) << "chunk " << chunk;
  }
  // Deterministic: the same chunking twice is bit-identical.
  EXPECT_EQ(MaxAbsDiff(AllLogits(model, tokens, 5), AllLogits(model, tokens, 5)), 0.0f);
  // The greedy step logits equal the teacher-forced logits of the same sequence.
  GreedyOptions options;
  options.max_new_tokens = 6;
  std::vector<std::vector<float>> steps;
  options.on_step = [&](int, std::span<const float> row) {
    steps.emplace_back(row.begin(), row.end());
  };
  const std::span<const int32_t> prompt(tokens.data(), 10);
  const std::vector<int32_t> out = GreedyGenerate(model, prompt, options);
  ASSERT_EQ(out.size(), 6u);
  std::vector<int32_t> forced(prompt.begin(), prompt.end());
  forced.insert(forced.end(), out.begin(), out.end());
  const Tensor forced_logits = AllLogits(model, forced, 3);
  for (size_t s = 0; s < steps.size(); ++s) {
    const float* row = forced_logits.RowF32(static_cast<int64_t>(9 + s));
    for (size_t i = 0; i < steps[s].size(); ++i) EXPECT_NEAR(steps[s][i], row[i], 1e-5f);
  }
  // bf16 KV storage and bf16 compute: close to f32, not identical.
  RuntimeOptions kv_bf16;
  kv_bf16.kv = KvScheme::Dense(DType::kBF16);
  const float kv_diff =
      MaxAbsDiff(AllLogits(RuntimeModel(m.config, m.weights, kv_bf16), tokens, 16), whole);
  RuntimeOptions compute_bf16;
  compute_bf16.compute = ops::ComputeMode::kBF16;
  const float compute_diff =
      MaxAbsDiff(AllLogits(RuntimeModel(m.config, m.weights, compute_bf16), tokens, 16), whole);
  EXPECT_GT(kv_diff, 0.0f);
  EXPECT_LT(kv_diff, 0.5f);
  EXPECT_GT(compute_diff, 0.0f);
  EXPECT_LT(compute_diff, 0.5f);
}

INSTANTIATE_TEST_SUITE_P(Types, SyntheticTiny,
                         ::testing::Values(DType::kF32, DType::kBF16, DType::kF16, DType::kQ8_0,
                                           DType::kQ4_0),
                         [](const auto& type_info) { return std::string(Name(type_info.param)); });

// The qwen3.5-0.8b preset's structure (DeltaNet and gated full-attention layers, partial rotary,
// (1 + weight) norms, tied head) at small widths: the synthetic weights are a complete model
// (ValidateWeights), and chunked prefill (the DeltaNet's state carried across chunks) equals one
// pass.
TEST(SyntheticHybrid, Qwen35PresetStructureRunsAndChunksAgree) {
  ModelConfig c = SyntheticConfig("qwen3.5-0.8b");
  EXPECT_EQ(c.arch, ModelArch::kQwen35);
  EXPECT_EQ(c.rotary_dim, 64);
  c.hidden_size = 64, c.num_layers = 4, c.num_heads = 4, c.num_kv_heads = 2, c.head_dim = 32;
  c.rotary_dim = 8, c.intermediate_size = 96, c.vocab_size = 512;
  c.layer_uses_linear_attention.resize(4);
  c.linear_attention = {.num_key_heads = 2,
                        .num_value_heads = 4,
                        .key_head_dim = 16,
                        .value_head_dim = 16,
                        .conv_kernel = 4};
  const SyntheticModel m = BuildSyntheticModel(c, DType::kF32);
  ValidateWeights(m.config, m.weights);
  EXPECT_TRUE(m.weights.Has("model.layers.0.linear_attn.conv1d.weight"));
  EXPECT_TRUE(m.weights.Has("model.layers.3.self_attn.q_norm.weight"));
  EXPECT_FALSE(m.weights.Has("model.layers.0.self_attn.q_proj.weight"));
  std::vector<int32_t> tokens(40);
  for (int i = 0; i < 40; ++i) tokens[static_cast<size_t>(i)] = (i * 53 + 7) % 512;
  const RuntimeModel model(m.config, m.weights);
  const Tensor whole = AllLogits(model, tokens, 512);
  // Its logits reach about 46 (tied embeddings of amplitude sqrt(3)): f32 rounding of the
  // decode path's matrix-vector products against the prefill tiles is relative to that.
  float scale = 0.0f;
  for (int64_t i = 0; i < whole.rows() * whole.cols(); ++i) {
    scale = std::max(scale, std::fabs(whole.f32()[i]));
  }
  for (const int64_t chunk : {1, 7}) {
    EXPECT_LE(MaxAbsDiff(AllLogits(model, tokens, chunk), whole), 1e-5f * scale)
        << "chunk " << chunk;
  }
}

TEST(Greedy, StopIdsEndGenerationAndAreNotEmitted) {
  const SyntheticModel m = BuildSyntheticModel(SyntheticConfig("tiny"), DType::kBF16);
  const RuntimeModel model(m.config, m.weights);
  const std::vector<int32_t> prompt = {5, 17, 300};
  GreedyOptions options;
  options.max_new_tokens = 8;
  const std::vector<int32_t> all = GreedyGenerate(model, prompt, options);
  ASSERT_EQ(all.size(), 8u);
  const int32_t stop = all[4];
  const auto first = std::find(all.begin(), all.end(), stop);
  options.stop_ids = {stop};
  EXPECT_EQ(GreedyGenerate(model, prompt, options), std::vector<int32_t>(all.begin(), first));
  options.max_new_tokens = 0;
  EXPECT_TRUE(GreedyGenerate(model, prompt, options).empty());
  EXPECT_THROW(GreedyGenerate(model, std::span<const int32_t>(), options), Error);
}

TEST(Synthetic, RealShapesAndErrors) {
  const ModelConfig tiny_llama = SyntheticConfig("tinyllama-1.1b");
  EXPECT_EQ(tiny_llama.hidden_size, 2048);
  EXPECT_EQ(tiny_llama.num_kv_heads, 4);
  EXPECT_EQ(SyntheticConfig("qwen3-0.6b").vocab_size, 151936);
  EXPECT_EQ(SyntheticConfig("llama-3.2-1b").rope.type, RopeType::kLlama3);
  EXPECT_ERROR_CONTAINS(SyntheticConfig("gpt-2"), "gpt-2", "tinyllama-1.1b");
  EXPECT_ERROR_CONTAINS(BuildSyntheticModel(SyntheticConfig("tiny"), DType::kI32), "i32");
}

// A one-layer toy whose widths are multiples of 256, so every GGUF type (K-quants too) applies.
ModelConfig ToyForKQuants() {
  ModelConfig c = SyntheticConfig("tiny");
  c.hidden_size = 256, c.intermediate_size = 512, c.num_layers = 1;
  c.num_heads = 4, c.num_kv_heads = 2, c.head_dim = 64, c.rotary_dim = 64;
  return c;
}

TEST(Synthetic, EveryGgufTypeGivesValidBlocksOfRealisticMagnitude) {
  const ModelConfig c = ToyForKQuants();
  const float amplitude = std::sqrt(3.0f) / std::sqrt(256.0f);  // up_proj: uniform(+-amplitude)
  for (const DType type : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1,
                           DType::kQ2_K, DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    SCOPED_TRACE(Name(type));
    const SyntheticModel m = BuildSyntheticModel(c, type);
    EXPECT_EQ(m.config.stored_dtype, Name(type));
    const MatView up = m.weights.Matrix("model.layers.0.mlp.up_proj.weight");
    ASSERT_EQ(up.type, type);
    std::vector<float> row(static_cast<size_t>(up.cols));
    double abs_sum = 0.0, sum = 0.0;
    float max_abs = 0.0f;
    for (int64_t r = 0; r < up.rows; ++r) {
      ops::DequantizeRow(up, r, row);
      for (const float v : row) {
        ASSERT_TRUE(std::isfinite(v));
        max_abs = std::max(max_abs, std::fabs(v));
        abs_sum += std::fabs(v), sum += v;
      }
    }
    const double n = static_cast<double>(up.rows * up.cols);
    EXPECT_LE(max_abs, 1.5f * amplitude);
    EXPECT_GT(abs_sum / n, 0.1 * amplitude);
    EXPECT_LT(std::fabs(sum / n), 0.1 * amplitude);  // centred
    // The model runs and its logits are finite.
    const RuntimeModel model(m.config, m.weights);
    ModelCache cache = model.MakeCache();
    const std::vector<int32_t> ids = {1, 7, 300, 42};
    const Tensor logits = model.LogitsFromHidden(model.ForwardHidden(ids, cache).View());
    for (int64_t t = 0; t < logits.rows(); ++t) {
      for (int64_t v = 0; v < logits.cols(); ++v) ASSERT_TRUE(std::isfinite(logits.RowF32(t)[v]));
    }
  }
}

TEST(RuntimeModel, RejectsOutOfRangeTokensAndMissingWeights) {
  const SyntheticModel m = BuildSyntheticModel(SyntheticConfig("tiny"), DType::kF32);
  const RuntimeModel model(m.config, m.weights);
  ModelCache cache = model.MakeCache();
  const std::vector<int32_t> bad = {3, 512};
  EXPECT_ERROR_CONTAINS(model.ForwardHidden(bad, cache), "512", "[0, 512)");
  ModelConfig untied = m.config;
  untied.tie_word_embeddings = false;
  untied.num_layers = 2;
  WeightStore empty;
  EXPECT_THROW(RuntimeModel(untied, empty), Error);
}

}  // namespace
}  // namespace proctor
