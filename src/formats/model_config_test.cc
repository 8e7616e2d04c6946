#include "formats/model_config.h"

#include <gtest/gtest.h>

#include "util/error.h"
#include "util/testing_files.h"

namespace proctor {
namespace {

using nlohmann::json;

json LlamaBase() {
  return json::parse(R"({
    "model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128,
    "vocab_size": 512, "rms_norm_eps": 1e-5, "max_position_embeddings": 256})");
}

TEST(ParseHfConfig, DerivesHeadDimAndDefaults) {
  const ModelConfig c = ParseHfConfig(LlamaBase(), "test");
  EXPECT_EQ(c.arch, ModelArch::kLlama);
  EXPECT_EQ(c.head_dim, 16);  // 64 / 4
  EXPECT_EQ(c.num_kv_heads, 2);
  EXPECT_FLOAT_EQ(c.rms_norm_eps, 1e-5f);
  EXPECT_DOUBLE_EQ(c.rope.theta, 10000.0);
  EXPECT_EQ(c.rope.type, RopeType::kDefault);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_FALSE(c.rope_adjacent_pairs);
  EXPECT_EQ(c.bos_token_id, -1);
  EXPECT_TRUE(c.eos_token_ids.empty());
  EXPECT_EQ(c.sliding_window, 0);
}

TEST(ParseHfConfig, KvHeadsDefaultToHeads) {
  json j = LlamaBase();
  j.erase("num_key_value_heads");
  EXPECT_EQ(ParseHfConfig(j, "test").num_kv_heads, 4);
}

TEST(ParseHfConfig, OldRopeSpellingWithTypeKey) {
  json j = LlamaBase();
  j["rope_theta"] = 500000.0;
  j["rope_scaling"] = json::parse(R"({"type": "linear", "factor": 2.5})");
  j["torch_dtype"] = "bfloat16";
  j["eos_token_id"] = json::array({128001, 128008, 128009});
  j["bos_token_id"] = 128000;
  j["vocab_size"] = 128256;
  const ModelConfig c = ParseHfConfig(j, "test");
  EXPECT_DOUBLE_EQ(c.rope.theta, 500000.0);
  EXPECT_EQ(c.rope.type, RopeType::kLinear);
  EXPECT_DOUBLE_EQ(*c.rope.factor, 2.5f);
  EXPECT_EQ(c.stored_dtype, "bfloat16");
  EXPECT_EQ(c.eos_token_ids, (std::vector<int>{128001, 128008, 128009}));
  EXPECT_EQ(c.bos_token_id, 128000);
}

TEST(ParseHfConfig, Llama3RopeOldSpelling) {
  json j = LlamaBase();
  j["rope_theta"] = 500000.0;
  j["rope_scaling"] = json::parse(R"({"rope_type": "llama3", "factor": 32.0,
      "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192})");
  const ModelConfig c = ParseHfConfig(j, "test");
  EXPECT_EQ(c.rope.type, RopeType::kLlama3);
  EXPECT_DOUBLE_EQ(*c.rope.factor, 32.0f);
  EXPECT_DOUBLE_EQ(c.rope.high_freq_factor, 4.0);
  EXPECT_EQ(*c.rope.original_max_position_embeddings, 8192);
}

TEST(ParseHfConfig, YarnKeepsAllParameters) {
  json j = LlamaBase();
  j["model_type"] = "qwen3";
  j["rope_parameters"] = json::parse(R"({"rope_type": "yarn", "rope_theta": 1000000.0,
      "factor": 4.0, "original_max_position_embeddings": 32768, "beta_fast": 16,
      "beta_slow": 2, "attention_factor": 1.25, "mscale": 0.707, "mscale_all_dim": 1.0,
      "truncate": false})");
  const ModelConfig c = ParseHfConfig(j, "test");
  EXPECT_EQ(c.rope.type, RopeType::kYarn);
  EXPECT_DOUBLE_EQ(c.rope.theta, 1e6);
  EXPECT_DOUBLE_EQ(*c.rope.factor, 4.0f);
  EXPECT_EQ(*c.rope.original_max_position_embeddings, 32768);
  EXPECT_DOUBLE_EQ(*c.rope.beta_fast, 16.0);
  EXPECT_DOUBLE_EQ(*c.rope.beta_slow, 2.0);
  ASSERT_TRUE(c.rope.attention_factor.has_value());
  EXPECT_DOUBLE_EQ(*c.rope.attention_factor, 1.25);
  EXPECT_DOUBLE_EQ(c.rope.mscale.value(), 0.707);
  EXPECT_DOUBLE_EQ(c.rope.mscale_all_dim.value(), 1.0);
  EXPECT_FALSE(c.rope.truncate);
  EXPECT_TRUE(c.qk_norm);
}

