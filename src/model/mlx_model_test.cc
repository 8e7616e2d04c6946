// MLX-quantized models end to end: tools/write_mlx_model.py (numpy, written independently of the
// C++ from docs/FORMATS section 6) writes a model as mlx-lm stores it plus a copy with every
// quantized matrix dequantized to f32. proctor's logits on the MLX model must match its logits on
// the dequantized copy to f32 summation-order tolerance, prefill (blocked kernel) and decode
// (matrix-vector kernel), in both compute modes. Malformed directories must fail with errors
// naming the file, the tensor and the values.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <fstream>

#include "model/load.h"
#include "model/mlx_weights.h"
#include "model/runtime_model.h"
#include "util/file.h"
#include "util/testing_files.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using proctor::testing::TempDir;

bool HavePythonNumpy() {
  static const bool have = std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") == 0;
  return have;
}

// Writes <dir>/mlx and <dir>/deq with the writer's arguments.
void WriteModels(const fs::path& dir, const std::string& args) {
  const std::string command =
      fmt::format("/usr/bin/python3 {}/tools/write_mlx_model.py {} {} {}", PROCTOR_SOURCE_DIR,
                  (dir / "mlx").string(), (dir / "deq").string(), args);
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
}

// Logits of a 9-token prefill followed by one decoded token: [10, vocab].
std::vector<float> Logits(const LoadedModel& model, ops::ComputeMode mode, ThreadPool& pool) {
  RuntimeOptions options;
  options.compute = mode;
  options.pool = &pool;
  const RuntimeModel runtime(model.config, model.weights, options);
  ModelCache cache = runtime.MakeCache();
  const std::vector<int32_t> prompt{1, 17, 250, 3, 99, 128, 7, 64, 200}, next{42};
  const Tensor h1 = runtime.ForwardHidden(prompt, cache);
  const Tensor h2 = runtime.ForwardHidden(next, cache);
  const Tensor l1 = runtime.LogitsFromHidden(h1.View()), l2 = runtime.LogitsFromHidden(h2.View());
  std::vector<float> out(l1.f32(), l1.f32() + l1.rows() * l1.cols());
  out.insert(out.end(), l2.f32(), l2.f32() + l2.cols());
  return out;
}

// Max |a - b| over max |b| (both models' logits, same prompt), per compute mode and kernels.
void ExpectSameLogits(const LoadedModel& mlx, const LoadedModel& deq) {
  ThreadPool pool(2);
  struct Config {
    ops::ComputeMode mode;
    bool amx;  // bf16 mode: the AMX kernels (MLX prefill then also rounds weights to bf16)
    float tolerance;
  };
  // f32: f32 summation order through two layers (K <= 256 per product), measured <= 4e-7
  // relative; 2e-5 leaves room while any decoding error (a wrong code, scale or bias) is far
  // above it. bf16 without AMX: a last-bit difference can move an activation across a bf16
  // rounding boundary (one bf16 ulp, 2^-8 relative), measured ~2e-4. bf16 with AMX: the MLX
  // prefill also rounds its weights to bf16 (ops/matmul.h), measured <= 6.3e-3 of the largest
  // logit on these untied models (their logits are small sums of large terms); 2^-6.
  for (const Config& c : {Config{ops::ComputeMode::kF32, true, 2e-5f},
                          Config{ops::ComputeMode::kBF16, false, std::ldexp(1.0f, -8)},
                          Config{ops::ComputeMode::kBF16, true, std::ldexp(1.0f, -6)}}) {
    ops::SetKernelOverridesForTesting(
        {.bf16_family = c.amx ? ops::BF16Kernel::kAuto : ops::BF16Kernel::kF32Fallback});
    const std::vector<float> a = Logits(mlx, c.mode, pool), b = Logits(deq, c.mode, pool);
    ops::SetKernelOverridesForTesting({});
    ASSERT_EQ(a.size(), b.size());
    float max_diff = 0.0f, max_abs = 0.0f;
    for (size_t i = 0; i < a.size(); ++i) {
      max_diff = std::max(max_diff, std::fabs(a[i] - b[i]));
      max_abs = std::max(max_abs, std::fabs(b[i]));
    }
    EXPECT_LE(max_diff, c.tolerance * max_abs)
        << "mode " << ComputeModeName(c.mode) << " amx " << c.amx << " max |logit| " << max_abs;
    EXPECT_GT(max_abs, 1.0f);
  }
}

struct Case {
  const char* name;
  const char* args;
  // Expected resolution of a few modules: "dense" or the histogram name of the MLX type.
  std::vector<std::pair<const char*, const char*>> modules;
};

class MlxModel : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (!HavePythonNumpy()) GTEST_SKIP() << "/usr/bin/python3 with numpy is not available";
  }
};

