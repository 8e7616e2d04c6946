// #18 class 12, the model side: a GGUF that states a context of 0, weights that hold NaN, and
// generation that would run past the model's context. Each is a copy of stories260K (the trained
// fixture, context 512) with one thing changed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "formats/gguf.h"
#include "formats/gguf_writer.h"
#include "model/greedy.h"
#include "model/load.h"
#include "util/testing_files.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;

fs::path Stories260K() {
  return proctor::testing::FixturesDir() / "stories260K" / "stories260K.gguf";
}

// stories260K.gguf rewritten to `out` with llama.context_length set to `context` and, when
// `poison` names a tensor, its first value replaced by NaN.
void CopyStories(const fs::path& out, uint32_t context, std::string_view poison = "") {
  const auto source = GgufFile::Open(Stories260K());
  GgufMetadata metadata;
  for (const auto& [key, value] : source->metadata()) metadata.Copy(key, value);
  metadata.SetUint32("llama.context_length", context);
  std::vector<GgufTensorSpec> specs;
  for (const GgufTensorInfo& t : source->tensors()) {
    specs.push_back({std::string(t.name), t.dims, t.type});
  }
  WriteGguf(out, metadata, specs, [&](const GgufTensorSpec& spec, const GgufByteSink& sink) {
    const GgufTensorInfo* t = source->FindTensor(spec.name);
    ASSERT_NE(t, nullptr);
    std::vector<uint8_t> bytes(t->data, t->data + t->bytes);
    if (spec.name == poison) {
      ASSERT_EQ(spec.type, DType::kF32);
      const float nan = std::numeric_limits<float>::quiet_NaN();
      std::memcpy(bytes.data(), &nan, sizeof(nan));
    }
    sink(bytes);
  });
}

TEST(HostileModels, AContextOfZeroIsRefused) {
  if (!fs::exists(Stories260K())) GTEST_SKIP() << "fixture absent: " << Stories260K();
  const proctor::testing::TempDir dir;
  const fs::path path = dir.path() / "zero.gguf";
  CopyStories(path, 0);
  EXPECT_ERROR_CONTAINS(LoadModel(path.string()), "zero.gguf", "\"llama.context_length\" is 0");
}

TEST(HostileModels, GenerationEndsAtTheContextAndALongerPromptIsRefused) {
  if (!fs::exists(Stories260K())) GTEST_SKIP() << "fixture absent: " << Stories260K();
  const proctor::testing::TempDir dir;
  const fs::path path = dir.path() / "short.gguf";
  CopyStories(path, 40);
  const LoadedModel loaded = LoadModel(path.string());
  ASSERT_EQ(loaded.config.max_position_embeddings, 40);
  const RuntimeModel model(loaded.config, loaded.weights, RuntimeOptions{});
  GreedyOptions greedy;
  greedy.max_new_tokens = 20;
  bool reached = false;
  greedy.reached_context = &reached;
  const std::vector<int32_t> prompt(36, 5);
  EXPECT_EQ(GreedyGenerate(model, prompt, greedy).size(), 4u);  // 36 + 4 = the context
  EXPECT_TRUE(reached);
  EXPECT_EQ(GreedyGenerate(model, std::vector<int32_t>(10, 5), greedy).size(), 20u);
  EXPECT_FALSE(reached);
  EXPECT_ERROR_CONTAINS(GreedyGenerate(model, std::vector<int32_t>(41, 5), greedy),
                        "a prompt of 41 tokens exceeds the model's context of 40 positions");
}

TEST(HostileModels, NanWeightsAreAnErrorNotTokenZero) {
  if (!fs::exists(Stories260K())) GTEST_SKIP() << "fixture absent: " << Stories260K();
  const proctor::testing::TempDir dir;
  const fs::path path = dir.path() / "nan.gguf";
  CopyStories(path, 512, "output_norm.weight");
  const LoadedModel loaded = LoadModel(path.string());
  const RuntimeModel model(loaded.config, loaded.weights, RuntimeOptions{});
  GreedyOptions greedy;
  greedy.max_new_tokens = 4;
  EXPECT_ERROR_CONTAINS(GreedyGenerate(model, std::vector<int32_t>{1}, greedy),
                        "the logits of generation step 0 hold nan",
                        "the model's weights or activations are not finite");
}

}  // namespace
}  // namespace proctor
