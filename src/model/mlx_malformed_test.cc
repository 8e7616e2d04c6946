// Malformed MLX-quantized models: tools/write_mlx_model.py writes a valid 4-bit g64 model, then a
// tensor is dropped or truncated (by the writer) or config.json is edited (here). LoadModel must
// throw an Error naming the file, the tensor and the values seen and expected.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <functional>

#include "formats/mlx_quant_config.h"
#include "model/load.h"
#include "util/file.h"
#include "util/testing_files.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using proctor::testing::TempDir;

const char* const kUp = "model.layers.0.mlp.up_proj";  // [256, 128]: 16 words, 2 groups per row

class MlxMalformed : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") != 0) {
      GTEST_SKIP() << "/usr/bin/python3 with numpy is not available";
    }
  }
  // Writes the model (extra writer arguments), then applies `edit` to its config.json.
  fs::path Write(const std::string& args, const std::function<void(json&)>& edit = {}) {
    const std::string command = fmt::format(
        "/usr/bin/python3 {}/tools/write_mlx_model.py {} {} --bits 4 --group-size 64 {}",
        PROCTOR_SOURCE_DIR, (dir_.path() / "mlx").string(), (dir_.path() / "deq").string(), args);
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
    const fs::path config = dir_.path() / "mlx" / "config.json";
    if (edit) {
      json j = json::parse(ReadFileToString(config));
      edit(j);
      std::ofstream(config) << j.dump(1);
    }
    return dir_.path() / "mlx";
  }
  TempDir dir_;
};

TEST_F(MlxMalformed, ValidModelLoads) {
  const LoadedModel model = LoadModel(Write("").string());
  ASSERT_TRUE(model.config.mlx_quantization.has_value());
  EXPECT_EQ(*model.config.mlx_quantization->bits, 4);
}

TEST_F(MlxMalformed, MissingScales) {
  const fs::path dir = Write(fmt::format("--drop {}.scales", kUp));
  EXPECT_ERROR_CONTAINS(LoadModel(dir.string()), "model.safetensors",
                        "model.layers.0.mlp.up_proj.weight", "u32", "[256, 16]",
                        "model.layers.0.mlp.up_proj.scales\" is missing");
}

TEST_F(MlxMalformed, MissingScalesOfAnOverriddenModule) {
  const fs::path dir = Write(fmt::format("--drop {}.scales", kUp), [](json& j) {
    j["quantization"][kUp] = {{"bits", 4}, {"group_size", 64}};
  });
  EXPECT_ERROR_CONTAINS(LoadModel(dir.string()), "quantizes \"model.layers.0.mlp.up_proj\"",
                        "(affine, 4 bits, group size 64)", "up_proj.scales\" is missing");
}

TEST_F(MlxMalformed, MissingBiases) {
  const fs::path dir = Write(fmt::format("--drop {}.biases", kUp));
  EXPECT_ERROR_CONTAINS(LoadModel(dir.string()), "model.safetensors", "up_proj.weight",
                        "no \"model.layers.0.mlp.up_proj.biases\"");
}

TEST_F(MlxMalformed, WrongScalesShape) {
  const fs::path dir = Write(fmt::format("--truncate {}.scales", kUp));
  EXPECT_ERROR_CONTAINS(LoadModel(dir.string()), "model.safetensors",
                        "model.layers.0.mlp.up_proj.scales", "shape [256, 1]", "expected [256, 2]",
                        "128 inputs / group size 64");
}

TEST_F(MlxMalformed, WrongPackedShape) {
  const fs::path dir = Write(fmt::format("--truncate {}.weight", kUp));
  EXPECT_ERROR_CONTAINS(LoadModel(dir.string()), "model.safetensors", "up_proj.weight",
                        "shape [256, 15]", "expected [256, 16]", "4 bits");
}

TEST_F(MlxMalformed, BitsNotInConfig) {
  const fs::path dir = Write("", [](json& j) {
    j["quantization"].erase("bits");
    j["quantization_config"].erase("bits");
  });
  EXPECT_ERROR_CONTAINS(LoadModel(dir.string()), "model.safetensors", ".scales",
                        "gives no default bits");
}

