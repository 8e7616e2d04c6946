// The family-traits table: every row is found under its names, and the readers take each
// family's flags from its row.
#include "formats/family_traits.h"

#include <gtest/gtest.h>

#include "formats/model_config.h"
#include "util/testing_files.h"

namespace proctor {
namespace {

using nlohmann::json;

TEST(FamilyTraits, EveryRowIsFoundUnderItsNames) {
  for (const FamilyTraits& family : Families()) {
    SCOPED_TRACE(family.hf_model_type);
    EXPECT_EQ(&FamilyOf(family.arch), &family);
    EXPECT_EQ(FindFamilyByHfModelType(family.hf_model_type), &family);
    EXPECT_EQ(ArchName(family.arch), family.hf_model_type);
    if (!family.gguf_architecture.empty()) {
      EXPECT_EQ(FindFamilyByGgufArchitecture(family.gguf_architecture), &family);
    }
  }
  EXPECT_EQ(FindFamilyByHfModelType("falcon"), nullptr);
  // Gemma 3's multimodal "gemma3" config nests the text model: only gemma3_text is a family.
  EXPECT_EQ(FindFamilyByHfModelType("gemma3"), nullptr);
  EXPECT_EQ(FindFamilyByGgufArchitecture(""), nullptr);
  // llama.cpp converts Mistral as "llama": there is no GGUF "mistral".
  EXPECT_EQ(FindFamilyByGgufArchitecture("mistral"), nullptr);
  EXPECT_EQ(FindFamilyByGgufArchitecture("llama")->arch, ModelArch::kLlama);
}

TEST(FamilyTraits, SupportedNamesComeFromTheTable) {
  EXPECT_EQ(SupportedHfModelTypes(),
            "llama, mistral, qwen2, qwen3, gemma2, gemma3_text, qwen3_5_text, qwen3_next, "
            "qwen3_moe, mixtral, phi3");
  EXPECT_EQ(SupportedGgufArchitectures(),
            "llama, qwen2, qwen3, gemma2, gemma3, qwen35, qwen3next, qwen3moe, phi3");
}

// ParseHfConfig gives each family the flags of its row (and config.json's attention_bias only
// where the row leaves it open).
TEST(FamilyTraits, HfConfigTakesTheFlagsOfTheRow) {
  json j = json::parse(R"({
    "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
    "intermediate_size": 128, "vocab_size": 512, "attention_bias": true})");
  for (const FamilyTraits& family : Families()) {
    SCOPED_TRACE(family.hf_model_type);
    j["model_type"] = family.hf_model_type;
    if (family.block == BlockStyle::kHybrid) {  // the DeltaNet sizes have no defaults
      j.update(json::parse(R"({"linear_num_key_heads": 2, "linear_num_value_heads": 4,
          "linear_key_head_dim": 16, "linear_value_head_dim": 16,
          "linear_conv_kernel_dim": 4})"));
    }
    if (family.arch == ModelArch::kMixtral) j["num_local_experts"] = 4;  // no default
    if (family.arch == ModelArch::kMixtral) j["num_experts_per_tok"] = 2;
    const ModelConfig c = ParseHfConfig(j, "test");
    EXPECT_EQ(c.arch, family.arch);
    EXPECT_EQ(c.model_type, family.hf_model_type);
    EXPECT_EQ(c.qk_norm, family.qk_norm);
    EXPECT_EQ(c.attention_bias, family.attention_bias != AttentionBiasRule::kNever);
    EXPECT_EQ(c.tie_word_embeddings, family.tie_word_embeddings_default);
    EXPECT_FALSE(c.rope_adjacent_pairs);  // HF checkpoints rotate halves in every family
  }
}

TEST(FamilyTraits, UnknownModelTypeListsTheTablesNames) {
  const json j = json::parse(R"({"model_type": "falcon"})");
  EXPECT_ERROR_CONTAINS(
      ParseHfConfig(j, "cfg.json"), "cfg.json", "\"falcon\" is not supported",
      "(supported: llama, mistral, qwen2, qwen3, gemma2, gemma3_text, qwen3_5_text, qwen3_next, "
      "qwen3_moe, mixtral, phi3)");
}

}  // namespace
}  // namespace proctor
