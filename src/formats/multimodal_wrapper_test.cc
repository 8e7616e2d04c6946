// The names of a multimodal wrapper's tensors as the text model's: transformers 5's
// model.language_model.*, transformers 4's and mlx-lm's language_model.model.* and
// language_model.lm_head.*; everything else (vision tower, projector, MTP head) dropped.
#include "formats/multimodal_wrapper.h"

#include <gtest/gtest.h>

#include "util/testing_files.h"

namespace proctor {
namespace {

TEST(MultimodalWrapper, TextModelNamesOfEachPrefix) {
  EXPECT_EQ(TextModelTypeOfWrapper("qwen3_5"), "qwen3_5_text");
  EXPECT_EQ(TextModelTypeOfWrapper("gemma3"), "gemma3_text");
  EXPECT_EQ(TextModelTypeOfWrapper("qwen3_5_text"), std::nullopt);
  EXPECT_EQ(TextModelName("model.language_model.layers.3.mlp.up_proj.weight"),
            "model.layers.3.mlp.up_proj.weight");
  EXPECT_EQ(TextModelName("language_model.model.embed_tokens.weight"), "model.embed_tokens.weight");
  EXPECT_EQ(TextModelName("language_model.lm_head.scales"), "lm_head.scales");
  EXPECT_EQ(TextModelName("language_model.lm_head"), "lm_head");  // a module path
  EXPECT_EQ(TextModelName("lm_head.weight"), "lm_head.weight");
  for (const char* outside : {"model.visual.blocks.0.attn.qkv.weight", "vision_tower.x.weight",
                              "multi_modal_projector.linear.weight", "mtp.fc.weight",
                              "model.language_modelx.weight", "lm_headx.weight"}) {
    EXPECT_EQ(TextModelName(outside), std::nullopt) << outside;
  }
}

TensorInfo F32Vector(const std::string& name, const float* data) {
  TensorInfo info;
  info.name = name;
  info.source_name = name;
  info.type = DType::kF32;
  info.shape = {1};
  info.data = reinterpret_cast<const uint8_t*>(data);
  info.bytes = sizeof(float);
  return info;
}

TEST(MultimodalWrapper, KeepsTheLanguageModelUnderItsOwnNames) {
  const float values[3] = {1.0f, 2.0f, 3.0f};
  WeightStore weights("wrapped");
  weights.AddView(F32Vector("model.language_model.norm.weight", &values[0]));
  weights.AddView(F32Vector("lm_head.weight", &values[1]));
  weights.AddView(F32Vector("model.visual.patch_embed.proj.weight", &values[2]));
  KeepTextModelTensors(weights);
  EXPECT_EQ(weights.Names(), (std::vector<std::string>{"lm_head.weight", "model.norm.weight"}));
  EXPECT_EQ(weights.Find("model.norm.weight")->data, reinterpret_cast<const uint8_t*>(values));
  // Two tensors that would both be the text model's norm.
  WeightStore twice("twice");
  twice.AddView(F32Vector("model.language_model.norm.weight", &values[0]));
  twice.AddView(F32Vector("language_model.model.norm.weight", &values[1]));
  EXPECT_ERROR_CONTAINS(KeepTextModelTensors(twice), "twice", "model.norm.weight");
}

}  // namespace
}  // namespace proctor
