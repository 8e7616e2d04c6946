// The families llama.cpp runs, as GGUF, against both references. transformers
// (tools/oracle/hf_model.py) builds Gemma 2, Gemma 3, Qwen3-MoE, Mixtral, Phi-3, Qwen3.5 and
// Qwen3-Next models in configurations a GGUF file can express (Gemma: query_pre_attn_scalar =
// head_dim, as llama.cpp assumes; the MoE: renormalised top k, experts in every layer);
// tools/hf_to_gguf.py writes each in llama.cpp's layout for its architecture (Gemma's norms stored
// as 1 + weight, Mixtral as "llama" with permuted Q/K rows and stacked experts, Phi-3's fused
// projections, Qwen3.5's DeltaNet with its value heads reordered and -exp(A_log) stored,
// Qwen3-Next's in_proj_qkvz split into attn_qkv and attn_gate and its shared expert); the engine
// reads the GGUF and must give transformers' prompt logits (1e-4) and greedy tokens, and llama.cpp
// (its libllama, F32 cache) computes logits from the same file that the engine's match within the
// distance of llama.cpp's own arithmetic (ggml evaluates GELU through an f16 table, so its Gemma
// logits sit about 1e-3 from both transformers' and the engine's; printed), with the same top
// token at every position. The MoE files are also quantized to Q8_0 and Q4_0 (experts included)
// and run by both engines, proctor's with 8-bit activations (--compute q8, what llama.cpp's CPU
// matmuls compute: with f32 activations the logits of these random models move by 0.2-2 from
// llama.cpp's). The writer's refusals need no oracle.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "formats/family_traits.h"
#include "model/gguf_quantize.h"
#include "model/load.h"
#include "model/mlx_export.h"
#include "model/model_summary.h"
#include "model/testing_goldens.h"
#include "util/testing_files.h"
#include "util/testing_oracles.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string ReadText(const fs::path& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

// Runs `command` (output to `log`); its exit status.
int RunLogged(const std::string& command, const fs::path& log) {
  return std::system(fmt::format("{} >{} 2>&1", command, log.string()).c_str());
}