TEST(ParseHfConfig, DynamicRope) {
  json j = LlamaBase();
  j["rope_scaling"] = json::parse(R"({"type": "dynamic", "factor": 2.0})");
  const ModelConfig c = ParseHfConfig(j, "test");
  EXPECT_EQ(c.rope.type, RopeType::kDynamic);
  EXPECT_DOUBLE_EQ(*c.rope.factor, 2.0f);
}

TEST(ParseHfConfig, MistralSlidingWindow) {
  json j = LlamaBase();
  j["model_type"] = "mistral";
  j["sliding_window"] = 4096;
  const ModelConfig c = ParseHfConfig(j, "test");
  EXPECT_EQ(c.arch, ModelArch::kMistral);
  EXPECT_EQ(c.SlidingWindowForLayer(0), 4096);
  EXPECT_EQ(c.SlidingWindowForLayer(1), 4096);
  j["sliding_window"] = nullptr;
  EXPECT_EQ(ParseHfConfig(j, "test").SlidingWindowForLayer(0), 0);
}

TEST(ParseHfConfig, Qwen2SlidingWindowFollowsMaxWindowLayers) {
  json j = LlamaBase();
  j["model_type"] = "qwen2";
  j["sliding_window"] = 32;
  j["use_sliding_window"] = false;
  j["max_window_layers"] = 1;
  EXPECT_EQ(ParseHfConfig(j, "test").SlidingWindowForLayer(1), 0);
  j["use_sliding_window"] = true;
  const ModelConfig c = ParseHfConfig(j, "test");
  EXPECT_EQ(c.SlidingWindowForLayer(0), 0);
  EXPECT_EQ(c.SlidingWindowForLayer(1), 32);
  EXPECT_TRUE(c.attention_bias);  // qwen2 always has q/k/v biases
}

TEST(ParseHfConfig, RefusesUnknownArchitecturesAndOptions) {
  json j = LlamaBase();
  j["model_type"] = "falcon";
  EXPECT_ERROR_CONTAINS(ParseHfConfig(j, "cfg.json"), "cfg.json", "falcon", "not supported");
  j["model_type"] = "gemma3";  // the multimodal wrapper: its text model is gemma3_text
  EXPECT_ERROR_CONTAINS(ParseHfConfig(j, "cfg.json"), "\"gemma3\"", "text_config", "gemma3_text");
  j = LlamaBase();
  j["rope_scaling"] = json::parse(R"({"rope_type": "longrope", "factor": 2.0})");
  EXPECT_ERROR_CONTAINS(ParseHfConfig(j, "cfg.json"), "longrope");
  j = LlamaBase();
  j["hidden_act"] = "gelu";
  EXPECT_ERROR_CONTAINS(ParseHfConfig(j, "cfg.json"), "gelu");
  j = LlamaBase();
  j["mlp_bias"] = true;
  EXPECT_ERROR_CONTAINS(ParseHfConfig(j, "cfg.json"), "mlp_bias");
  j = LlamaBase();
  j["num_key_value_heads"] = 3;
  EXPECT_ERROR_CONTAINS(ParseHfConfig(j, "cfg.json"), "num_kv_heads 3");
  j = LlamaBase();
  j.erase("vocab_size");
  EXPECT_ERROR_CONTAINS(ParseHfConfig(j, "cfg.json"), "vocab_size");
  j = LlamaBase();
  j["hidden_size"] = "64";
  EXPECT_ERROR_CONTAINS(ParseHfConfig(j, "cfg.json"), "hidden_size", "integer");
  // #18 class 12: 1e19 read as an unsigned integer was reported as a negative number.
  j = LlamaBase();
  j["hidden_size"] = uint64_t{10000000000000000000u};
  EXPECT_ERROR_CONTAINS(ParseHfConfig(j, "cfg.json"),
                        "\"hidden_size\" = 10000000000000000000 is out of range");
  j = LlamaBase();
  j["max_position_embeddings"] = 0;
  EXPECT_ERROR_CONTAINS(ParseHfConfig(j, "cfg.json"),
                        "\"max_position_embeddings\" = 0 (a model has a context)");
}

