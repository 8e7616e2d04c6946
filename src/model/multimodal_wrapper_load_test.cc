// Qwen3.5 and Gemma 3 as their multimodal wrappers ship: the hf-goldens text models rewritten the
// way transformers 5 saves Qwen3_5ForConditionalGeneration and Gemma3ForConditionalGeneration
// (config.json with the text model in text_config, its weights under model.language_model.*,
// lm_head at the top, the vision tower beside) load as the text model and give transformers'
// logits. mlx-lm's conversion of such a wrapper is checked against mlx-lm in
// cli/mlx_oracle_test.cc.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "formats/safetensors_writer.h"
#include "model/load.h"
#include "model/testing_goldens.h"
#include "util/testing_files.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;

// `golden` as the wrapper `model_type` writes it, in `out`.
void WriteWrapped(const fs::path& golden, const std::string& model_type, const WeightStore& text,
                  const fs::path& out) {
  fs::create_directories(out);
  const nlohmann::json text_config = nlohmann::json::parse(std::ifstream(golden / "config.json"));
  nlohmann::json config = {
      {"model_type", model_type}, {"text_config", text_config}, {"vision_config", {{"depth", 1}}}};
  if (text_config.contains("tie_word_embeddings")) {
    config["tie_word_embeddings"] = text_config["tie_word_embeddings"];
  }
  std::ofstream(out / "config.json") << config.dump(1);
  const float vision[4] = {1.0f, 2.0f, 3.0f, 4.0f};
  std::vector<SafetensorsTensorSpec> specs = {
      {.name = "model.visual.patch_embed.proj.weight", .dtype = DType::kF32, .shape = {2, 2}}};
  std::map<std::string, const TensorInfo*> sources;
  for (const std::string& name : text.Names()) {
    const TensorInfo& info = text.Get(name);
    const std::string wrapped =
        name.starts_with("model.") ? "model.language_model." + name.substr(6) : name;
    specs.push_back({.name = wrapped, .dtype = info.type, .shape = info.shape});
    sources[wrapped] = &info;
  }
  WriteSafetensors(out / "model.safetensors", specs, {},
                   [&](const SafetensorsTensorSpec& spec, const TensorByteSink& sink) {
                     const auto it = sources.find(spec.name);
                     if (it == sources.end()) {
                       sink({reinterpret_cast<const uint8_t*>(vision), sizeof(vision)});
                     } else {
                       sink({it->second->data, it->second->bytes});
                     }
                   });
}

TEST(MultimodalWrapperLoad, WrappedGoldensGiveTheTextModelsLogits) {
  const std::pair<const char*, const char*> kCases[] = {{"qwen3_5-f32", "qwen3_5"},
                                                        {"gemma3-f32", "gemma3"}};
  for (const auto& [name, wrapper] : kCases) {
    SCOPED_TRACE(name);
    const fs::path golden = testing::FixturesDir() / "hf-goldens" / name;
    const auto g = testing::LoadGolden(golden);
    if (g == nullptr) GTEST_SKIP() << "fixture absent: " << golden;
    const testing::TempDir tmp;
    WriteWrapped(golden, wrapper, g->weights, tmp.path() / name);
    const LoadedModel loaded = LoadModel((tmp.path() / name).string());
    EXPECT_EQ(loaded.config.text_model_of, wrapper);
    EXPECT_EQ(loaded.config.arch, g->config.arch);
    EXPECT_EQ(loaded.weights.size(), g->weights.size());  // the vision tensor dropped
    const RuntimeModel model(loaded.config, loaded.weights, RuntimeOptions{});
    testing::ExpectModelMatchesGolden(model, *g, name);
  }
}

}  // namespace
}  // namespace proctor
