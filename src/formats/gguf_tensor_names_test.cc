// GGUF and Hugging Face tensor names and Q/K row orders: llama.cpp's names (convert_hf_to_gguf.py's
// tensor map for the Llama and Gemma blocks) and the two directions agreeing.
#include <gtest/gtest.h>

#include <string>

#include "formats/family_traits.h"
#include "formats/gguf_model.h"

namespace proctor {
namespace {

TEST(GgufTensorNames, LlamaNamesAreLlamaCppsAndRoundTrip) {
  // Pairs as convert_hf_to_gguf.py writes them for a Llama checkpoint.
  const std::pair<const char*, const char*> kPairs[] = {
      {"model.embed_tokens.weight", "token_embd.weight"},
      {"model.norm.weight", "output_norm.weight"},
      {"lm_head.weight", "output.weight"},
      {"model.layers.0.self_attn.q_proj.weight", "blk.0.attn_q.weight"},
      {"model.layers.3.self_attn.k_proj.bias", "blk.3.attn_k.bias"},
      {"model.layers.12.self_attn.v_proj.weight", "blk.12.attn_v.weight"},
      {"model.layers.1.self_attn.o_proj.weight", "blk.1.attn_output.weight"},
      {"model.layers.1.mlp.gate_proj.weight", "blk.1.ffn_gate.weight"},
      {"model.layers.1.mlp.up_proj.weight", "blk.1.ffn_up.weight"},
      {"model.layers.1.mlp.down_proj.weight", "blk.1.ffn_down.weight"},
      {"model.layers.7.input_layernorm.weight", "blk.7.attn_norm.weight"},
      {"model.layers.7.post_attention_layernorm.weight", "blk.7.ffn_norm.weight"},
  };
  for (const auto& [hf, gguf] : kPairs) {
    SCOPED_TRACE(hf);
    EXPECT_EQ(HfToGgufTensorName(hf), gguf);
    EXPECT_EQ(GgufToHfTensorName(gguf), hf);
  }
}

TEST(GgufTensorNames, GemmaBlocksKeepTheirFourNorms) {
  EXPECT_EQ(HfToGgufTensorName("model.layers.2.post_attention_layernorm.weight",
                               FamilyOf(ModelArch::kGemma2)),
            "blk.2.post_attention_norm.weight");
  EXPECT_EQ(HfToGgufTensorName("model.layers.2.pre_feedforward_layernorm.weight",
                               FamilyOf(ModelArch::kGemma2)),
            "blk.2.ffn_norm.weight");
  EXPECT_EQ(GgufToHfTensorName("blk.2.post_ffw_norm.weight", FamilyOf(ModelArch::kGemma2)),
            "model.layers.2.post_feedforward_layernorm.weight");
}

// The router, Phi-3's fused projections and each family's expert module, as gguf-py's tensor map
// names them (ffn_gate_inp: mlp.gate / block_sparse_moe.gate; attn_qkv: self_attn.qkv_proj;
// ffn_up: mlp.gate_up_proj).
TEST(GgufTensorNames, FamiliesNameTheirRoutersAndFusedProjections) {
  const FamilyTraits& mixtral = FamilyOf(ModelArch::kMixtral);
  const FamilyTraits& qwen3moe = FamilyOf(ModelArch::kQwen3Moe);
  const FamilyTraits& phi3 = FamilyOf(ModelArch::kPhi3);
  EXPECT_EQ(GgufToHfTensorName("blk.1.ffn_gate_inp.weight", mixtral),
            "model.layers.1.block_sparse_moe.gate.weight");
  EXPECT_EQ(GgufToHfTensorName("blk.1.ffn_gate_inp.weight", qwen3moe),
            "model.layers.1.mlp.gate.weight");
  EXPECT_EQ(GgufToHfTensorName("blk.0.attn_qkv.weight", phi3),
            "model.layers.0.self_attn.qkv_proj.weight");
  EXPECT_EQ(GgufToHfTensorName("blk.0.ffn_up.weight", phi3),
            "model.layers.0.mlp.gate_up_proj.weight");
  EXPECT_EQ(HfToGgufTensorName("model.layers.0.mlp.gate_up_proj.weight", phi3),
            "blk.0.ffn_up.weight");
  // Phi-3 has no separate q or gate projection; the stacked experts are no single HF tensor.
  EXPECT_EQ(GgufToHfTensorName("blk.0.attn_q.weight", phi3), "blk.0.attn_q.weight");
  EXPECT_EQ(GgufToHfTensorName("blk.0.ffn_gate.weight", phi3), "blk.0.ffn_gate.weight");
  EXPECT_EQ(GgufToHfTensorName("blk.0.ffn_up_exps.weight", qwen3moe), "blk.0.ffn_up_exps.weight");
}

TEST(GgufTensorNames, NamesWithoutAGgufNameAreNone) {
  for (const char* name :
       {"model.layers.0.self_attn.rotary_emb.inv_freq", "model.layers.x.mlp.up_proj.weight",
        "model.layers.0.mlp.experts.0.up_proj.weight", "model.layers.0", "model.layers..weight",
        "vision_tower.weight", ".weight", "weight", ""}) {
    SCOPED_TRACE(name);
    EXPECT_EQ(HfToGgufTensorName(name), std::nullopt);
  }
}

// convert_hf_to_gguf.py's Q/K row order, worked by hand for two heads of 8 rows: GGUF row
// 2j + k of a head holds HF row k * 4 + j.
TEST(GgufTensorNames, QkRowsInLlamaCppsOrderAndBack) {
  const int64_t hf_row_at_gguf_row[] = {0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15};
  for (int64_t g = 0; g < 16; ++g) {
    SCOPED_TRACE(g);
    EXPECT_EQ(HfRowOfGgufRow(g, 8), hf_row_at_gguf_row[g]);
    EXPECT_EQ(GgufRowOfHfRow(hf_row_at_gguf_row[g], 8), g);
  }
}

}  // namespace
}  // namespace proctor
