// The mixture-of-experts, Phi-3, Qwen3.5 and Qwen3-Next GGUF metadata as llama.cpp reads it
// (src/models/llama.cpp, qwen3moe.cpp, phi3.cpp, qwen35.cpp, qwen3next.cpp in the
// llama-cpp-python 0.3.36 sdist): "llama" with experts is Mixtral, qwen3moe's expert size and its
// fallback, the refusals, Phi-3's rotary count and window, Qwen3.5's and Qwen3-Next's DeltaNet
// sizes, layers and names, Qwen3-Next's shared expert; and the
// stacked-experts tensors split into one matrix per expert. Whole models are checked against
// transformers and llama.cpp in model/families_gguf_oracle_test.cc.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>

#include "formats/gguf.h"
#include "formats/gguf_model.h"
#include "formats/testing_gguf_builder.h"
#include "util/testing_files.h"

namespace proctor {
namespace {

using testing::GgufBuilder;

// A metadata-only GGUF of `arch`: 2 layers, hidden 64, 4 heads of 16 (2 kv), ff 128, plus `extra`
// key-value pairs that `add` appends.
std::shared_ptr<GgufFile> MetadataGguf(const std::string& arch, int extra,
                                       const std::function<void(GgufBuilder&, std::string)>& add) {
  GgufBuilder b(3, 0, 8 + extra);
  b.KeyStr("general.architecture", arch);
  const std::string p = arch + ".";
  b.KeyU32(p + "vocab_size", 512).KeyU32(p + "embedding_length", 64);
  b.KeyU32(p + "block_count", 2).KeyU32(p + "feed_forward_length", 128);
  b.KeyU32(p + "attention.head_count", 4).KeyU32(p + "attention.head_count_kv", 2);
  b.KeyU32(p + "attention.key_length", 16);
  add(b, p);
  return GgufFile::Parse(b.bytes(), arch + ".gguf");
}

ModelConfig Config(const std::string& arch, int extra,
                   const std::function<void(GgufBuilder&, std::string)>& add) {
  return ConfigFromGguf(*MetadataGguf(arch, extra, add), WeightStore());
}

TEST(MoeGgufMetadata, LlamaWithExpertsIsMixtral) {
  const ModelConfig c = Config("llama", 2, [](GgufBuilder& b, const std::string& p) {
    b.KeyU32(p + "expert_count", 8).KeyU32(p + "expert_used_count", 2);
  });
  EXPECT_EQ(c.arch, ModelArch::kMixtral);
  EXPECT_TRUE(c.rope_adjacent_pairs);  // llama.cpp's llama converter permuted Q/K
  EXPECT_EQ(c.moe.num_experts, 8);
  EXPECT_EQ(c.moe.experts_per_token, 2);
  EXPECT_EQ(c.moe.expert_intermediate_size, 128);  // llama: feed_forward_length
  EXPECT_TRUE(c.moe.norm_topk_prob);
  EXPECT_TRUE(c.IsMoeLayer(0) && c.IsMoeLayer(1));
  // Without experts it stays Llama.
  EXPECT_EQ(Config("llama", 0, [](GgufBuilder&, const std::string&) {}).arch, ModelArch::kLlama);
}

TEST(MoeGgufMetadata, Qwen3MoeExpertSizeAndItsFallback) {
  const ModelConfig c = Config("qwen3moe", 3, [](GgufBuilder& b, const std::string& p) {
    b.KeyU32(p + "expert_count", 8).KeyU32(p + "expert_used_count", 2);
    b.KeyU32(p + "expert_feed_forward_length", 32);
  });
  EXPECT_EQ(c.arch, ModelArch::kQwen3Moe);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_FALSE(c.rope_adjacent_pairs);
  EXPECT_EQ(c.moe.expert_intermediate_size, 32);
  // llama.cpp: n_ff_exp absent -> n_ff / n_expert_used.
  const ModelConfig fallback = Config("qwen3moe", 2, [](GgufBuilder& b, const std::string& p) {
    b.KeyU32(p + "expert_count", 8).KeyU32(p + "expert_used_count", 4);
  });
  EXPECT_EQ(fallback.moe.expert_intermediate_size, 32);
}

TEST(MoeGgufMetadata, InconsistentExpertsAreRefusedByKey) {
  EXPECT_ERROR_CONTAINS(Config("qwen3moe", 0, [](GgufBuilder&, const std::string&) {}),
                        "qwen3moe.expert_count\" is missing");
  EXPECT_ERROR_CONTAINS(Config("qwen3moe", 2,
                               [](GgufBuilder& b, const std::string& p) {
                                 b.KeyU32(p + "expert_count", 4).KeyU32(p + "expert_used_count", 5);
                               }),
                        "expert_used_count = 5 with expert_count = 4");
  EXPECT_ERROR_CONTAINS(Config("qwen3moe", 3,
                               [](GgufBuilder& b, const std::string& p) {
                                 b.KeyU32(p + "expert_count", 4).KeyU32(p + "expert_used_count", 2);
                                 b.KeyU32(p + "expert_gating_func", 2);
                               }),
                        "expert_gating_func = 2");
  EXPECT_ERROR_CONTAINS(Config("qwen3", 2,
                               [](GgufBuilder& b, const std::string& p) {
                                 b.KeyU32(p + "expert_count", 4).KeyU32(p + "expert_used_count", 2);
                               }),
                        "qwen3.expert_count = 4: experts are not supported in qwen3");
}

TEST(Phi3GgufMetadata, PartialRotaryCountAndWindow) {
  const ModelConfig c = Config("phi3", 2, [](GgufBuilder& b, const std::string& p) {
    b.KeyU32(p + "rope.dimension_count", 12).KeyU32(p + "attention.sliding_window", 20);
  });
  EXPECT_EQ(c.arch, ModelArch::kPhi3);
  EXPECT_EQ(c.rotary_dim, 12);
  EXPECT_EQ(c.rope.rotary_dim, 12);  // stated, not recomputed from a factor
  EXPECT_EQ(ComputeRopeFrequencies(c.rope, c.head_dim, 256).rotary_dim, 12);
  EXPECT_EQ(c.SlidingWindowForLayer(0), 20);
  EXPECT_EQ(c.SlidingWindowForLayer(1), 20);
  // A family without partial rotary refuses the count.
  EXPECT_ERROR_CONTAINS(Config("llama", 1,
                               [](GgufBuilder& b, const std::string& p) {
                                 b.KeyU32(p + "rope.dimension_count", 12);
                               }),
                        "rope.dimension_count 12 differs from the head size 16");
}

TEST(Qwen35GgufMetadata, DeltaNetSizesLayersAndLayout) {
  // 4 layers would need the interval; 2 layers with the per-layer flags: linear, then full.
  const ModelConfig c = Config("qwen35", 7, [](GgufBuilder& b, const std::string& p) {
    b.KeyU32(p + "ssm.state_size", 16).KeyU32(p + "ssm.group_count", 2);
    b.KeyU32(p + "ssm.time_step_rank", 4).KeyU32(p + "ssm.inner_size", 48);
    b.KeyU32(p + "ssm.conv_kernel", 4).KeyU32(p + "rope.dimension_count", 8);
    b.KeyBools(p + "attention.recurrent_layers", {true, false});
  });
  EXPECT_EQ(c.arch, ModelArch::kQwen35);
  const LinearAttentionConfig& la = c.linear_attention;
  EXPECT_EQ(la.key_head_dim, 16);
  EXPECT_EQ(la.num_key_heads, 2);
  EXPECT_EQ(la.num_value_heads, 4);
  EXPECT_EQ(la.value_head_dim, 12);
  EXPECT_EQ(la.conv_kernel, 4);
  EXPECT_EQ(la.storage, LinearAttentionConfig::Storage::kLlamaCpp);
  // Tiled value heads: 0, 1, 2, 3 read key heads 0, 1, 0, 1 (HF's grouped order: 0, 0, 1, 1).
  EXPECT_EQ(la.KeyHeadOf(1), 1);
  EXPECT_EQ(la.KeyHeadOf(2), 0);
  EXPECT_TRUE(c.IsLinearAttentionLayer(0));
  EXPECT_FALSE(c.IsLinearAttentionLayer(1));
  EXPECT_TRUE(c.attention_output_gate);
  EXPECT_FALSE(c.norm_adds_one);  // the file stores 1 + weight
  EXPECT_EQ(c.rotary_dim, 8);
}

TEST(Qwen35GgufMetadata, ValueHeadsThatDoNotShareKeyHeadsEvenlyAreRefused) {
  EXPECT_ERROR_CONTAINS(
      Config("qwen35", 5,
             [](GgufBuilder& b, const std::string& p) {
               b.KeyU32(p + "ssm.state_size", 16).KeyU32(p + "ssm.group_count", 3);
               b.KeyU32(p + "ssm.time_step_rank", 4);
               b.KeyU32(p + "ssm.inner_size", 64);
               b.KeyU32(p + "ssm.conv_kernel", 4);
             }),
      "ssm.time_step_rank 4 should be a multiple of ssm.group_count 3");
  EXPECT_ERROR_CONTAINS(Config("qwen35", 0, [](GgufBuilder&, const std::string&) {}),
                        "qwen35.ssm.state_size\" is missing");
}

TEST(GgufTensorNames, Qwen35DeltaNetNamesAreLlamaCpps) {
  const FamilyTraits& qwen35 = FamilyOf(ModelArch::kQwen35);
  const std::pair<const char*, const char*> kPairs[] = {
      {"blk.0.attn_qkv.weight", "model.layers.0.linear_attn.in_proj_qkv.weight"},
      {"blk.0.attn_gate.weight", "model.layers.0.linear_attn.in_proj_z.weight"},
      {"blk.0.ssm_beta.weight", "model.layers.0.linear_attn.in_proj_b.weight"},
      {"blk.0.ssm_alpha.weight", "model.layers.0.linear_attn.in_proj_a.weight"},
      {"blk.0.ssm_conv1d.weight", "model.layers.0.linear_attn.conv1d.weight"},
      {"blk.0.ssm_norm.weight", "model.layers.0.linear_attn.norm.weight"},
      {"blk.0.ssm_out.weight", "model.layers.0.linear_attn.out_proj.weight"},
      {"blk.0.ssm_dt.bias", "model.layers.0.linear_attn.dt_bias"},
      {"blk.0.ssm_a", "model.layers.0.linear_attn.ssm_a"},
      {"blk.1.post_attention_norm.weight", "model.layers.1.post_attention_layernorm.weight"},
      {"blk.1.attn_q.weight", "model.layers.1.self_attn.q_proj.weight"},
  };
  for (const auto& [gguf, hf] : kPairs) EXPECT_EQ(GgufToHfTensorName(gguf, qwen35), hf) << gguf;
}

TEST(Qwen3NextGgufMetadata, GroupedValueHeadsFusedBetaAlphaAndASharedExpert) {
  const ModelConfig c = Config("qwen3next", 9, [](GgufBuilder& b, const std::string& p) {
    b.KeyU32(p + "ssm.state_size", 16).KeyU32(p + "ssm.group_count", 2);
    b.KeyU32(p + "ssm.time_step_rank", 4).KeyU32(p + "ssm.inner_size", 48);
    b.KeyU32(p + "ssm.conv_kernel", 4).KeyU32(p + "rope.dimension_count", 8);
    b.KeyU32(p + "expert_count", 4).KeyU32(p + "expert_used_count", 2);
    b.KeyU32(p + "expert_shared_feed_forward_length", 24);
  });
  EXPECT_EQ(c.arch, ModelArch::kQwen3Next);
  const LinearAttentionConfig& la = c.linear_attention;
  EXPECT_EQ(la.storage, LinearAttentionConfig::Storage::kLlamaCpp);  // ssm_a and [channels, taps]
                                                                     // conv taps, as for qwen35
  // The converter leaves value heads grouped by key head: 0, 1, 2, 3 read key heads 0, 0, 1, 1.
  EXPECT_EQ(la.KeyHeadOf(1), 0);
  EXPECT_EQ(la.KeyHeadOf(2), 1);
  EXPECT_EQ(c.linear_projections, ModelConfig::LinearProjections::kFusedBetaAlpha);
  // No attention.recurrent_layers: every 4th layer is full attention (2 layers: both linear).
  EXPECT_TRUE(c.IsLinearAttentionLayer(0) && c.IsLinearAttentionLayer(1));
  EXPECT_EQ(c.moe.expert_intermediate_size, 64);  // feed_forward_length / experts used
  EXPECT_EQ(c.moe.shared_expert_intermediate_size, 24);
  EXPECT_TRUE(c.moe.norm_topk_prob);
  EXPECT_TRUE(c.IsMoeLayer(0) && c.IsMoeLayer(1));
  EXPECT_FALSE(c.norm_adds_one);
}

TEST(GgufTensorNames, Qwen3NextFusedBetaAlphaAndSharedExpertNamesAreLlamaCpps) {
  const FamilyTraits& next = FamilyOf(ModelArch::kQwen3Next);
  const std::pair<const char*, const char*> kPairs[] = {
      {"blk.0.attn_qkv.weight", "model.layers.0.linear_attn.in_proj_qkv.weight"},
      {"blk.0.attn_gate.weight", "model.layers.0.linear_attn.in_proj_z.weight"},
      {"blk.0.ssm_ba.weight", "model.layers.0.linear_attn.in_proj_ba.weight"},
      {"blk.2.ffn_gate_inp.weight", "model.layers.2.mlp.gate.weight"},
      {"blk.2.ffn_gate_inp_shexp.weight", "model.layers.2.mlp.shared_expert_gate.weight"},
      {"blk.2.ffn_gate_shexp.weight", "model.layers.2.mlp.shared_expert.gate_proj.weight"},
      {"blk.2.ffn_up_shexp.weight", "model.layers.2.mlp.shared_expert.up_proj.weight"},
      {"blk.2.ffn_down_shexp.weight", "model.layers.2.mlp.shared_expert.down_proj.weight"},
  };
  for (const auto& [gguf, hf] : kPairs) {
    EXPECT_EQ(GgufToHfTensorName(gguf, next), hf) << gguf;
    EXPECT_EQ(HfToGgufTensorName(hf, next), gguf) << hf;
  }
}

// A GGUF holding one F32 tensor `name` of ggml dims `dims` whose values count 0, 1, 2, ...
std::shared_ptr<GgufFile> OneTensorGguf(const std::string& arch, const std::string& name,
                                        const std::vector<uint64_t>& dims) {
  GgufBuilder b(3, 1, 3);
  b.KeyStr("general.architecture", arch);
  b.KeyU32(arch + ".expert_count", 4).KeyU32(arch + ".expert_used_count", 2);
  b.Str(name).U32(static_cast<uint32_t>(dims.size()));
  uint64_t count = 1;
  for (const uint64_t d : dims) {
    b.U64(d);
    count *= d;
  }
  b.U32(0).U64(0).Pad(32);  // F32 at offset 0
  for (uint64_t i = 0; i < count; ++i) {
    const float v = static_cast<float>(i);
    b.Raw(&v, 4);
  }
  return GgufFile::Parse(b.bytes(), arch + ".gguf");
}

TEST(MoeGgufTensors, StackedExpertsBecomeOneMatrixPerExpert) {
  // ggml dims [in 3, out 2, experts 4]: expert e holds values 6e .. 6e + 5, rows of 3.
  WeightStore store;
  AddGgufTensors(OneTensorGguf("llama", "blk.1.ffn_down_exps.weight", {3, 2, 4}), store);
  for (int e = 0; e < 4; ++e) {
    SCOPED_TRACE(e);
    const TensorInfo* t =
        store.Find(fmt::format("model.layers.1.block_sparse_moe.experts.{}.w2.weight", e));
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->shape, (std::vector<int64_t>{2, 3}));
    ASSERT_EQ(t->bytes, 6 * sizeof(float));
    float first = 0.0f;
    std::memcpy(&first, t->data, sizeof(float));
    EXPECT_EQ(first, 6.0f * e);
  }
  WeightStore qwen;
  AddGgufTensors(OneTensorGguf("qwen3moe", "blk.0.ffn_gate_exps.weight", {3, 2, 4}), qwen);
  EXPECT_TRUE(qwen.Has("model.layers.0.mlp.experts.3.gate_proj.weight"));
}

TEST(MoeGgufTensors, ASharedExpertGateWrittenAsAVectorIsOneRow) {
  WeightStore store;
  AddGgufTensors(OneTensorGguf("qwen3next", "blk.0.ffn_gate_inp_shexp.weight", {8}), store);
  const TensorInfo* gate = store.Find("model.layers.0.mlp.shared_expert_gate.weight");
  ASSERT_NE(gate, nullptr);
  EXPECT_EQ(gate->shape, (std::vector<int64_t>{1, 8}));
}

TEST(MoeGgufTensors, AStackThatIsNotThreeDimensionalIsRefused) {
  WeightStore store;
  EXPECT_ERROR_CONTAINS(
      AddGgufTensors(OneTensorGguf("qwen3moe", "blk.0.ffn_up_exps.weight", {3, 8}), store),
      "blk.0.ffn_up_exps.weight\" has shape [8, 3]");
}

}  // namespace
}  // namespace proctor
