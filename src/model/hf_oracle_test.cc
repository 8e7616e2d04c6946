// The forward pass against Hugging Face transformers itself, live: tools/oracle/hf_model.py (the
// oracle environment's transformers + torch) builds a matrix of tiny random models per family at
// test time (sizes, storage dtypes, GQA/MQA/MHA, rope variants, biases, q/k norms, tied heads,
// sliding windows, prompts longer than a prefill chunk), saves each as config.json +
// model.safetensors and records its logits, hidden states and greedy continuation; the engine
// reads the saved files and must give the same prompt logits and greedy step logits (f32 compute,
// within 1e-4 unless noted), the same greedy tokens, and the same final-normed hidden states.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "model/runtime_model.h"
#include "model/testing_goldens.h"
#include "util/testing_files.h"
#include "util/testing_oracles.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A small config every case starts from (vocab 512, hidden 64, 4 heads / 2 KV heads, 2 layers);
// `overrides` replaces or adds keys.
json Config(const json& overrides) {
  json config = {{"vocab_size", 512},
                 {"hidden_size", 64},
                 {"intermediate_size", 128},
                 {"num_hidden_layers", 2},
                 {"num_attention_heads", 4},
                 {"num_key_value_heads", 2},
                 {"max_position_embeddings", 256}};
  if (!overrides.is_null()) config.update(overrides);
  return config;
}

json Case(const std::string& name, const std::string& model_type, const std::string& dtype,
          int seed, const json& overrides, int prompt_len = 64, int greedy_len = 16) {
  return {{"name", name},
          {"model_type", model_type},
          {"dtype", dtype},
          {"seed", seed},
          {"config", Config(overrides)},
          {"prompt_len", prompt_len},
          {"greedy_len", greedy_len}};
}

json Rope(const json& parameters) {
  json rope = {{"rope_theta", 10000.0}};
  rope.update(parameters);
  return {{"rope_parameters", rope}};
}

json Merge(json a, const json& b) {
  a.update(b);
  return a;
}

