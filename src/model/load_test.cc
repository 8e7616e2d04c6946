// Loading real fixtures: the hf-goldens cases (safetensors + config.json) and stories260K.gguf.
#include "model/load.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "formats/gguf.h"
#include "util/file.h"
#include "util/testing_files.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;
using proctor::testing::FixturesDir;
using proctor::testing::TempDir;

fs::path GoldenDir(const std::string& name) { return FixturesDir() / "hf-goldens" / name; }

#define SKIP_IF_MISSING(path) \
  if (!fs::exists(path)) GTEST_SKIP() << "fixture absent: " << (path).string()

TEST(LoadModel, HfGoldenLlamaF32) {
  const fs::path dir = GoldenDir("llama-f32");
  SKIP_IF_MISSING(dir);
  const LoadedModel m = LoadModel(dir.string());
  // Values read by hand from the case's config.json.
  EXPECT_EQ(m.format, ModelFormat::kSafetensors);
  EXPECT_EQ(m.config.arch, ModelArch::kLlama);
  EXPECT_EQ(m.config.hidden_size, 64);
  EXPECT_EQ(m.config.num_layers, 2);
  EXPECT_EQ(m.config.num_heads, 4);
  EXPECT_EQ(m.config.num_kv_heads, 2);
  EXPECT_EQ(m.config.head_dim, 16);
  EXPECT_EQ(m.config.intermediate_size, 128);
  EXPECT_EQ(m.config.vocab_size, 512);
  EXPECT_EQ(m.config.max_position_embeddings, 256);
  EXPECT_FLOAT_EQ(m.config.rms_norm_eps, 1e-6f);
  EXPECT_FALSE(m.config.tie_word_embeddings);
  EXPECT_EQ(m.config.bos_token_id, 1);
  EXPECT_EQ(m.config.eos_token_ids, std::vector<int>{2});
  EXPECT_EQ(m.config.stored_dtype, "float32");
  EXPECT_EQ(m.config.rope.type, RopeType::kDefault);
  EXPECT_FALSE(m.config.rope_adjacent_pairs);
  const TensorInfo& q = m.weights.Get("model.layers.1.self_attn.q_proj.weight");
  EXPECT_EQ(q.type, DType::kF32);
  EXPECT_EQ(q.shape, (std::vector<int64_t>{64, 64}));
  EXPECT_EQ(m.weights.Get("model.layers.0.self_attn.k_proj.weight").shape,
            (std::vector<int64_t>{32, 64}));
  EXPECT_EQ(m.weights.Get("lm_head.weight").shape, (std::vector<int64_t>{512, 64}));
  const MatView norm = m.weights.Matrix("model.norm.weight");
  EXPECT_EQ(norm.rows, 1);
  EXPECT_EQ(norm.cols, 64);
  // 2 layers x 9 tensors + embed + norm + lm_head.
  EXPECT_EQ(m.weights.size(), 21u);
}

// The load notice (the CLI's "loading MODEL (N GB)..." line) hears of every load before its
// files are mapped, with the bytes it maps: the .gguf, or the directory's safetensors files.
TEST(LoadModel, TheLoadNoticeHearsOfEveryLoadWithItsBytes) {
  const fs::path gguf = FixturesDir() / "stories260K" / "stories260K.gguf";
  const fs::path dir = GoldenDir("llama-f32");
  if (!fs::exists(gguf) || !fs::exists(dir)) GTEST_SKIP() << "fixtures absent";
  std::vector<std::pair<std::string, uint64_t>> heard;
  SetLoadNotice([&](const std::string& spec, uint64_t bytes) { heard.emplace_back(spec, bytes); });
  LoadModel(gguf.string());
  LoadModel(dir.string());
  SetLoadNotice(nullptr);
  LoadModel(gguf.string());
  ASSERT_EQ(heard.size(), 2u);
  EXPECT_EQ(heard[0], std::make_pair(gguf.string(), static_cast<uint64_t>(fs::file_size(gguf))));
  uint64_t safetensors = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".safetensors") safetensors += e.file_size();
  }
  EXPECT_EQ(heard[1].second, safetensors);
  EXPECT_GT(safetensors, 0u);
}