json GemmaBase(const std::string& model_type) {
  json j = LlamaBase();
  j["model_type"] = model_type;
  j["num_hidden_layers"] = 6;
  j["head_dim"] = 16;
  return j;
}

// Gemma before transformers v5 had no "layer_types": Gemma 2 slides on even layers, Gemma 3 on
// all but every sliding_window_pattern-th (6 by default); Gemma 3's local rope was
// "rope_local_base_freq"; Gemma 2's soft-caps default on (50, 30) unless null.
TEST(ParseHfConfig, GemmaOlderSpellingsAndDefaults) {
  json j = GemmaBase("gemma2");
  j["sliding_window"] = 8;
  ModelConfig c = ParseHfConfig(j, "cfg.json");
  for (int layer = 0; layer < 6; ++layer) {
    EXPECT_EQ(c.SlidingWindowForLayer(layer), layer % 2 == 0 ? 8 : 0) << layer;
  }
  EXPECT_EQ(c.attn_logit_softcapping, 50.0f);
  EXPECT_EQ(c.final_logit_softcapping, 30.0f);
  EXPECT_EQ(c.query_pre_attn_scalar, 256.0);
  j["attn_logit_softcapping"] = nullptr;
  j["final_logit_softcapping"] = nullptr;
  c = ParseHfConfig(j, "cfg.json");
  EXPECT_EQ(c.attn_logit_softcapping, 0.0f);
  EXPECT_EQ(c.final_logit_softcapping, 0.0f);

  j = GemmaBase("gemma3_text");
  j["sliding_window"] = 8;
  j["rope_theta"] = 1000000.0;
  j["rope_local_base_freq"] = 10000.0;
  j["rope_scaling"] = json::parse(R"({"rope_type": "linear", "factor": 8.0})");
  c = ParseHfConfig(j, "cfg.json");
  for (int layer = 0; layer < 6; ++layer) {
    EXPECT_EQ(c.SlidingWindowForLayer(layer), layer == 5 ? 0 : 8) << layer;
  }
  EXPECT_EQ(c.rope.type, RopeType::kLinear);  // the global rope is scaled
  EXPECT_EQ(c.rope.theta, 1000000.0);
  ASSERT_TRUE(c.sliding_rope.has_value());
  EXPECT_EQ(c.sliding_rope->type, RopeType::kDefault);  // the local one is not
  EXPECT_EQ(c.sliding_rope->theta, 10000.0);
  EXPECT_EQ(c.attn_logit_softcapping, 0.0f);
  // Kept in Gemma 3 configs but never applied by transformers' Gemma3Attention (the live oracle's
  // gemma3-f32-softcaps-untied case matches only without it): not applied here either.
  j["attn_logit_softcapping"] = 5.0;
  j["final_logit_softcapping"] = 10.0;
  c = ParseHfConfig(j, "cfg.json");
  EXPECT_EQ(c.attn_logit_softcapping, 0.0f);
  EXPECT_EQ(c.final_logit_softcapping, 10.0f);
  j["sliding_window_pattern"] = 3;
  c = ParseHfConfig(j, "cfg.json");
  EXPECT_EQ(c.SlidingWindowForLayer(2), 0);
  EXPECT_EQ(c.SlidingWindowForLayer(3), 8);
}

TEST(ParseHfConfig, GemmaRefusesWhatItDoesNotImplement) {
  json j = GemmaBase("gemma2");
  j["hidden_activation"] = "relu";
  EXPECT_ERROR_CONTAINS(ParseHfConfig(j, "cfg.json"), "cfg.json", "relu", "gelu_pytorch_tanh");
  j = GemmaBase("gemma3_text");
  j["use_bidirectional_attention"] = true;
  EXPECT_ERROR_CONTAINS(ParseHfConfig(j, "cfg.json"), "use_bidirectional_attention");
  j = GemmaBase("gemma3_text");
  j["rope_parameters"] = json::parse(
      R"({"full_attention": {"rope_theta": 1e6}, "chunked_attention": {"rope_theta": 1e4}})");
  EXPECT_ERROR_CONTAINS(ParseHfConfig(j, "cfg.json"), "chunked_attention");
  j = GemmaBase("gemma2");
  j["final_logit_softcapping"] = -1.0;
  EXPECT_ERROR_CONTAINS(ParseHfConfig(j, "cfg.json"), "final_logit_softcapping", "-1");
  j = GemmaBase("gemma2");
  j["layer_types"] = json::array({"sliding_attention", "full_attention"});  // 6 layers
  j["sliding_window"] = 8;
  EXPECT_ERROR_CONTAINS(ParseHfConfig(j, "cfg.json"), "layer_types", "6 layer types");
  j = GemmaBase("gemma3_text");
  j["query_pre_attn_scalar"] = 0;
  EXPECT_ERROR_CONTAINS(ParseHfConfig(j, "cfg.json"), "query_pre_attn_scalar");
}