json Cases() {
  const json base = {{"vocab_size", 512},        {"hidden_size", 64},
                     {"intermediate_size", 128}, {"num_hidden_layers", 3},
                     {"num_attention_heads", 4}, {"num_key_value_heads", 2},
                     {"head_dim", 16},           {"max_position_embeddings", 256}};
  json gemma2 = base;
  gemma2.update({{"sliding_window", 16}, {"query_pre_attn_scalar", 16}});
  gemma2["attn_logit_softcapping"] = 2.0;  // tied head, final cap 30: Gemma 2's defaults
  json gemma3 = base;
  gemma3.update(
      {{"sliding_window", 16},
       {"query_pre_attn_scalar", 16},
       {"final_logit_softcapping", 10.0},
       {"tie_word_embeddings", false},
       {"layer_types", {"sliding_attention", "sliding_attention", "full_attention"}},
       {"rope_parameters",
        {{"full_attention", {{"rope_type", "linear"}, {"factor", 8.0}, {"rope_theta", 1000000.0}}},
         {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}}}}}});
  json qwen3_moe = base;
  qwen3_moe.update({{"num_experts", 8},
                    {"num_experts_per_tok", 3},
                    {"moe_intermediate_size", 32},
                    {"norm_topk_prob", true}});
  json mixtral = base;
  mixtral.update({{"num_local_experts", 4},
                  {"num_experts_per_tok", 2},
                  {"sliding_window", nullptr},
                  {"tie_word_embeddings", true}});
  // Phi-3 (Phi3Config's pad and eos ids moved inside the small vocabulary): Phi-4-mini's partial
  // rotary; then a window shorter than the prompt, which llama.cpp does not apply (transformers
  // only).
  json phi3 = base;
  phi3.update(
      {{"pad_token_id", nullptr},
       {"eos_token_id", 2},
       {"sliding_window", nullptr},
       {"rope_parameters",
        {{"rope_type", "default"}, {"rope_theta", 10000.0}, {"partial_rotary_factor", 0.5}}}});
  json phi3_window = phi3;
  phi3_window["sliding_window"] = 20;
  // Qwen3.5: two value heads per key head (llama.cpp's converter reorders them), DeltaNet and
  // full-attention layers alternating, a quarter of each head rotated.
  json qwen35 = base;
  qwen35.update(
      {{"head_dim", 32},
       {"num_hidden_layers", 4},
       {"linear_num_key_heads", 2},
       {"linear_num_value_heads", 4},
       {"linear_key_head_dim", 16},
       {"linear_value_head_dim", 16},
       {"linear_conv_kernel_dim", 4},
       {"layer_types",
        {"linear_attention", "full_attention", "linear_attention", "full_attention"}},
       {"rope_parameters",
        {{"rope_type", "default"}, {"rope_theta", 10000.0}, {"partial_rotary_factor", 0.25}}}});
  // Qwen3-Next: Qwen3.5's hybrid with fused DeltaNet projections and a mixture of experts with a
  // shared expert in every layer (llama.cpp's converter splits in_proj_qkvz, keeps in_proj_ba).
  json qwen3_next = qwen35;
  qwen3_next.update({{"num_experts", 4},
                     {"num_experts_per_tok", 2},
                     {"moe_intermediate_size", 32},
                     {"shared_expert_intermediate_size", 32},
                     {"norm_topk_prob", true},
                     {"decoder_sparse_step", 1},
                     {"mlp_only_layers", json::array()}});
  const auto with = [](const std::string& name, const std::string& type, int seed,
                       const json& config, bool llama_cpp_too = true) {
    return json{{"name", name},     {"model_type", type},        {"dtype", "float32"},
                {"seed", seed},     {"prompt_len", 64},          {"greedy_len", 16},
                {"config", config}, {"llama_cpp", llama_cpp_too}};
  };
  return json::array(
      {with("gemma2-gguf", "gemma2", 71, gemma2), with("gemma3-gguf", "gemma3_text", 72, gemma3),
       with("qwen3_moe-gguf", "qwen3_moe", 73, qwen3_moe),
       with("mixtral-gguf", "mixtral", 74, mixtral), with("phi3-gguf", "phi3", 75, phi3),
       with("phi3-window-gguf", "phi3", 76, phi3_window, false),
       with("qwen3_5-gguf", "qwen3_5_text", 77, qwen35),
       with("qwen3_next-gguf", "qwen3_next", 78, qwen3_next)});
}

// llama.cpp's prompt logits on `gguf` (its libllama, F32 cache).
std::vector<float> LlamaCppLogits(const fs::path& gguf, const std::vector<int32_t>& prompt,
                                  const fs::path& dir) {
  const auto& llama_cpp = testing::Oracles("llama.cpp");
  const fs::path out = dir / (gguf.stem().string() + ".llama.f32");
  const int status = RunLogged(fmt::format("{} {} {} {} {} 1", llama_cpp.Path("llama_cpp_logits"),
                                           llama_cpp.Path("llama_cpp_lib"), gguf.string(),
                                           fmt::join(prompt, ","), out.string()),
                               dir / "llama.log");
  EXPECT_EQ(status, 0) << ReadText(dir / "llama.log");
  return status == 0 ? testing::ReadF32File(out) : std::vector<float>{};
}

// The engine's and llama.cpp's prompt logits on one file: at most `bound` apart, the same top
// token at every position; returns the distance.
float ExpectLlamaCppAgrees(const fs::path& gguf, const std::vector<int32_t>& prompt, float bound,
                           const fs::path& dir, ops::ComputeMode compute = ops::ComputeMode::kF32) {
  const LoadedModel loaded = LoadModel(gguf.string());
  RuntimeOptions options;
  options.compute = compute;
  const RuntimeModel model(loaded.config, loaded.weights, options);
  const std::vector<float> ours = testing::PromptLogits(model, prompt, 512);
  const std::vector<float> theirs = LlamaCppLogits(gguf, prompt, dir);
  EXPECT_EQ(theirs.size(), ours.size());
  if (theirs.size() != ours.size()) return INFINITY;
  const float distance = testing::MaxAbsDiff(ours, theirs);
  EXPECT_LE(distance, bound) << gguf;
  const size_t vocab = static_cast<size_t>(loaded.config.vocab_size);
  for (size_t t = 0; t < prompt.size(); ++t) {
    const auto row = [&](const std::vector<float>& v) { return v.begin() + t * vocab; };
    EXPECT_EQ(std::max_element(row(ours), row(ours) + vocab) - row(ours),
              std::max_element(row(theirs), row(theirs) + vocab) - row(theirs))
        << gguf << ": top token at position " << t;
  }
  return distance;
}