TEST(LoadModel, HfGoldenLlamaBf16TiedLlama3Rope) {
  const fs::path dir = GoldenDir("llama-bf16-tied-rope-llama3");
  SKIP_IF_MISSING(dir);
  const LoadedModel m = LoadModel(dir.string());
  EXPECT_TRUE(m.config.tie_word_embeddings);
  EXPECT_EQ(m.weights.Find("lm_head.weight"), nullptr);
  EXPECT_EQ(m.config.rope.type, RopeType::kLlama3);
  EXPECT_DOUBLE_EQ(m.config.rope.factor.value(), 8.0);
  EXPECT_DOUBLE_EQ(m.config.rope.low_freq_factor, 1.0);
  EXPECT_DOUBLE_EQ(m.config.rope.high_freq_factor, 4.0);
  EXPECT_EQ(m.config.rope.original_max_position_embeddings.value(), 32);
  EXPECT_EQ(m.config.stored_dtype, "bfloat16");
  EXPECT_EQ(m.weights.Get("model.embed_tokens.weight").type, DType::kBF16);
  EXPECT_EQ(m.weights.Get("model.layers.1.mlp.down_proj.weight").shape,
            (std::vector<int64_t>{64, 128}));
}

TEST(LoadModel, HfGoldenQwen2Bias) {
  const fs::path dir = GoldenDir("qwen2-f32-bias");
  SKIP_IF_MISSING(dir);
  const LoadedModel m = LoadModel(dir.string());
  EXPECT_EQ(m.config.arch, ModelArch::kQwen2);
  EXPECT_TRUE(m.config.attention_bias);
  EXPECT_EQ(m.config.bos_token_id, -1);  // null in the config
  EXPECT_TRUE(m.config.eos_token_ids.empty());
  EXPECT_EQ(m.config.sliding_window, 0);
  EXPECT_EQ(m.weights.Get("model.layers.0.self_attn.k_proj.bias").shape,
            (std::vector<int64_t>{32}));
}

TEST(LoadModel, HfGoldenQwen3) {
  for (const char* name : {"qwen3-f32", "qwen3-bf16", "qwen3-f32-long"}) {
    const fs::path dir = GoldenDir(name);
    SKIP_IF_MISSING(dir);
    SCOPED_TRACE(name);
    const LoadedModel m = LoadModel(dir.string());
    const nlohmann::json cfg = nlohmann::json::parse(ReadFileToString(dir / "config.json"));
    EXPECT_EQ(m.config.arch, ModelArch::kQwen3);
    EXPECT_TRUE(m.config.qk_norm);
    EXPECT_EQ(m.config.head_dim, cfg["head_dim"].get<int>());
    EXPECT_EQ(m.config.num_layers, cfg["num_hidden_layers"].get<int>());
    EXPECT_EQ(m.config.tie_word_embeddings, cfg["tie_word_embeddings"].get<bool>());
    EXPECT_DOUBLE_EQ(m.config.rope.theta, cfg["rope_parameters"]["rope_theta"].get<double>());
    EXPECT_EQ(m.config.max_position_embeddings, cfg["max_position_embeddings"].get<int>());
    EXPECT_EQ(m.weights.Get("model.layers.0.self_attn.q_norm.weight").shape,
              (std::vector<int64_t>{m.config.head_dim}));
  }
  // By hand from qwen3-f32/config.json: head_dim 32 with hidden 64 and 4 heads (not 64 / 4).
  const fs::path dir = GoldenDir("qwen3-f32");
  SKIP_IF_MISSING(dir);
  const LoadedModel m = LoadModel(dir.string());
  EXPECT_EQ(m.config.head_dim, 32);
  EXPECT_EQ(m.weights.Get("model.layers.0.self_attn.q_proj.weight").shape,
            (std::vector<int64_t>{128, 64}));
  EXPECT_TRUE(m.config.tie_word_embeddings);
}

// The Qwen3-Next golden's weights under configs that disagree with them: one clear error naming
// the tensor (a router for five experts; experts of the wrong width), and an architecture the
// engine does not run named as such.
TEST(LoadModel, MixtureOfExpertsConfigThatDisagreesWithTheWeightsIsAClearError) {
  const fs::path golden = GoldenDir("qwen3_next-f32");
  SKIP_IF_MISSING(golden);
  const nlohmann::json config = nlohmann::json::parse(ReadFileToString(golden / "config.json"));
  const TempDir tmp;
  fs::create_symlink(golden / "model.safetensors", tmp.path() / "model.safetensors");
  const auto load_with = [&](const nlohmann::json& changes) {
    nlohmann::json changed = config;
    changed.update(changes);
    WriteFileAtomic(tmp.path() / "config.json", changed.dump());
    return LoadModel(tmp.path().string());
  };
  EXPECT_ERROR_CONTAINS(load_with({{"num_experts", 5}}), "model.layers.0.mlp.gate.weight",
                        "[5, 64]");
  EXPECT_ERROR_CONTAINS(load_with({{"moe_intermediate_size", 16}}),
                        "model.layers.0.mlp.experts.0.gate_proj", "16");
  EXPECT_ERROR_CONTAINS(load_with({{"model_type", "dbrx"}}), "dbrx", "not supported");
  EXPECT_EQ(load_with(nlohmann::json::object()).config.moe.num_experts, 4);
}