// Qwen3.5's hybrid layout: layer_types with linear_attention, or every full_attention_interval-th
// layer full (4 by default); partial rotary; the DeltaNet sizes checked.
TEST(ParseHfConfig, Qwen35HybridLayers) {
  json j = LlamaBase();
  j["model_type"] = "qwen3_5_text";
  j["num_hidden_layers"] = 8;
  j["head_dim"] = 32;
  j.update(json::parse(R"({"linear_num_key_heads": 2, "linear_num_value_heads": 4,
      "linear_key_head_dim": 16, "linear_value_head_dim": 8, "linear_conv_kernel_dim": 4,
      "partial_rotary_factor": 0.25})"));
  ModelConfig c = ParseHfConfig(j, "cfg.json");
  EXPECT_EQ(c.arch, ModelArch::kQwen35);
  EXPECT_EQ(c.rotary_dim, 8);
  EXPECT_TRUE(c.attention_output_gate);
  EXPECT_TRUE(c.norm_adds_one);
  EXPECT_EQ(c.linear_attention.conv_dim(), 2 * 32 + 32);
  for (int layer = 0; layer < 8; ++layer) {
    EXPECT_EQ(c.IsLinearAttentionLayer(layer), layer % 4 != 3) << layer;
  }
  j["layer_types"] =
      json::array({"full_attention", "linear_attention", "linear_attention", "full_attention",
                   "linear_attention", "linear_attention", "linear_attention", "full_attention"});
  c = ParseHfConfig(j, "cfg.json");
  EXPECT_FALSE(c.IsLinearAttentionLayer(0));
  EXPECT_TRUE(c.IsLinearAttentionLayer(1));
  json bad = j;
  bad["linear_num_value_heads"] = 3;
  EXPECT_ERROR_CONTAINS(ParseHfConfig(bad, "cfg.json"), "linear_num_value_heads 3",
                        "linear_num_key_heads 2");
  bad = j;
  bad.erase("linear_conv_kernel_dim");
  EXPECT_ERROR_CONTAINS(ParseHfConfig(bad, "cfg.json"), "linear_conv_kernel_dim");
  bad = j;
  bad["model_type"] = "qwen3_5";  // the multimodal wrapper
  EXPECT_ERROR_CONTAINS(ParseHfConfig(bad, "cfg.json"), "\"qwen3_5\"", "text_config");
  // The wrapper reads text_config: its model_type must be the text model's.
  bad["text_config"] = j;
  bad["text_config"]["model_type"] = "qwen3_next";
  EXPECT_ERROR_CONTAINS(ParseHfConfig(bad, "cfg.json"), "text_config.model_type \"qwen3_next\"",
                        "\"qwen3_5_text\"");
  // Only the hybrid family takes linear_attention layers and partial rotary.
  bad = LlamaBase();
  bad["layer_types"] = json::array({"linear_attention", "full_attention"});
  EXPECT_ERROR_CONTAINS(ParseHfConfig(bad, "cfg.json"), "linear_attention", "not supported");
  bad = LlamaBase();
  bad["partial_rotary_factor"] = 0.5;
  EXPECT_ERROR_CONTAINS(ParseHfConfig(bad, "cfg.json"), "partial_rotary_factor 0.5");
}

