// Gemma's GGUF metadata as llama.cpp reads it (src/models/gemma2.cpp, gemma3.cpp in the
// llama-cpp-python 0.3.36 sdist): the defaults when a key is absent, the sliding-window pattern as
// a number or a per-layer array, the local rope base, the soft-caps, and llama.cpp's attention
// scale rule (there is no query_pre_attn_scalar in GGUF). Metadata-only files: the tensors are
// checked elsewhere (model/families_gguf_oracle_test.cc).
#include <gtest/gtest.h>

#include <cmath>

#include "formats/gguf.h"
#include "formats/gguf_model.h"
#include "formats/testing_gguf_builder.h"
#include "util/testing_files.h"

namespace proctor {
namespace {

using testing::GgufBuilder;

// A metadata-only GGUF of `arch` with `layers` layers, hidden 64, 4 heads of 32, plus `extra`
// key-value pairs appended by `add`.
template <typename AddKeys>
ModelConfig GemmaConfig(const std::string& arch, uint32_t layers, int extra, AddKeys add) {
  GgufBuilder b(3, 0, 8 + extra);
  b.KeyStr("general.architecture", arch);
  const std::string p = arch + ".";
  b.KeyU32(p + "vocab_size", 512).KeyU32(p + "embedding_length", 64);
  b.KeyU32(p + "block_count", layers).KeyU32(p + "feed_forward_length", 128);
  b.KeyU32(p + "attention.head_count", 4).KeyU32(p + "attention.head_count_kv", 2);
  b.KeyU32(p + "attention.key_length", 32);
  add(b, p);
  const auto bytes = b.bytes();
  const auto gguf = GgufFile::Parse(bytes, arch + ".gguf");
  return ConfigFromGguf(*gguf, WeightStore());
}

TEST(GemmaGgufMetadata, Gemma2DefaultsAreLlamaCpps) {
  const ModelConfig c = GemmaConfig("gemma2", 4, 0, [](GgufBuilder&, const std::string&) {});
  EXPECT_EQ(c.arch, ModelArch::kGemma2);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_FALSE(c.norm_adds_one);  // the file stores 1 + weight
  EXPECT_EQ(c.mlp_activation, MlpActivation::kGeluTanh);
  EXPECT_EQ(c.attn_logit_softcapping, 50.0f);
  EXPECT_EQ(c.final_logit_softcapping, 30.0f);
  EXPECT_EQ(c.query_pre_attn_scalar, 32.0);  // head_dim
  for (int layer = 0; layer < 4; ++layer) {
    EXPECT_EQ(c.SlidingWindowForLayer(layer), layer % 2 == 0 ? 4096 : 0) << layer;
  }
  EXPECT_FALSE(c.sliding_rope.has_value());
}

TEST(GemmaGgufMetadata, Gemma3PatternLocalRopeAndCaps) {
  ModelConfig c = GemmaConfig("gemma3", 7, 3, [](GgufBuilder& b, const std::string& p) {
    b.KeyU32(p + "attention.sliding_window", 512).KeyF32(p + "rope.freq_base", 1e6f);
    b.KeyF32(p + "final_logit_softcapping", 12.0f);
  });
  EXPECT_EQ(c.arch, ModelArch::kGemma3);
  EXPECT_TRUE(c.qk_norm);
  for (int layer = 0; layer < 7; ++layer) {  // pattern 6: layer 5 is global
    EXPECT_EQ(c.SlidingWindowForLayer(layer), layer % 6 == 5 ? 0 : 512) << layer;
  }
  EXPECT_EQ(c.rope.theta, 1e6);
  ASSERT_TRUE(c.sliding_rope.has_value());
  EXPECT_EQ(c.sliding_rope->theta, 10000.0);  // rope.freq_base_swa's default
  EXPECT_EQ(c.attn_logit_softcapping, 0.0f);  // Gemma 3 has none
  EXPECT_EQ(c.final_logit_softcapping, 12.0f);

  c = GemmaConfig("gemma3", 3, 3, [](GgufBuilder& b, const std::string& p) {
    b.KeyU32(p + "attention.sliding_window", 8).KeyF32(p + "rope.freq_base_swa", 5000.0f);
    b.KeyBools(p + "attention.sliding_window_pattern", {false, true, true});
  });
  EXPECT_EQ(c.SlidingWindowForLayer(0), 0);
  EXPECT_EQ(c.SlidingWindowForLayer(1), 8);
  EXPECT_EQ(c.sliding_rope->theta, 5000.0);

  c = GemmaConfig("gemma3", 2, 0, [](GgufBuilder&, const std::string&) {});
  EXPECT_EQ(c.SlidingWindowForLayer(0), 0);  // no sliding_window key: no sliding layers
}

// llama.cpp scales the 27B models (46 layers for Gemma 2, 62 for Gemma 3) by hidden / heads.
TEST(GemmaGgufMetadata, The27BLayerCountsScaleByHiddenOverHeads) {
  const auto none = [](GgufBuilder&, const std::string&) {};
  EXPECT_EQ(GemmaConfig("gemma2", 46, 0, none).query_pre_attn_scalar, 16.0);  // 64 / 4
  EXPECT_EQ(GemmaConfig("gemma3", 62, 0, none).query_pre_attn_scalar, 16.0);
  EXPECT_EQ(GemmaConfig("gemma2", 26, 0, none).query_pre_attn_scalar, 32.0);  // head_dim
  EXPECT_EQ(GemmaConfig("gemma3", 46, 0, none).query_pre_attn_scalar, 32.0);
}

TEST(GemmaGgufMetadata, APatternOfTheWrongLengthIsRefused) {
  EXPECT_ERROR_CONTAINS(
      GemmaConfig("gemma3", 3, 2,
                  [](GgufBuilder& b, const std::string& p) {
                    b.KeyU32(p + "attention.sliding_window", 8);
                    b.KeyBools(p + "attention.sliding_window_pattern", {true, false});
                  }),
      "gemma3.gguf", "sliding_window_pattern lists 2 layers", "has 3");
}

}  // namespace
}  // namespace proctor