// The matrix, per family.
json CasesOf(const std::string& family) {
  if (family == "llama") {
    return json::array({
        Case("llama-f32-gqa", "llama", "float32", 11, {}),
        Case("llama-bf16-tied-llama3", "llama", "bfloat16", 12,
             Merge({{"tie_word_embeddings", true}},
                   Rope({{"rope_type", "llama3"},
                         {"factor", 8.0},
                         {"low_freq_factor", 1.0},
                         {"high_freq_factor", 4.0},
                         {"original_max_position_embeddings", 32}}))),
        Case("llama-f16-mha-linear", "llama", "float16", 13,
             Merge({{"num_key_value_heads", 4}}, Rope({{"rope_type", "linear"}, {"factor", 2.0}}))),
        Case(
            "llama-f32-mqa-dynamic", "llama", "float32", 14,
            Merge({{"num_key_value_heads", 1}}, Rope({{"rope_type", "dynamic"}, {"factor", 2.0}}))),
        Case("llama-f32-yarn", "llama", "float32", 15,
             Rope({{"rope_type", "yarn"},
                   {"factor", 4.0},
                   {"original_max_position_embeddings", 64}})),
        Case("llama-f32-wide-bias", "llama", "float32", 16,
             Merge({{"hidden_size", 256},
                    {"intermediate_size", 688},
                    {"num_hidden_layers", 3},
                    {"num_attention_heads", 8},
                    {"num_key_value_heads", 2},
                    {"head_dim", 48},
                    {"vocab_size", 1001},
                    {"attention_bias", true},
                    {"rms_norm_eps", 1e-5}},
                   Rope({{"rope_theta", 500000.0}}))),
        Case("llama-f32-long", "llama", "float32", 17, {{"max_position_embeddings", 1024}}, 700, 8),
    });
  }
  if (family == "mistral") {
    return json::array({
        Case("mistral-f32", "mistral", "float32", 21, {{"sliding_window", nullptr}}),
        Case("mistral-bf16-window16", "mistral", "bfloat16", 22, {{"sliding_window", 16}}),
        Case("mistral-f32-window-long", "mistral", "float32", 23,
             {{"sliding_window", 96}, {"max_position_embeddings", 1024}}, 600, 8),
    });
  }
  if (family == "qwen2") {
    return json::array({
        Case("qwen2-f32-bias", "qwen2", "float32", 31, {}),
        Case("qwen2-bf16-tied", "qwen2", "bfloat16", 32,
             Merge({{"tie_word_embeddings", true}}, Rope({{"rope_theta", 1000000.0}}))),
        Case("qwen2-f32-window", "qwen2", "float32", 33,
             {{"use_sliding_window", true},
              {"sliding_window", 16},
              {"max_window_layers", 1},
              {"num_hidden_layers", 3}}),
    });
  }
  if (family == "qwen3") {
    return json::array({
        Case("qwen3-f32-headdim32-tied", "qwen3", "float32", 41,
             {{"head_dim", 32}, {"tie_word_embeddings", true}}),
        Case("qwen3-bf16-theta1e6", "qwen3", "bfloat16", 42,
             Merge({{"num_hidden_layers", 3}}, Rope({{"rope_theta", 1000000.0}}))),
        Case("qwen3-f16-mqa", "qwen3", "float16", 43,
             {{"num_key_value_heads", 1}, {"head_dim", 16}}),
        Case("qwen3-f32-window", "qwen3", "float32", 44,
             {{"use_sliding_window", true}, {"sliding_window", 16}, {"max_window_layers", 1}}),
        Case("qwen3-f32-long", "qwen3", "float32", 45, {{"max_position_embeddings", 1024}}, 640, 8),
    });
  }
  if (family == "gemma2") {
    // Gemma 2's defaults: tied head, soft-caps 50 / 30, query_pre_attn_scalar 256, even layers
    // sliding.
    const json window = {{"head_dim", 16}, {"sliding_window", 16}};
    return json::array({
        Case("gemma2-f32-defaults", "gemma2", "float32", 51, window),
        Case("gemma2-bf16-softcap2", "gemma2", "bfloat16", 52,
             Merge(window, {{"attn_logit_softcapping", 2.0},
                            {"final_logit_softcapping", 5.0},
                            {"query_pre_attn_scalar", 16},
                            {"num_hidden_layers", 3}})),
        Case("gemma2-f32-nocaps-untied", "gemma2", "float32", 53,
             Merge(window, {{"attn_logit_softcapping", nullptr},
                            {"final_logit_softcapping", nullptr},
                            {"tie_word_embeddings", false}})),
        Case("gemma2-f32-window-long", "gemma2", "float32", 54,
             {{"head_dim", 16}, {"sliding_window", 96}, {"max_position_embeddings", 1024}}, 600, 8),
    });
  }
  if (family == "gemma3") {
    const json local_global = {
        {"head_dim", 16},
        {"sliding_window", 16},
        {"num_hidden_layers", 3},
        {"layer_types", {"sliding_attention", "sliding_attention", "full_attention"}}};
    return json::array({
        Case("gemma3-f32-local-global", "gemma3_text", "float32", 61, local_global),
        Case("gemma3-bf16-linear-global-rope", "gemma3_text", "bfloat16", 62,
             Merge(
                 local_global,
                 {{"rope_parameters",
                   {{"full_attention",
                     {{"rope_type", "linear"}, {"factor", 8.0}, {"rope_theta", 1000000.0}}},
                    {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}}}}}})),
        Case("gemma3-f32-softcaps-untied", "gemma3_text", "float32", 63,
             Merge(local_global, {{"attn_logit_softcapping", 5.0},
                                  {"final_logit_softcapping", 10.0},
                                  {"query_pre_attn_scalar", 16},
                                  {"tie_word_embeddings", false}})),
        Case("gemma3-f32-window-long", "gemma3_text", "float32", 64,
             Merge(local_global, {{"sliding_window", 128}, {"max_position_embeddings", 1024}}), 600,
             8),
    });
  }
  // Gated DeltaNet layers (linear_attention) and gated full attention (Qwen3.5, Qwen3-Next).
  const json hybrid = {
      {"head_dim", 32},
      {"linear_num_key_heads", 2},
      {"linear_num_value_heads", 4},
      {"linear_key_head_dim", 16},
      {"linear_value_head_dim", 16},
      {"linear_conv_kernel_dim", 4},
      {"num_hidden_layers", 4},
      {"layer_types",
       {"linear_attention", "full_attention", "linear_attention", "full_attention"}}};
  if (family == "qwen3_5") {
    return json::array({
        Case("qwen3_5-f32-hybrid", "qwen3_5_text", "float32", 91,
             Merge(hybrid, Rope({{"rope_type", "default"}, {"partial_rotary_factor", 0.25}}))),
        Case(
            "qwen3_5-bf16-tied-heads-equal", "qwen3_5_text", "bfloat16", 92,
            Merge(hybrid, Merge({{"tie_word_embeddings", true},
                                 {"linear_num_key_heads", 4},
                                 {"linear_value_head_dim", 8},
                                 {"linear_conv_kernel_dim", 3}},
                                Rope({{"rope_type", "default"}, {"partial_rotary_factor", 0.5}})))),
        Case(
            "qwen3_5-f32-linear-first-long", "qwen3_5_text", "float32", 93,
            Merge(hybrid, Merge({{"max_position_embeddings", 1024},
                                 {"layer_types",
                                  {"linear_attention", "linear_attention", "linear_attention",
                                   "full_attention"}}},
                                Rope({{"rope_type", "default"}, {"partial_rotary_factor", 0.25}}))),
            300, 8),
    });
  }
  if (family == "qwen3_next") {
    // Qwen3.5's hybrid with fused DeltaNet projections and mixture-of-experts MLPs.
    const json hybrid_moe = Merge(hybrid, {{"num_experts", 4},
                                           {"num_experts_per_tok", 2},
                                           {"moe_intermediate_size", 32},
                                           {"shared_expert_intermediate_size", 48}});
    return json::array({
        Case("qwen3_next-f32-moe", "qwen3_next", "float32", 101,
             Merge(hybrid_moe, Rope({{"rope_type", "default"}, {"partial_rotary_factor", 0.25}}))),
        // Every other layer sparse, layer 1 forced dense, 8 experts top 3 without renormalising,
        // 4 value heads per key head.
        Case("qwen3_next-bf16-sparse-step-unnormalised", "qwen3_next", "bfloat16", 102,
             Merge(hybrid_moe,
                   Merge({{"decoder_sparse_step", 2},
                          {"mlp_only_layers", {1}},
                          {"num_experts", 8},
                          {"num_experts_per_tok", 3},
                          {"norm_topk_prob", false},
                          {"linear_num_key_heads", 1},
                          {"tie_word_embeddings", true}},
                         Rope({{"rope_type", "default"}, {"partial_rotary_factor", 0.5}})))),
        Case("qwen3_next-f32-long", "qwen3_next", "float32", 103,
             Merge(hybrid_moe,
                   Merge({{"max_position_embeddings", 1024}},
                         Rope({{"rope_type", "default"}, {"partial_rotary_factor", 0.25}}))),
             300, 8),
    });
  }
  if (family == "qwen3_moe") {
    // Qwen3's block with mixture-of-experts MLPs (no shared expert).
    const json moe = {{"head_dim", 16},
                      {"num_experts", 4},
                      {"num_experts_per_tok", 2},
                      {"moe_intermediate_size", 32}};
    return json::array({
        Case("qwen3_moe-f32-normalised", "qwen3_moe", "float32", 111,
             Merge(moe, {{"norm_topk_prob", true}})),
        // Every other layer sparse, layer 1 forced dense, 8 experts top 3, transformers' default
        // (unnormalised) routing weights.
        Case("qwen3_moe-bf16-sparse-step", "qwen3_moe", "bfloat16", 112,
             Merge(moe, {{"num_hidden_layers", 4},
                         {"decoder_sparse_step", 2},
                         {"mlp_only_layers", {1}},
                         {"num_experts", 8},
                         {"num_experts_per_tok", 3},
                         {"tie_word_embeddings", true}})),
    });
  }
  if (family == "mixtral") {
    // Mistral's block with a mixture of experts in every layer, experts of intermediate_size,
    // top-k always renormalised.
    const json moe = {{"num_local_experts", 4}, {"num_experts_per_tok", 2}};
    return json::array({
        Case("mixtral-f32", "mixtral", "float32", 121, Merge(moe, {{"sliding_window", nullptr}})),
        // 8 experts top 3, a window shorter than the prompt, a tied head.
        Case("mixtral-bf16-window-top3", "mixtral", "bfloat16", 122,
             Merge(moe, {{"num_local_experts", 8},
                         {"num_experts_per_tok", 3},
                         {"sliding_window", 24},
                         {"tie_word_embeddings", true}})),
        Case("mixtral-f32-long", "mixtral", "float32", 123,
             Merge(moe, {{"sliding_window", nullptr}, {"max_position_embeddings", 1024}}), 300, 8),
    });
  }
  if (family == "phi3") {
    // Fused qkv_proj and gate_up_proj; Phi-4-mini's partial rotary; a sliding window. Phi3Config's
    // pad and eos ids (32000) are moved inside the small vocabulary.
    const json phi3 = {{"pad_token_id", nullptr}, {"eos_token_id", 2}};
    return json::array({
        Case("phi3-f32", "phi3", "float32", 131, Merge(phi3, {{"sliding_window", nullptr}})),
        Case("phi3-bf16-partial-rotary-window", "phi3", "bfloat16", 132,
             Merge(phi3, Merge({{"sliding_window", 20}, {"tie_word_embeddings", true}},
                               Rope({{"rope_type", "default"}, {"partial_rotary_factor", 0.75}})))),
        Case("phi3-f32-mha-long", "phi3", "float32", 133,
             Merge(phi3, {{"num_key_value_heads", 4},
                          {"sliding_window", nullptr},
                          {"max_position_embeddings", 1024}}),
             300, 8),
    });
  }
  return json::array();
}