// Qwen3-Next: Qwen3.5's hybrid plus mixture-of-experts MLPs on every decoder_sparse_step-th layer
// not in mlp_only_layers; inconsistent expert counts and layer lists are errors naming the key.
TEST(ParseHfConfig, Qwen3NextExperts) {
  json j = LlamaBase();
  j["model_type"] = "qwen3_next";
  j["num_hidden_layers"] = 8;
  j["head_dim"] = 32;
  j.update(json::parse(R"({"linear_num_key_heads": 2, "linear_num_value_heads": 4,
      "linear_key_head_dim": 16, "linear_value_head_dim": 8, "linear_conv_kernel_dim": 4,
      "partial_rotary_factor": 0.25, "num_experts": 8, "num_experts_per_tok": 2,
      "moe_intermediate_size": 32, "shared_expert_intermediate_size": 64,
      "decoder_sparse_step": 2, "mlp_only_layers": [3], "norm_topk_prob": false})"));
  const ModelConfig c = ParseHfConfig(j, "cfg.json");
  EXPECT_EQ(c.arch, ModelArch::kQwen3Next);
  EXPECT_EQ(c.linear_projections, ModelConfig::LinearProjections::kFused);
  EXPECT_EQ(c.moe.num_experts, 8);
  EXPECT_EQ(c.moe.experts_per_token, 2);
  EXPECT_FALSE(c.moe.norm_topk_prob);
  for (int layer = 0; layer < 8; ++layer) {  // layers 1, 5, 7 (2 and 3 sparse, 3 forced dense)
    EXPECT_EQ(c.IsMoeLayer(layer), layer == 1 || layer == 5 || layer == 7) << layer;
  }
  json bad = j;
  bad["num_experts_per_tok"] = 9;
  EXPECT_ERROR_CONTAINS(ParseHfConfig(bad, "cfg.json"), "num_experts_per_tok", "9");
  bad = j;
  bad["mlp_only_layers"] = json::array({8});
  EXPECT_ERROR_CONTAINS(ParseHfConfig(bad, "cfg.json"), "mlp_only_layers", "[0, 8)");
  bad = j;
  bad["decoder_sparse_step"] = 0;
  EXPECT_ERROR_CONTAINS(ParseHfConfig(bad, "cfg.json"), "decoder_sparse_step");
  bad = j;
  bad.erase("moe_intermediate_size");
  EXPECT_ERROR_CONTAINS(ParseHfConfig(bad, "cfg.json"), "moe_intermediate_size");
}

// Qwen3-MoE: Qwen3's block with experts and no shared expert; transformers' default is
// unnormalised routing weights; the expert count may be saved as num_local_experts.
TEST(ParseHfConfig, Qwen3MoeExperts) {
  json j = LlamaBase();
  j["model_type"] = "qwen3_moe";
  j.update(json::parse(R"({"num_local_experts": 8, "num_experts_per_tok": 2,
      "moe_intermediate_size": 32})"));
  const ModelConfig c = ParseHfConfig(j, "cfg.json");
  EXPECT_EQ(c.arch, ModelArch::kQwen3Moe);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_EQ(c.moe.num_experts, 8);
  EXPECT_FALSE(c.moe.norm_topk_prob);
  EXPECT_EQ(c.moe.shared_expert_intermediate_size, 0);
  EXPECT_TRUE(c.IsMoeLayer(0));
  json bad = j;
  bad["num_experts"] = 4;
  EXPECT_ERROR_CONTAINS(ParseHfConfig(bad, "cfg.json"), "num_experts", "4", "num_local_experts",
                        "8");
}

// Mixtral: every layer a mixture of experts of intermediate_size, always renormalised; the
// Qwen MoE keys it does not have are not read.
TEST(ParseHfConfig, MixtralExperts) {
  json j = LlamaBase();
  j["model_type"] = "mixtral";
  j.update(json::parse(R"({"num_local_experts": 8, "num_experts_per_tok": 2, "sliding_window": 16,
      "norm_topk_prob": false, "decoder_sparse_step": 2, "moe_intermediate_size": 7})"));
  const ModelConfig c = ParseHfConfig(j, "cfg.json");
  EXPECT_EQ(c.arch, ModelArch::kMixtral);
  EXPECT_EQ(c.moe.num_experts, 8);
  EXPECT_EQ(c.moe.experts_per_token, 2);
  EXPECT_EQ(c.moe.expert_intermediate_size, 128);
  EXPECT_TRUE(c.moe.norm_topk_prob);
  EXPECT_TRUE(c.IsMoeLayer(0));
  EXPECT_TRUE(c.IsMoeLayer(1));
  EXPECT_EQ(c.SlidingWindowForLayer(1), 16);
  json bad = j;
  bad["num_experts_per_tok"] = 9;
  EXPECT_ERROR_CONTAINS(ParseHfConfig(bad, "cfg.json"), "cfg.json", "\"num_experts_per_tok\" = 9",
                        "num_experts = 8");
  bad = j;
  bad.erase("num_local_experts");
  EXPECT_ERROR_CONTAINS(ParseHfConfig(bad, "cfg.json"), "\"num_local_experts\" = 0");
}