TEST_F(MlxMalformed, NoQuantizationBlock) {
  const fs::path dir = Write("", [](json& j) {
    j.erase("quantization");
    j.erase("quantization_config");
  });
  EXPECT_ERROR_CONTAINS(LoadModel(dir.string()), "model.safetensors", ".scales",
                        "no \"quantization\" block");
}

TEST_F(MlxMalformed, OverrideWithOtherBitsThanTheTensors) {
  const fs::path dir = Write("", [](json& j) {
    j["quantization"][kUp] = {{"bits", 8}, {"group_size", 64}};
  });
  EXPECT_ERROR_CONTAINS(LoadModel(dir.string()), "model.safetensors", "up_proj.weight",
                        "shape [256, 16]", "expected [256, 32]", "8 bits");
}

TEST_F(MlxMalformed, OverrideWithOtherGroupThanTheScales) {
  const fs::path dir = Write("", [](json& j) {
    j["quantization"][kUp] = {{"bits", 4}, {"group_size", 32}};
  });
  EXPECT_ERROR_CONTAINS(LoadModel(dir.string()), "up_proj.scales", "shape [256, 2]",
                        "expected [256, 4]", "group size 32");
}

TEST_F(MlxMalformed, OverrideFalseWithScalesPresent) {
  const fs::path dir = Write("", [](json& j) { j["quantization"][kUp] = false; });
  EXPECT_ERROR_CONTAINS(LoadModel(dir.string()), "not quantized (false)",
                        "model.layers.0.mlp.up_proj.scales", "model.safetensors");
}

TEST_F(MlxMalformed, BitsMlxDoesNotDefine) {
  const fs::path dir = Write("", [](json& j) { j["quantization"]["bits"] = 7; });
  EXPECT_ERROR_CONTAINS(LoadModel(dir.string()), "config.json", "bits 7", "{2, 3, 4, 5, 6, 8}");
}

TEST_F(MlxMalformed, BiasesInAFloatMode) {
  const fs::path dir = Write("", [](json& j) {
    j["quantization"][kUp] = {{"bits", 4}, {"group_size", 32}, {"mode", "mxfp4"}};
  });
  // The affine tensors fail the mxfp4 checks first: u8 scales expected.
  EXPECT_ERROR_CONTAINS(LoadModel(dir.string()), "up_proj.scales", "dtype f16", "expected u8");
}

TEST(MlxQuantizationConfig, ParsesDefaultsOverridesAndRejectsOtherMethods) {
  const json config = json::parse(R"({"quantization": {"group_size": 64, "bits": 4,
      "model.layers.0.mlp.down_proj": {"bits": 8}, "lm_head": false,
      "model.embed_tokens": {"group_size": 32, "bits": 4, "mode": "mxfp4"}}})");
  const std::optional<MlxQuantization> q = ParseMlxQuantization(config, "cfg.json");
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->key, "quantization");
  EXPECT_EQ(q->mode, quant::MlxMode::kAffine);
  const auto& down = q->overrides.at("model.layers.0.mlp.down_proj");
  ASSERT_TRUE(down.has_value());
  EXPECT_EQ(down->bits, 8);
  EXPECT_EQ(down->group_size, 64);  // from the defaults
  EXPECT_FALSE(q->overrides.at("lm_head").has_value());
  EXPECT_EQ(q->overrides.at("model.embed_tokens")->mode, quant::MlxMode::kMxfp4);
  EXPECT_FALSE(ParseMlxQuantization(json::parse(R"({"bits": 4})"), "x").has_value());
  EXPECT_ERROR_CONTAINS(
      ParseMlxQuantization(json::parse(R"({"quantization_config": {"quant_method": "gptq",
          "bits": 4}})"),
                           "cfg.json"),
      "cfg.json", "quant_method \"gptq\"");
  EXPECT_ERROR_CONTAINS(
      ParseMlxQuantization(json::parse(R"({"quantization": {"bits": 4, "group_size": 64,
          "mode": "int4"}})"),
                           "cfg.json"),
      "cfg.json", "\"int4\"");
  EXPECT_ERROR_CONTAINS(
      ParseMlxQuantization(json::parse(R"({"quantization": {"bits": 4, "group_size": 64,
          "model.x": "yes"}})"),
                           "cfg.json"),
      "\"model.x\"", "\"yes\"");
}

}  // namespace
}  // namespace proctor