// Families that name their tensors their own way, over a Llama checkpoint: the tensor each looks
// for is named, and a fused matrix of the wrong height names itself and both shapes.
TEST(LoadModel, FamilyTensorsAreNamedWhenMissingOrMisshapen) {
  const fs::path golden = GoldenDir("llama-f32");
  SKIP_IF_MISSING(golden);
  const LoadedModel llama = LoadModel(golden.string());
  ModelConfig mixtral = llama.config;
  mixtral.arch = ModelArch::kMixtral;
  mixtral.moe = {.num_experts = 4, .experts_per_token = 2, .expert_intermediate_size = 128};
  mixtral.layer_uses_moe.assign(2, true);
  EXPECT_ERROR_CONTAINS(ValidateWeights(mixtral, llama.weights),
                        "model.layers.0.block_sparse_moe.gate.weight");

  ModelConfig phi3 = llama.config;
  phi3.arch = ModelArch::kPhi3;
  EXPECT_ERROR_CONTAINS(ValidateWeights(phi3, llama.weights),
                        "model.layers.0.mlp.gate_up_proj.weight");
  WeightStore fused;
  fused.set_origin("fused-model");
  for (const std::string& name : llama.weights.Names()) fused.AddView(llama.weights.Get(name));
  // Views of another tensor's rows with the fused names: q_proj's [64, 64] as qkv_proj (which
  // needs 64 + 2 x 32 rows), the embedding's first 256 rows as gate_up_proj (2 x 128: right).
  const TensorInfo& embed = llama.weights.Get("model.embed_tokens.weight");
  for (int layer = 0; layer < phi3.num_layers; ++layer) {
    const std::string p = fmt::format("model.layers.{}.", layer);
    TensorInfo qkv = llama.weights.Get(p + "self_attn.q_proj.weight");
    qkv.name = p + "self_attn.qkv_proj.weight";
    fused.AddView(qkv);
    TensorInfo gate_up = embed;
    gate_up.name = p + "mlp.gate_up_proj.weight";
    gate_up.shape = {256, 64};
    gate_up.bytes = 256 * 64 * 4;
    fused.AddView(gate_up);
  }
  EXPECT_ERROR_CONTAINS(ValidateWeights(phi3, fused), "fused-model",
                        "model.layers.0.self_attn.qkv_proj.weight", "[64, 64]", "[128, 64]");
}

// The Gemma goldens' config.json as the engine reads it (values from the fixtures' SOURCES.md).
TEST(LoadModel, GemmaConfigsReadEveryGemmaSetting) {
  const fs::path gemma2_dir = GoldenDir("gemma2-f32"), gemma3_dir = GoldenDir("gemma3-f32");
  SKIP_IF_MISSING(gemma2_dir);
  SKIP_IF_MISSING(gemma3_dir);
  const LoadedModel gemma2 = LoadModel(gemma2_dir.string());
  EXPECT_EQ(gemma2.config.arch, ModelArch::kGemma2);
  EXPECT_EQ(gemma2.config.mlp_activation, MlpActivation::kGeluTanh);
  EXPECT_TRUE(gemma2.config.norm_adds_one);
  EXPECT_EQ(gemma2.config.attn_logit_softcapping, 2.0f);
  EXPECT_EQ(gemma2.config.final_logit_softcapping, 30.0f);
  EXPECT_EQ(gemma2.config.AttentionScale(), 1.0f / 16.0f);  // query_pre_attn_scalar 256
  EXPECT_EQ(gemma2.config.SlidingWindowForLayer(0), 16);
  EXPECT_EQ(gemma2.config.SlidingWindowForLayer(1), 0);
  EXPECT_FALSE(gemma2.config.sliding_rope.has_value());

  const LoadedModel gemma3 = LoadModel(gemma3_dir.string());
  EXPECT_EQ(gemma3.config.arch, ModelArch::kGemma3);
  EXPECT_TRUE(gemma3.config.qk_norm);
  EXPECT_EQ(gemma3.config.attn_logit_softcapping, 0.0f);  // null in config.json
  EXPECT_EQ(gemma3.config.final_logit_softcapping, 0.0f);
  EXPECT_EQ(gemma3.config.rope.theta, 1000000.0);
  ASSERT_TRUE(gemma3.config.sliding_rope.has_value());
  EXPECT_EQ(gemma3.config.sliding_rope->theta, 10000.0);
  EXPECT_EQ(&gemma3.config.RopeForLayer(0), &*gemma3.config.sliding_rope);
  EXPECT_EQ(&gemma3.config.RopeForLayer(1), &gemma3.config.rope);
}