std::string Kind(const LoadedModel& model, const std::string& path) {
  const TensorInfo& w = model.weights.Get(path + ".weight");
  const int64_t out = w.shape[0];
  const int64_t in = path.find("down_proj") != std::string::npos ? model.config.intermediate_size
                                                                 : model.config.hidden_size;
  const ops::LinearWeight lw =
      ResolveLinear(model.weights, model.config.mlx_quantization, path, out, in);
  return lw.is_mlx() ? lw.TypeName() : "dense";
}

TEST_P(MlxModel, LogitsMatchTheDequantizedCopy) {
  const Case& c = GetParam();
  TempDir dir;
  WriteModels(dir.path(), c.args);
  const LoadedModel mlx = LoadModel((dir.path() / "mlx").string());
  const LoadedModel deq = LoadModel((dir.path() / "deq").string());
  ASSERT_TRUE(mlx.config.mlx_quantization.has_value());
  EXPECT_FALSE(deq.config.mlx_quantization.has_value());
  for (const auto& [path, kind] : c.modules) EXPECT_EQ(Kind(mlx, path), kind) << path;
  ExpectSameLogits(mlx, deq);
}

const char* const kQ = "model.layers.0.self_attn.q_proj";
const char* const kDown0 = "model.layers.0.mlp.down_proj";
const char* const kV1 = "model.layers.1.self_attn.v_proj";
const char* const kEmbed = "model.embed_tokens";

INSTANTIATE_TEST_SUITE_P(
    Formats, MlxModel,
    ::testing::Values(
        Case{"affine4_g64_f16_tied",
             "--bits 4 --group-size 64 --scale-dtype f16",
             {{kQ, "affine 4-bit g64"}, {kEmbed, "affine 4-bit g64"}}},
        Case{"affine2_g32_bf16_untied",
             "--bits 2 --group-size 32 --scale-dtype bf16 --untied",
             {{kQ, "affine 2-bit g32"},
              {"lm_head", "affine 2-bit g32"},
              {kEmbed, "affine 2-bit g32"}}},
        Case{"affine3_g128_f32",
             "--bits 3 --group-size 128 --scale-dtype f32",
             {{kDown0, "affine 3-bit g128"}}},
        Case{"affine5_g64_bf16_config_key",
             "--bits 5 --group-size 64 --scale-dtype bf16 --untied "
             "--config-key quantization_config",
             {{kQ, "affine 5-bit g64"}}},
        Case{"affine6_g32_f16",
             "--bits 6 --group-size 32 --config-key quantization",
             {{kV1, "affine 6-bit g32"}}},
        Case{"affine8_g128_bf16_dense_embed",
             "--bits 8 --group-size 128 --scale-dtype bf16 --no-embed",
             {{kQ, "affine 8-bit g128"}, {kEmbed, "dense"}}},
        Case{"mxfp4", "--mode mxfp4 --bits 4 --group-size 32", {{kQ, "mxfp4"}, {kEmbed, "mxfp4"}}},
        Case{"mxfp8_untied",
             "--mode mxfp8 --bits 8 --group-size 32 --untied",
             {{"lm_head", "mxfp8"}}},
        Case{"nvfp4", "--mode nvfp4 --bits 4 --group-size 16", {{kDown0, "nvfp4"}}},
        Case{"overrides",
             "--bits 4 --group-size 64 --untied --override model.layers.0.mlp.down_proj=8:32 "
             "--override model.layers.1.self_attn.v_proj=false --override lm_head=6:128",
             {{kQ, "affine 4-bit g64"},
              {kDown0, "affine 8-bit g32"},
              {kV1, "dense"},
              {"lm_head", "affine 6-bit g128"}}},
        Case{"quantized_embed_dense_head",
             "--bits 4 --group-size 32 --untied --override lm_head=false",
             {{kEmbed, "affine 4-bit g32"}, {"lm_head", "dense"}}},
        Case{"mixed_modes",
             "--bits 4 --group-size 64 --override model.layers.0.mlp.up_proj=4:32:mxfp4",
             {{"model.layers.0.mlp.up_proj", "mxfp4"}}}),
    [](const ::testing::TestParamInfo<Case>& param) { return std::string(param.param.name); });

// A real architecture from the hf-goldens (qwen3: q/k norms, head_dim 32, tied embeddings).
TEST(MlxModelGoldens, Qwen3QuantizedMatchesItsDequantizedCopy) {
  const fs::path src = proctor::testing::FixturesDir() / "hf-goldens" / "qwen3-f32";
  if (!fs::exists(src)) GTEST_SKIP() << "fixture absent: " << src;
  if (!HavePythonNumpy()) GTEST_SKIP() << "/usr/bin/python3 with numpy is not available";
  TempDir dir;
  WriteModels(dir.path(), fmt::format("--src {} --bits 4 --group-size 32", src.string()));
  const LoadedModel mlx = LoadModel((dir.path() / "mlx").string());
  const LoadedModel deq = LoadModel((dir.path() / "deq").string());
  EXPECT_EQ(Kind(mlx, kEmbed), "affine 4-bit g32");
  ExpectSameLogits(mlx, deq);
}

}  // namespace
}  // namespace proctor