// Phi-3 and Phi-4-mini: partial rotary read (other Llama-block families refuse it), longrope
// (Phi-3's 128k models) refused by name.
TEST(ParseHfConfig, Phi3PartialRotaryAndRefusals) {
  json j = LlamaBase();
  j["model_type"] = "phi3";
  j["rope_parameters"] = json::parse(R"({"rope_theta": 10000.0, "rope_type": "default",
      "partial_rotary_factor": 0.75})");
  const ModelConfig c = ParseHfConfig(j, "cfg.json");
  EXPECT_EQ(c.arch, ModelArch::kPhi3);
  EXPECT_EQ(c.rotary_dim, 12);
  EXPECT_TRUE(FamilyOf(c.arch).tensors.fused_qkv);
  j["model_type"] = "mistral";
  EXPECT_ERROR_CONTAINS(ParseHfConfig(j, "cfg.json"), "partial_rotary_factor 0.75",
                        "not supported for mistral");
  j["model_type"] = "phi3";
  j["rope_parameters"] = json::parse(R"({"rope_theta": 10000.0, "rope_type": "longrope",
      "short_factor": [1.0], "long_factor": [2.0], "original_max_position_embeddings": 64})");
  EXPECT_ERROR_CONTAINS(ParseHfConfig(j, "cfg.json"), "cfg.json", "longrope");
}

// Qwen3.5's multimodal wrapper (as Qwen/Qwen3.5-* and mlx-community ship it): the language
// model is text_config; the wrapper's tie_word_embeddings and MLX quantization block win, the
// block's module paths renamed to the text model's and the vision tower's dropped.
TEST(ParseHfConfig, AMultimodalWrapperIsReadAsItsTextModel) {
  json text = LlamaBase();
  text.erase("model_type");
  text["head_dim"] = 32;
  text.update(json::parse(R"({"linear_num_key_heads": 2, "linear_num_value_heads": 4,
      "linear_key_head_dim": 16, "linear_value_head_dim": 8, "linear_conv_kernel_dim": 4,
      "partial_rotary_factor": 0.25, "tie_word_embeddings": false})"));
  json wrapper = {{"model_type", "qwen3_5"},
                  {"text_config", text},
                  {"vision_config", {{"depth", 2}}},
                  {"tie_word_embeddings", true}};
  wrapper["quantization"] = json::parse(R"({"group_size": 64, "bits": 4,
      "language_model.model.layers.0.mlp.gate_proj": {"group_size": 32, "bits": 8},
      "model.language_model.layers.1.mlp.up_proj": false,
      "vision_tower.blocks.0.attn.qkv": {"group_size": 64, "bits": 8}})");
  const ModelConfig c = ParseHfConfig(wrapper, "cfg.json");
  EXPECT_EQ(c.arch, ModelArch::kQwen35);
  EXPECT_EQ(c.model_type, "qwen3_5_text");
  EXPECT_EQ(c.text_model_of, "qwen3_5");
  EXPECT_TRUE(c.tie_word_embeddings);  // the wrapper's
  EXPECT_EQ(c.linear_attention.num_value_heads, 4);
  ASSERT_TRUE(c.mlx_quantization.has_value());
  const auto& overrides = c.mlx_quantization->overrides;
  EXPECT_EQ(overrides.size(), 2u);
  ASSERT_TRUE(overrides.contains("model.layers.0.mlp.gate_proj"));
  EXPECT_EQ(overrides.at("model.layers.0.mlp.gate_proj")->bits, 8);
  ASSERT_TRUE(overrides.contains("model.layers.1.mlp.up_proj"));
  EXPECT_FALSE(overrides.at("model.layers.1.mlp.up_proj").has_value());
  // A text model read directly has no wrapper.
  text["model_type"] = "qwen3_5_text";
  EXPECT_EQ(ParseHfConfig(text, "cfg.json").text_model_of, "");
}

}  // namespace
}  // namespace proctor
