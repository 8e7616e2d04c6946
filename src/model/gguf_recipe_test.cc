// llama-quantize's per-tensor rules as model/gguf_recipe.h states them, on tensor lists worked by
// hand (the same files byte for byte against llama.cpp: gguf_quantize_oracle_test.cc).
#include "model/gguf_recipe.h"

#include <gtest/gtest.h>

#include <map>

namespace proctor {
namespace {

// A llama of `layers` layers, hidden 256, ff `ff`, with or without output.weight.
std::vector<GgufTensorPlan> Llama(int layers, uint64_t ff, bool with_output) {
  std::vector<GgufTensorPlan> t;
  auto add = [&](std::string name, std::vector<uint64_t> dims) {
    t.push_back(
        GgufTensorPlan{.name = std::move(name), .dims = std::move(dims), .stored = DType::kF16});
  };
  add("token_embd.weight", {256, 1000});
  add("output_norm.weight", {256});
  if (with_output) add("output.weight", {256, 1000});
  for (int i = layers - 1; i >= 0; --i) {  // out of order on purpose
    const std::string b = "blk." + std::to_string(i) + ".";
    add(b + "attn_norm.weight", {256});
    add(b + "attn_q.weight", {256, 256});
    add(b + "attn_k.weight", {256, 128});
    add(b + "attn_v.weight", {256, 128});
    add(b + "attn_output.weight", {256, 256});
    add(b + "ffn_gate.weight", {256, ff});
    add(b + "ffn_up.weight", {256, ff});
    add(b + "ffn_down.weight", {ff, 256});
    add(b + "ffn_norm.weight", {256});
  }
  return t;
}

std::map<std::string, std::string> Types(std::string_view file_type, int layers, uint64_t ff,
                                         bool with_output, bool pure = false,
                                         GgufModelFacts facts = {"llama", 0, 0, 8, 2}) {
  std::vector<GgufTensorPlan> tensors = Llama(layers, ff, with_output);
  facts.n_layer = layers;
  SortLikeLlamaCpp(tensors);
  PlanGgufTensorTypes(*FindGgufFileType(file_type), facts, pure, tensors);
  std::map<std::string, std::string> types;
  for (const GgufTensorPlan& t : tensors) types[t.name] = std::string(Name(t.type));
  return types;
}

TEST(GgufRecipe, FileTypesByName) {
  EXPECT_EQ(FindGgufFileType("Q4_K_M")->llama_ftype, 15u);
  EXPECT_EQ(FindGgufFileType("bf16")->llama_ftype, 32u);
  EXPECT_EQ(FindGgufFileType("q8_0")->base, DType::kQ8_0);
  EXPECT_FALSE(FindGgufFileType("q2_k_s").has_value());  // needs an importance matrix
  EXPECT_FALSE(FindGgufFileType("iq4_xs").has_value());
  EXPECT_EQ(GgufFileTypeNames(),
            "f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k_s, q3_k_m, q3_k_l, q4_k_s, "
            "q4_k_m, q5_k_s, q5_k_m, q6_k");
}

TEST(GgufRecipe, LlamaCppOrderIsLayerThenName) {
  std::vector<GgufTensorPlan> t;
  for (const char* name :
       {"blk.10.a", "token_embd.weight", "blk.2.b", "blk.2.a", "output.weight"}) {
    t.push_back(GgufTensorPlan{.name = name, .dims = {1}});
  }
  SortLikeLlamaCpp(t);
  std::vector<std::string> names;
  names.reserve(t.size());
  for (const auto& p : t) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"output.weight", "token_embd.weight", "blk.2.a",
                                             "blk.2.b", "blk.10.a"}));
  EXPECT_EQ(GgufLayerOf("blk.12.attn_q.weight"), 12);
  EXPECT_EQ(GgufLayerOf("blk.x.attn_q.weight"), -1);
  EXPECT_EQ(GgufLayerOf("output.weight"), -1);
}

TEST(GgufRecipe, Q4KMLiftsVAndDownInTheUseMoreBitsLayers) {
  // 8 layers: use_more_bits(i, 8) holds for i < 1, i >= 7 and (i - 1) % 3 == 2: layers 0, 3, 6, 7.
  const auto types = Types("q4_k_m", 8, 512, true);
  for (int i = 0; i < 8; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    const bool more = i == 0 || i == 3 || i == 6 || i == 7;
    EXPECT_EQ(types.at(b + "attn_v.weight"), more ? "q6_k" : "q4_k") << i;
    EXPECT_EQ(types.at(b + "ffn_down.weight"), more ? "q6_k" : "q4_k") << i;
    EXPECT_EQ(types.at(b + "attn_q.weight"), "q4_k");
    EXPECT_EQ(types.at(b + "ffn_up.weight"), "q4_k");
    EXPECT_EQ(types.at(b + "attn_norm.weight"), "f16");  // stored type kept
  }
  EXPECT_EQ(types.at("output.weight"), "q6_k");
  EXPECT_EQ(types.at("token_embd.weight"), "q4_k");
}

TEST(GgufRecipe, TiedEmbeddingsTakeTheOutputRule) {
  EXPECT_EQ(Types("q4_0", 2, 512, false).at("token_embd.weight"), "q6_k");
  EXPECT_EQ(Types("q4_0", 2, 512, true).at("token_embd.weight"), "q4_0");
  EXPECT_EQ(Types("q8_0", 2, 512, true).at("output.weight"), "q8_0");
}