class HfLive : public ::testing::TestWithParam<std::string> {};

TEST_P(HfLive, EngineMatchesTransformersOnEveryConfigOfTheFamily) {
  if (const std::string problem = testing::OraclesProblem({"python"}); !problem.empty()) {
    GTEST_SKIP() << "oracle environment not installed: " << problem;
  }
  const std::string python = testing::Oracles("python").Path("python");
  const testing::TempDir tmp;
  const json cases = CasesOf(GetParam());
  ASSERT_FALSE(cases.empty());
  const fs::path cases_path = tmp.path() / "cases.json";
  std::ofstream(cases_path) << cases.dump(1);
  const auto start = std::chrono::steady_clock::now();
  const std::string command =
      fmt::format("{} {}/tools/oracle/hf_model.py {} {} >{} 2>&1", python, PROCTOR_SOURCE_DIR,
                  cases_path.string(), tmp.path().string(), (tmp.path() / "oracle.log").string());
  const int status = std::system(command.c_str());
  std::ifstream log_file(tmp.path() / "oracle.log");
  const std::string log((std::istreambuf_iterator<char>(log_file)), {});
  ASSERT_EQ(status, 0) << command << "\n" << log;
  const double oracle_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::ifstream versions_file(tmp.path() / "versions.json");
  const json versions = json::parse(versions_file);
  std::printf("[ oracle ] transformers %s, torch %s: %zu %s models in %.1f s\n",
              versions["transformers"].get<std::string>().c_str(),
              versions["torch"].get<std::string>().c_str(), cases.size(), GetParam().c_str(),
              oracle_seconds);

  for (const json& c : cases) {
    const std::string name = c["name"];
    SCOPED_TRACE(name);
    const auto g = testing::LoadGolden(tmp.path() / name);
    ASSERT_NE(g, nullptr) << "the oracle wrote no model for " << name;
    // Long prompts run in chunks of 256: prefill across chunk boundaries against HF's one pass.
    const int64_t chunk = g->prompt.size() > 256 ? 256 : 512;
    const testing::GoldenDistances d = testing::ExpectMatchesGolden(*g, name, chunk);

    // The final-normed hidden states (HF's last output_hidden_states entry).
    const RuntimeModel model(g->config, g->weights, RuntimeOptions{});
    ModelCache cache = model.MakeCache();
    const Tensor hidden = model.ForwardHidden(g->prompt, cache);
    const size_t n = g->prompt.size() * static_cast<size_t>(g->config.hidden_size);
    ASSERT_GE(g->hidden_states.size(), n);
    const std::span<const float> hf_final(g->hidden_states.data() + g->hidden_states.size() - n, n);
    const float hidden_diff =
        testing::MaxAbsDiff(std::span<const float>(hidden.f32(), n), hf_final);
    EXPECT_LE(hidden_diff, 1e-4f) << name << ": final hidden states";
    std::printf("[ distance ] %s: prompt logits %.3g, step logits %.3g, final hidden %.3g\n",
                name.c_str(), d.prompt, d.steps, hidden_diff);
  }
}

INSTANTIATE_TEST_SUITE_P(Families, HfLive,
                         ::testing::Values("llama", "mistral", "qwen2", "qwen3", "gemma2", "gemma3",
                                           "qwen3_5", "qwen3_next", "qwen3_moe", "mixtral",
                                           "phi3"));

}  // namespace
}  // namespace proctor
