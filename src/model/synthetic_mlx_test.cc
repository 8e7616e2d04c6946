// Synthetic MLX models: they pass the loader's checks, every matrix resolves to the asked MLX
// type, the decoded weights stay within the documented magnitudes, and the forward pass gives
// finite logits; the spec names parse.
#include "model/synthetic_mlx.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "model/load.h"
#include "model/mlx_weights.h"
#include "model/runtime_model.h"
#include "ops/linear_weight.h"

namespace proctor {
namespace {

TEST(SyntheticMlx, ParsesSpecs) {
  const auto a = ParseMlxQuantSpec("affine4-g64");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->mode, quant::MlxMode::kAffine);
  EXPECT_EQ(a->bits, 4);
  EXPECT_EQ(a->group_size, 64);
  const auto nv = ParseMlxQuantSpec("nvfp4");
  ASSERT_TRUE(nv.has_value());
  EXPECT_EQ(nv->group_size, 16);
  EXPECT_EQ(ParseMlxQuantSpec("mxfp8")->bits, 8);
  for (const char* bad : {"affine7-g64", "affine4-g48", "affine4-g64x", "q4_0", "affine4"}) {
    EXPECT_FALSE(ParseMlxQuantSpec(bad).has_value()) << bad;
  }
}

class SyntheticMlxModel : public ::testing::TestWithParam<const char*> {};

TEST_P(SyntheticMlxModel, LoadsRunsAndStaysInRange) {
  const MlxQuantParams params = *ParseMlxQuantSpec(GetParam());
  const SyntheticModel m = BuildSyntheticMlxModel(SyntheticConfig("tiny"), params);
  ValidateWeights(m.config, m.weights);
  const ModelConfig& c = m.config;
  const std::string expected = ops::MlxTypeName(params.mode, params.bits, params.group_size);
  for (const char* path :
       {"model.embed_tokens", "model.layers.0.self_attn.q_proj", "model.layers.1.mlp.down_proj"}) {
    const bool down = std::string(path).find("down") != std::string::npos;
    const int64_t out = down ? c.hidden_size
                        : std::string(path).find("q_proj") != std::string::npos
                            ? int64_t{c.num_heads} * c.head_dim
                            : c.vocab_size;
    const int64_t in = down ? c.intermediate_size : c.hidden_size;
    const ops::LinearWeight w = ResolveLinear(m.weights, c.mlx_quantization, path, out, in);
    ASSERT_TRUE(w.is_mlx()) << path;
    EXPECT_EQ(w.TypeName(), expected);
    // q_proj values within +-sqrt(3 / hidden) (within the float formats' rounding of the scale:
    // E8M0 rounds to a power of two, E4M3 to 3 mantissa bits).
    std::vector<float> row(static_cast<size_t>(in));
    ops::DecodeWeightRowRef(w, 3, 0, in, row.data());
    const float bound =
        (path == std::string("model.embed_tokens") ? std::sqrt(3.0f)
                                                   : std::sqrt(3.0f / static_cast<float>(in))) *
        (params.mode == quant::MlxMode::kAffine ? 1.01f : 1.5f);
    float max_abs = 0.0f;
    for (float v : row) max_abs = std::max(max_abs, std::fabs(v));
    EXPECT_LE(max_abs, bound) << path;
    EXPECT_GT(max_abs, 0.25f * bound) << path;
  }
  const RuntimeModel runtime(m.config, m.weights);
  ModelCache cache = runtime.MakeCache();
  const std::vector<int32_t> ids{1, 2, 3, 500};
  const Tensor logits = runtime.LogitsFromHidden(runtime.ForwardHidden(ids, cache).View());
  for (int64_t i = 0; i < logits.rows() * logits.cols(); ++i) {
    ASSERT_TRUE(std::isfinite(logits.f32()[i])) << i;
  }
}

TEST(SyntheticMlx, WidthsThatAreNotWholeGroupsStayBf16) {
  // tiny: hidden 64, ff 128. With groups of 128 only down_proj (128 inputs) is quantized.
  const SyntheticModel m =
      BuildSyntheticMlxModel(SyntheticConfig("tiny"), *ParseMlxQuantSpec("affine4-g128"));
  ValidateWeights(m.config, m.weights);
  EXPECT_EQ(m.weights.Get("model.layers.0.self_attn.q_proj.weight").type, DType::kBF16);
  EXPECT_FALSE(m.weights.Has("model.layers.0.self_attn.q_proj.scales"));
  EXPECT_EQ(m.weights.Get("model.layers.0.mlp.down_proj.weight").type, DType::kU32);
}

// The families beyond the dense block: a gated DeltaNet hybrid (the qwen3.5-0.8b preset's layout,
// shrunk) and a mixture of experts (tiny-moe) load, quantize their DeltaNet projections and
// experts, and give finite logits.
TEST(SyntheticMlx, HybridAndMixtureOfExpertsBuildAndRun) {
  ModelConfig hybrid = SyntheticConfig("qwen3.5-0.8b");
  hybrid.hidden_size = 64, hybrid.num_layers = 4, hybrid.num_heads = 2, hybrid.num_kv_heads = 1;
  hybrid.head_dim = 32, hybrid.rotary_dim = 8, hybrid.intermediate_size = 128;
  hybrid.vocab_size = 512;
  hybrid.linear_attention.num_key_heads = 2, hybrid.linear_attention.num_value_heads = 2;
  hybrid.linear_attention.key_head_dim = 32, hybrid.linear_attention.value_head_dim = 32;
  hybrid.layer_uses_linear_attention.resize(4);
  struct Case {
    ModelConfig config;
    const char* quantized;  // a matrix only this family has
  };
  for (const Case& c :
       {Case{hybrid, "model.layers.0.linear_attn.in_proj_qkv"},
        Case{SyntheticConfig("tiny-moe"), "model.layers.1.block_sparse_moe.experts.7.w2"}}) {
    SCOPED_TRACE(c.quantized);
    const SyntheticModel m = BuildSyntheticMlxModel(c.config, *ParseMlxQuantSpec("affine4-g32"));
    ValidateWeights(m.config, m.weights);
    EXPECT_EQ(m.weights.Get(std::string(c.quantized) + ".weight").type, DType::kU32);
    EXPECT_TRUE(m.weights.Has(std::string(c.quantized) + ".scales"));
    const RuntimeModel runtime(m.config, m.weights);
    ModelCache cache = runtime.MakeCache();
    const std::vector<int32_t> ids{1, 2, 3, 500, 7, 9};
    const Tensor logits = runtime.LogitsFromHidden(runtime.ForwardHidden(ids, cache).View());
    for (int64_t i = 0; i < logits.rows() * logits.cols(); ++i) {
      ASSERT_TRUE(std::isfinite(logits.f32()[i])) << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Specs, SyntheticMlxModel,
                         ::testing::Values("affine4-g64", "affine8-g32", "affine3-g32", "mxfp4",
                                           "mxfp8", "nvfp4"));

}  // namespace
}  // namespace proctor