TEST(GgufRecipe, Q4KSLiftsTheFirstFourVAndTheFirstEighthOfDown) {
  const auto types = Types("q4_k_s", 16, 512, true);
  for (int i = 0; i < 16; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    EXPECT_EQ(types.at(b + "attn_v.weight"), i < 4 ? "q5_k" : "q4_k") << i;
    EXPECT_EQ(types.at(b + "ffn_down.weight"), i < 2 ? "q5_k" : "q4_k") << i;
  }
}

TEST(GgufRecipe, TwoAndThreeBitTypesLiftAttentionAndDown) {
  // 32 layers: L/16 = 2. Facts: 8 query heads on 2 KV heads (4 per KV head).
  auto types = Types("q3_k_m", 32, 512, true);
  EXPECT_EQ(types.at("blk.1.attn_v.weight"), "q5_k");
  EXPECT_EQ(types.at("blk.2.attn_v.weight"), "q4_k");
  EXPECT_EQ(types.at("blk.1.ffn_down.weight"), "q5_k");
  EXPECT_EQ(types.at("blk.2.ffn_down.weight"), "q4_k");
  EXPECT_EQ(types.at("blk.2.attn_output.weight"), "q4_k");
  EXPECT_EQ(types.at("blk.2.attn_q.weight"), "q3_k");
  types = Types("q3_k_l", 32, 512, true);
  EXPECT_EQ(types.at("blk.9.attn_v.weight"), "q5_k");
  EXPECT_EQ(types.at("blk.9.ffn_down.weight"), "q5_k");
  EXPECT_EQ(types.at("blk.9.attn_output.weight"), "q5_k");
  types = Types("q3_k_s", 32, 512, true);
  EXPECT_EQ(types.at("blk.0.attn_v.weight"), "q3_k");
  EXPECT_EQ(types.at("blk.0.ffn_down.weight"), "q3_k");
  types = Types("q2_k", 4, 512, true);
  EXPECT_EQ(types.at("blk.0.attn_v.weight"), "q4_k");  // 4 query heads per KV head
  EXPECT_EQ(types.at("blk.0.ffn_down.weight"), "q3_k");
  EXPECT_EQ(types.at("blk.0.attn_output.weight"), "q3_k");
  EXPECT_EQ(types.at("blk.0.ffn_up.weight"), "q2_k");
  EXPECT_EQ(Types("q2_k", 4, 512, true, false, {"llama", 0, 0, 8, 4}).at("blk.0.attn_v.weight"),
            "q3_k");
  // Rows of 96 do not fit 256-value blocks: Q2_K / Q3_K fall back to Q4_0.
  EXPECT_EQ(Types("q2_k", 4, 96, true).at("blk.0.ffn_down.weight"), "q4_0");
}

TEST(GgufRecipe, FalconKeepsItsOwnRules) {
  const GgufModelFacts falcon{"falcon", 0, 0, 8, 2};
  auto types = Types("q4_k_m", 32, 512, true, false, falcon);
  EXPECT_EQ(types.at("output.weight"), "q8_0");
  EXPECT_EQ(types.at("blk.1.ffn_down.weight"), "q6_k");  // i < L/16
  EXPECT_EQ(types.at("blk.2.ffn_down.weight"), "q5_k");  // use_more_bits(2, 32): i < 4
  EXPECT_EQ(types.at("blk.5.ffn_down.weight"), "q4_k");
  EXPECT_EQ(Types("q4_k_s", 32, 512, true, false, falcon).at("blk.0.ffn_down.weight"), "q4_k");
}

TEST(GgufRecipe, ShapesThatDoNotFitFallBack) {
  // ffn_down rows of 96: Q4_K -> Q5_0, Q6_K -> Q8_0; rows of 172: F16 either way.
  auto types = Types("q4_k_m", 8, 96, true);
  EXPECT_EQ(types.at("blk.1.ffn_down.weight"), "q5_0");
  EXPECT_EQ(types.at("blk.0.ffn_down.weight"), "q8_0");
  EXPECT_EQ(Types("q5_k_s", 8, 96, true).at("blk.1.ffn_down.weight"), "q5_1");
  types = Types("q4_k_m", 8, 172, true);
  EXPECT_EQ(types.at("blk.1.ffn_down.weight"), "f16");
  EXPECT_EQ(types.at("blk.0.ffn_down.weight"), "f16");
  EXPECT_EQ(Types("q4_0", 8, 172, true).at("blk.1.ffn_down.weight"), "f16");
}

TEST(GgufRecipe, PureAndFloatTypesApplyNoRules) {
  const auto pure = Types("q4_k_m", 8, 512, true, true);
  EXPECT_EQ(pure.at("output.weight"), "q4_k");
  EXPECT_EQ(pure.at("blk.0.attn_v.weight"), "q4_k");
  const auto f32 = Types("f32", 8, 512, true);
  EXPECT_EQ(f32.at("output.weight"), "f32");
  EXPECT_EQ(f32.at("blk.0.attn_norm.weight"), "f16");
}

TEST(GgufRecipe, EightExpertsKeepAttentionAtHigherPrecision) {
  const auto types = Types("q4_k_m", 8, 512, true, false, {"llama", 0, 8, 8, 2});
  EXPECT_EQ(types.at("blk.1.attn_v.weight"), "q8_0");
  EXPECT_EQ(types.at("blk.1.attn_k.weight"), "q8_0");
  EXPECT_EQ(types.at("blk.1.attn_output.weight"), "q5_k");
  EXPECT_EQ(types.at("blk.1.attn_q.weight"), "q4_k");
}

}  // namespace
}  // namespace proctor