TEST(FamiliesGguf, ConvertedModelsMatchTransformersAndLlamaCpp) {
  if (const std::string problem = testing::OraclesProblem({"python", "llama.cpp"});
      !problem.empty()) {
    GTEST_SKIP() << "oracle environment not installed: " << problem;
  }
  const std::string python = testing::Oracles("python").Path("python");
  const testing::TempDir tmp;
  const json cases = Cases();
  std::ofstream(tmp.path() / "cases.json") << cases.dump(1);
  ASSERT_EQ(
      RunLogged(fmt::format("{} {}/tools/oracle/hf_model.py {} {}", python, PROCTOR_SOURCE_DIR,
                            (tmp.path() / "cases.json").string(), tmp.path().string()),
                tmp.path() / "hf.log"),
      0)
      << ReadText(tmp.path() / "hf.log");

  json mlx_jobs = json::array();  // mlx-lm's forward on proctor's MLX exports of the GGUFs
  std::vector<std::vector<float>> mlx_ours;
  for (const json& c : cases) {
    const std::string name = c["name"];
    SCOPED_TRACE(name);
    const auto g = testing::LoadGolden(tmp.path() / name);
    ASSERT_NE(g, nullptr);
    const fs::path gguf = tmp.path() / (name + ".gguf");
    ASSERT_EQ(RunLogged(fmt::format("{} {}/tools/hf_to_gguf.py {} {}", python, PROCTOR_SOURCE_DIR,
                                    (tmp.path() / name).string(), gguf.string()),
                        tmp.path() / "convert.log"),
              0)
        << ReadText(tmp.path() / "convert.log");

    // The engine on the GGUF against transformers.
    const LoadedModel loaded = LoadModel(gguf.string());
    EXPECT_EQ(loaded.config.arch, g->config.arch);
    EXPECT_FALSE(loaded.config.norm_adds_one);  // Gemma's file stores 1 + weight
    const RuntimeModel model(loaded.config, loaded.weights, RuntimeOptions{});
    const testing::GoldenDistances d = testing::ExpectModelMatchesGolden(model, *g, name);
    // The GGUF as an MLX directory (8 bits, groups of 32): what config.json can describe is
    // written and compared with mlx-lm below; Gemma (norms stored as 1 + weight), Qwen3.5 and
    // Qwen3-Next (llama.cpp's DeltaNet layout) are refused, naming what would differ.
    const fs::path mlx = tmp.path() / (name + "-mlx8");
    MlxQuantizeOptions mlx_options;
    mlx_options.bits = 8;
    mlx_options.group_size = 32;
    const FamilyTraits& family = FamilyOf(loaded.config.arch);
    if (family.block != BlockStyle::kLlama) {
      EXPECT_ERROR_CONTAINS(QuantizeModelToMlx(gguf.string(), mlx, mlx_options),
                            "cannot be written as an MLX directory");
    } else if (c["llama_cpp"].get<bool>()) {
      // (mlx-lm's phi3 has no sliding window. The experts are written stacked, as mlx-lm's
      // switch_mlp.)
      QuantizeModelToMlx(gguf.string(), mlx, mlx_options);
      if (loaded.config.moe.num_experts > 0) {  // stacked as mlx-lm's switch_mlp
        EXPECT_NE(
            ReadText(mlx / "model.safetensors.index.json").find(".switch_mlp.down_proj.scales"),
            std::string::npos);
      }
      const LoadedModel exported = LoadModel(mlx.string());
      EXPECT_EQ(exported.config.arch, loaded.config.arch);
      const RuntimeModel mlx_model(exported.config, exported.weights, RuntimeOptions{});
      mlx_ours.push_back(testing::PromptLogits(mlx_model, g->prompt, 512));
      mlx_jobs.push_back({{"model", mlx.string()},
                          {"tokens", g->prompt},
                          {"out", (tmp.path() / (name + "-mlx8.f32")).string()}});
    }
    if (!c["llama_cpp"].get<bool>()) {
      std::printf("[ distance ] %s GGUF: transformers %.3g (steps %.3g)\n", name.c_str(), d.prompt,
                  d.steps);
      continue;
    }

    // llama.cpp on the same file.
    const float to_llama_cpp = ExpectLlamaCppAgrees(gguf, g->prompt, 1e-2f, tmp.path());
    std::printf("[ distance ] %s GGUF: transformers %.3g (steps %.3g); llama.cpp %.3g\n",
                name.c_str(), d.prompt, d.steps, to_llama_cpp);

    // Quantized experts: both engines on proctor's Q8_0 and Q4_0 of the MoE files (each expert
    // a slice of the stacked blocks).
    if (loaded.config.moe.num_experts == 0) continue;
    const ModelSummary summary = SummarizeModel(loaded);  // the file's tensors, not the views
    EXPECT_EQ(summary.file_tensors, static_cast<int64_t>(loaded.gguf->tensors().size()));
    EXPECT_GT(summary.tensors, summary.file_tensors);
    for (const char* type : {"q8_0", "q4_0"}) {
      const fs::path quantized = tmp.path() / fmt::format("{}-{}.gguf", name, type);
      QuantizeModelToGguf(gguf.string(), quantized, GgufQuantizeOptions{.type = type});
      const float distance =
          ExpectLlamaCppAgrees(quantized, g->prompt, 5e-2f, tmp.path(), ops::ComputeMode::kQ8);
      std::printf("[ distance ] %s %s (engine in q8 mode): llama.cpp %.3g\n", name.c_str(), type,
                  distance);
    }
  }

  // mlx-lm's own forward on the MLX directories made from the GGUFs.
  std::ofstream(tmp.path() / "mlx_jobs.json") << mlx_jobs.dump();
  ASSERT_EQ(RunLogged(fmt::format("{} {}/tools/oracle/mlx_model.py logits {}", python,
                                  PROCTOR_SOURCE_DIR, (tmp.path() / "mlx_jobs.json").string()),
                      tmp.path() / "mlx.log"),
            0)
      << ReadText(tmp.path() / "mlx.log");
  for (size_t i = 0; i < mlx_jobs.size(); ++i) {
    const std::string model = mlx_jobs[i]["model"];
    const std::vector<float> theirs = testing::ReadF32File(mlx_jobs[i]["out"].get<std::string>());
    ASSERT_EQ(theirs.size(), mlx_ours[i].size()) << model;
    float scale = 0.0f;
    for (const float x : theirs) scale = std::max(scale, std::fabs(x));
    const float distance = testing::MaxAbsDiff(mlx_ours[i], theirs);
    EXPECT_LE(distance, 1e-4f * std::max(1.0f, scale / 8)) << model;
    std::printf("[ distance ] %s: mlx-lm %.3g (max |logit| %.3g)\n", model.c_str(), distance,
                scale);
  }
}

// What GGUF cannot say is refused by the writer, naming the setting: the hf-goldens Gemma 2 has
// query_pre_attn_scalar 256 over head_dim 16, and an untied head.
TEST(FamiliesGguf, TheWriterRefusesWhatLlamaCppCannotRepresent) {
  const fs::path golden = testing::FixturesDir() / "hf-goldens" / "gemma2-f32";
  if (!fs::exists(golden)) GTEST_SKIP() << "fixture absent: " << golden;
  if (std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "/usr/bin/python3 with numpy is missing";
  }
  const testing::TempDir tmp;
  const fs::path gguf = tmp.path() / "gemma2.gguf", log = tmp.path() / "log.txt";
  EXPECT_NE(RunLogged(fmt::format("/usr/bin/python3 {}/tools/hf_to_gguf.py {} {}",
                                  PROCTOR_SOURCE_DIR, golden.string(), gguf.string()),
                      log),
            0);
  const std::string message = ReadText(log);
  EXPECT_NE(message.find("query_pre_attn_scalar 256"), std::string::npos) << message;
  EXPECT_NE(message.find("1/sqrt(16)"), std::string::npos) << message;
  EXPECT_FALSE(fs::exists(gguf));
}

}  // namespace
}  // namespace proctor