// A Gemma config over weights without Gemma's extra norms: the first missing tensor is named.
TEST(LoadModel, GemmaWithoutItsNormsNamesTheMissingTensor) {
  const fs::path gemma_dir = GoldenDir("gemma2-f32"), llama_dir = GoldenDir("llama-f32");
  SKIP_IF_MISSING(gemma_dir);
  SKIP_IF_MISSING(llama_dir);
  const LoadedModel gemma = LoadModel(gemma_dir.string());
  const LoadedModel llama = LoadModel(llama_dir.string());
  EXPECT_ERROR_CONTAINS(ValidateWeights(gemma.config, llama.weights),
                        "model.layers.0.pre_feedforward_layernorm.weight");
}

TEST(LoadModel, Stories260KGguf) {
  const fs::path file = FixturesDir() / "stories260K" / "stories260K.gguf";
  SKIP_IF_MISSING(file);
  const LoadedModel m = LoadModel(file.string());
  EXPECT_EQ(m.format, ModelFormat::kGguf);
  ASSERT_NE(m.gguf, nullptr);
  EXPECT_EQ(m.gguf->version(), 3u);
  EXPECT_EQ(m.gguf->GetString("general.architecture"), "llama");
  EXPECT_EQ(m.gguf->GetStringArray("tokenizer.ggml.tokens").size(), 512u);
  EXPECT_EQ(m.gguf->GetStringArray("tokenizer.ggml.tokens")[1], "<s>");
  EXPECT_EQ(m.gguf->GetFloatArray("tokenizer.ggml.scores").size(), 512u);
  EXPECT_EQ(m.gguf->GetIntArray("tokenizer.ggml.token_type")[0], 2);
  // The llama2.c training command in stories260K.md: dim 64, 5 layers, 8 heads, 4 KV heads,
  // vocab 512; llama2.c ties the output to the embedding (the converter stored a copy).
  const ModelConfig& c = m.config;
  EXPECT_EQ(c.arch, ModelArch::kLlama);
  EXPECT_EQ(c.hidden_size, 64);
  EXPECT_EQ(c.num_layers, 5);
  EXPECT_EQ(c.num_heads, 8);
  EXPECT_EQ(c.num_kv_heads, 4);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.intermediate_size, 172);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_TRUE(c.rope_adjacent_pairs);
  EXPECT_EQ(c.bos_token_id, 1);
  EXPECT_EQ(c.eos_token_ids, std::vector<int>{2});
  EXPECT_EQ(c.max_position_embeddings, 2048);
  EXPECT_NEAR(c.rms_norm_eps, 1e-5f, 1e-12f);
  // GGUF dims (64, 172) are reversed to the HF shape [172, 64].
  const TensorInfo& gate = m.weights.Get("model.layers.4.mlp.gate_proj.weight");
  EXPECT_EQ(gate.shape, (std::vector<int64_t>{172, 64}));
  EXPECT_EQ(gate.source_name, "blk.4.ffn_gate.weight");
  EXPECT_EQ(m.weights.Get("model.layers.0.mlp.down_proj.weight").shape,
            (std::vector<int64_t>{64, 172}));
  EXPECT_EQ(m.weights.Get("model.layers.0.self_attn.k_proj.weight").shape,
            (std::vector<int64_t>{32, 64}));
  EXPECT_EQ(m.weights.Get("model.embed_tokens.weight").shape, (std::vector<int64_t>{512, 64}));
  EXPECT_NE(m.weights.Find("model.layers.2.post_attention_layernorm.weight"), nullptr);
  EXPECT_EQ(m.weights.size(), 48u);
}

TEST(Gguf, VocabularyOnlyFilesParse) {
  const fs::path dir = FixturesDir() / "llama.cpp-vocab";
  SKIP_IF_MISSING(dir);
  int parsed = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".gguf") continue;
    SCOPED_TRACE(entry.path().string());
    const auto gguf = GgufFile::Open(entry.path());
    EXPECT_TRUE(gguf->tensors().empty());
    EXPECT_FALSE(gguf->GetString("general.architecture").empty());
    const auto tokens = gguf->GetStringArray("tokenizer.ggml.tokens");
    EXPECT_GT(tokens.size(), 100u);
    EXPECT_FALSE(gguf->GetString("tokenizer.ggml.model").empty());
    ++parsed;
  }
  EXPECT_GT(parsed, 5);
}

}  // namespace
}  // namespace proctor
