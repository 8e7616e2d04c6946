// `proctor quantize`, `proctor logits` and `proctor ppl` against MLX and mlx-lm themselves, live
// (tools/oracle/mlx_model.py in the oracle environment: mlx[cpu] 0.32.4, mlx-lm 0.32.2):
//  - the bytes: for weights stored as f32, bf16 and f16 (random, with adversarial rows: zeros,
//    constant groups, outliers, tiny and huge values), mlx-lm's own conversion (load_model,
//    quantize_model with its recipe predicate, save_model, save_config) and `proctor quantize`
//    write the same tensors byte for byte and the same config.json quantization block, for every
//    affine bits x group size, mxfp4, mxfp8, nvfp4 and every mixed recipe;
//  - the forward: mlx-lm's own model over proctor-quantized directories (f32 scales) gives the
//    logits the engine gives;
//  - perplexity: mlx_lm.perplexity's eval_ppl over a corpus equals `proctor ppl` on it.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_test_support.h"  // same folder: cli_test has no src/ include path
#include "testing_oracles.h"   // util/ (cli_test's one extra include path)

namespace proctor::cli_test {
namespace {

using nlohmann::json;

std::string OraclePython() {
  const std::string problem = proctor::testing::OraclesProblem({"python"});
  return problem.empty() ? proctor::testing::Oracles("python").Path("python") : std::string();
}

#define SKIP_WITHOUT_MLX(python)                       \
  if ((python).empty())                                \
  GTEST_SKIP() << "oracle environment not installed: " \
               << proctor::testing::OraclesProblem({"python"})

// Runs tools/oracle/mlx_model.py ARGS with the oracle environment's python. Result::out is its
// stdout, or, when it fails, its stdout and stderr.
Result MlxModel(const std::string& python, const std::string& args) {
  const fs::path err = TempPath("mlx-model.err");
  Result r = RunShell(fmt::format("{} {}/tools/oracle/mlx_model.py {} 2>{}", python,
                                  PROCTOR_SOURCE_DIR, args, err.string()));
  if (r.status != 0) {
    std::ifstream in(err);
    r.out += std::string((std::istreambuf_iterator<char>(in)), {});
  }
  std::error_code ec;
  fs::remove(err, ec);
  return r;
}

// Every MLX quantization the tests compare: affine bits x group sizes, the three float modes and
// the four mixed recipes (mlx-lm's defaults: group 64 for a recipe).
struct Spec {
  std::string name;   // a folder name
  std::string flags;  // `proctor quantize` flags
  json job;           // mlx_model.py quantize job (without source / out)
};

std::vector<Spec> AllSpecs() {
  std::vector<Spec> specs;
  for (const int bits : {2, 3, 4, 5, 6, 8}) {
    for (const int group : {32, 64, 128}) {
      specs.push_back({fmt::format("affine{}-g{}", bits, group),
                       fmt::format("--bits {} --group-size {}", bits, group),
                       {{"bits", bits}, {"group_size", group}, {"mode", "affine"}}});
    }
  }
  specs.push_back({"mxfp4", "--mode mxfp4", {{"bits", 4}, {"group_size", 32}, {"mode", "mxfp4"}}});
  specs.push_back({"mxfp8", "--mode mxfp8", {{"bits", 8}, {"group_size", 32}, {"mode", "mxfp8"}}});
  specs.push_back({"nvfp4", "--mode nvfp4", {{"bits", 4}, {"group_size", 16}, {"mode", "nvfp4"}}});
  for (const char* recipe : {"mixed_2_6", "mixed_3_4", "mixed_3_6", "mixed_4_6"}) {
    specs.push_back(
        {recipe,
         fmt::format("--recipe {}", recipe),
         {{"bits", nullptr}, {"group_size", 64}, {"mode", "affine"}, {"recipe", recipe}}});
  }
  return specs;
}

class MlxQuantizeBytes : public ::testing::TestWithParam<std::string> {};

TEST_P(MlxQuantizeBytes, EveryModeBitsGroupAndRecipeEqualsMlxLm) {
  const std::string python = OraclePython();
  SKIP_WITHOUT_MLX(python);
  const std::string dtype = GetParam();
  TempDir tmp;
  const fs::path source = tmp.path() / "source";
  Result r = MlxModel(python, fmt::format("source {} --dtype {}", source.string(), dtype));
  ASSERT_EQ(r.status, 0) << r.out;

  const std::vector<Spec> specs = AllSpecs();
  json jobs = json::array(), pairs = json::array();
  for (const Spec& s : specs) {
    json job = s.job;
    if (job["bits"].is_null()) job["bits"] = 4;  // mlx_lm.convert's default --q-bits
    job["source"] = source.string();
    job["out"] = (tmp.path() / ("mlx-" + s.name)).string();
    jobs.push_back(job);
    pairs.push_back({{"expected", job["out"]}, {"actual", (tmp.path() / s.name).string()}});
  }
  std::ofstream(tmp.path() / "jobs.json") << jobs.dump();
  std::ofstream(tmp.path() / "pairs.json") << pairs.dump();
  const auto start = std::chrono::steady_clock::now();
  r = MlxModel(python, "quantize " + (tmp.path() / "jobs.json").string());
  ASSERT_EQ(r.status, 0) << r.out;
  const double mlx_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const Spec& s : specs) {
    const Result q = Proctor(fmt::format("quantize {} --out {} {}", source.string(),
                                         (tmp.path() / s.name).string(), s.flags));
    ASSERT_EQ(q.status, 0) << s.name << ": " << q.out;
  }
  r = MlxModel(python, "compare " + (tmp.path() / "pairs.json").string());
  ASSERT_EQ(r.status, 0) << r.out;
  const json reports = json::parse(r.out);
  ASSERT_EQ(reports.size(), specs.size());
  int tensors = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    SCOPED_TRACE(dtype + " " + specs[i].name);
    const json& report = reports[i];
    tensors += report["tensors"].get<int>();
    EXPECT_GT(report["tensors"].get<int>(), 20);
    EXPECT_EQ(report["missing"], json::array());
    EXPECT_EQ(report["extra"], json::array());
    EXPECT_EQ(report["mismatches"], json::array());
    EXPECT_EQ(report["quantization_actual"], report["quantization_expected"]);
    EXPECT_EQ(report["quantization_config_actual"], report["quantization_config_expected"]);
  }
  std::printf(
      "[ oracle ] mlx-lm %zu conversions of a %s model in %.1f s; %d tensors compared "
      "byte for byte with proctor quantize's\n",
      specs.size(), dtype.c_str(), mlx_seconds, tensors);
}

INSTANTIATE_TEST_SUITE_P(WeightsDtypes, MlxQuantizeBytes,
                         ::testing::Values("float32", "bfloat16", "float16"));

// Largest |a - b| over two equally long vectors.
double MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    m = std::max(m, std::fabs(static_cast<double>(a[i]) - b[i]));
  }
  return m;
}

// A hf_model.py case: a small model of `model_type` (hidden 64, 2 layers, 4/2 heads of 16, vocab
// 512, f32) with `overrides`, a 48-token prompt.
json BuiltCase(const std::string& name, const std::string& model_type, int seed,
               const json& overrides) {
  json config = {{"vocab_size", 512},        {"hidden_size", 64},
                 {"intermediate_size", 128}, {"num_hidden_layers", 2},
                 {"num_attention_heads", 4}, {"num_key_value_heads", 2},
                 {"head_dim", 16},           {"max_position_embeddings", 256}};
  config.update(overrides);
  return json{{"name", name},     {"model_type", model_type}, {"dtype", "float32"}, {"seed", seed},
              {"prompt_len", 48}, {"greedy_len", 1},          {"config", config}};
}

// "1,2,3": the --prompt-ids value of `prompt`.
std::string PromptIds(const std::vector<int>& prompt) {
  std::string ids;
  for (const int id : prompt) {
    if (!ids.empty()) ids += ',';
    ids += std::to_string(id);
  }
  return ids;
}

// The engine's logits against mlx-lm's: within 1e-4, relative to the largest logit past 8.
void ExpectLogitsNearMlxLm(const std::vector<float>& mine, const std::vector<float>& theirs,
                           const std::string& label) {
  double scale = 0;
  for (const float x : theirs) scale = std::max(scale, std::fabs(static_cast<double>(x)));
  const double diff = MaxAbsDiff(mine, theirs);
  std::printf("[ distance ] %s: max |logit difference| %.3g (max |logit| %.3g)\n", label.c_str(),
              diff, scale);
  EXPECT_LE(diff, 1e-4 * std::max(1.0, scale / 8)) << label;
}

// A copy of an hf-goldens model whose config.json spells RoPE the older way (top-level
// rope_theta, rope_scaling): mlx-lm 0.32.2's qwen2 reads only that spelling and silently falls
// back to theta 1e6 on transformers 5's nested rope_parameters. The engine reads both.
fs::path WithOlderRopeSpelling(const fs::path& golden, const fs::path& out) {
  fs::create_directories(out);
  fs::copy_file(golden / "model.safetensors", out / "model.safetensors");
  json config = json::parse(std::ifstream(golden / "config.json"));
  if (config.contains("rope_parameters") && config["rope_parameters"].contains("full_attention")) {
    // Gemma 3: the global rope as rope_theta, the local one as rope_local_base_freq.
    config["rope_theta"] = config["rope_parameters"]["full_attention"]["rope_theta"];
    config["rope_local_base_freq"] = config["rope_parameters"]["sliding_attention"]["rope_theta"];
    config.erase("rope_parameters");
  } else if (config.contains("rope_parameters")) {
    json rope = config["rope_parameters"];
    config["rope_theta"] = rope["rope_theta"];
    rope.erase("rope_theta");
    if (rope.contains("partial_rotary_factor")) {  // mlx-lm's phi3 reads it at the top level
      config["partial_rotary_factor"] = rope["partial_rotary_factor"];
      rope.erase("partial_rotary_factor");
    }
    if (rope.value("rope_type", "default") != "default") config["rope_scaling"] = rope;
    config.erase("rope_parameters");
  }
  std::ofstream(out / "config.json") << config.dump(1);
  return out;
}

// hf-goldens f32 models, quantized by proctor (f32 scales: mlx-lm then computes in f32 too), run
// by mlx-lm's own model and by the engine over the golden's prompt.
TEST(MlxLmForward, EngineLogitsEqualMlxLmsOnProctorQuantizedModels) {
  const std::string python = OraclePython();
  SKIP_WITHOUT_MLX(python);
  struct Case {
    std::string golden, flags;
  };
  std::vector<Case> cases = {{"llama-f32", "--bits 4 --group-size 32"},
                             {"llama-f32", "--mode mxfp4"},
                             {"qwen2-f32-bias", "--bits 8 --group-size 64"},
                             {"qwen2-f32-bias", "--mode nvfp4"},
                             {"qwen3-f32", "--recipe mixed_3_6"},
                             {"qwen3-f32", "--mode mxfp8"},
                             {"qwen3-f32-long", "--bits 6 --group-size 64"},
                             {"gemma3-f32", "--bits 8 --group-size 64"},
                             {"gemma3-f32", "--mode mxfp4"}};
  TempDir tmp;
  // Models transformers builds at test time (tools/oracle/hf_model.py), for families the goldens
  // lack or hold in a form mlx-lm does not run. mlx-lm 0.32.2's gemma2 always ties its head (the
  // hf-goldens one is untied) and has no sliding window: transformers builds a tied Gemma 2
  // (soft-caps 50 / 30 by default) whose window (64) exceeds the 48-token prompt. mlx-lm's phi3
  // and mixtral have no sliding window either: theirs is off. Windows are checked against
  // transformers (model/hf_oracle_test.cc).
  const json built_cases = json::array(
      {BuiltCase("gemma2-tied", "gemma2", 81, {{"sliding_window", 64}}),
       // Fused qkv_proj / gate_up_proj, partial rotary (Phi-4-mini's 0.75).
       BuiltCase("phi3", "phi3", 82,
                 {{"sliding_window", nullptr},
                  {"pad_token_id", nullptr},
                  {"eos_token_id", 2},
                  {"partial_rotary_factor", 0.75}}),
       // Per-expert w1 / w3 / w2, which mlx-lm stacks into its switch_mlp on load.
       BuiltCase(
           "mixtral", "mixtral", 83,
           {{"sliding_window", nullptr}, {"num_local_experts", 4}, {"num_experts_per_tok", 2}})});
  std::ofstream(tmp.path() / "built.json") << built_cases.dump();
  const Result built =
      RunShell(fmt::format("{} {}/tools/oracle/hf_model.py {} {} 2>&1", python, PROCTOR_SOURCE_DIR,
                           (tmp.path() / "built.json").string(), tmp.path().string()));
  ASSERT_EQ(built.status, 0) << built.out;
  cases.push_back({(tmp.path() / "gemma2-tied").string(), "--bits 4 --group-size 32"});
  cases.push_back({(tmp.path() / "phi3").string(), "--bits 4 --group-size 32"});
  cases.push_back({(tmp.path() / "mixtral").string(), "--recipe mixed_3_6"});
  json jobs = json::array();
  std::vector<fs::path> proctor_out;
  for (size_t i = 0; i < cases.size(); ++i) {
    const fs::path golden = fs::path(cases[i].golden).is_absolute()
                                ? fs::path(cases[i].golden)
                                : Fixtures() / "hf-goldens" / cases[i].golden;
    if (!fs::exists(golden / "tokens.json")) GTEST_SKIP() << "fixture absent: " << golden;
    const fs::path source = WithOlderRopeSpelling(golden, tmp.path() / fmt::format("src{}", i));
    const fs::path model = tmp.path() / fmt::format("m{}", i);
    const Result q = Proctor(
        fmt::format("quantize {} --out {} {}", source.string(), model.string(), cases[i].flags));
    ASSERT_EQ(q.status, 0) << q.out;
    const std::vector<int> prompt =
        json::parse(std::ifstream(golden / "tokens.json"))["prompt"].get<std::vector<int>>();
    const std::string ids = PromptIds(prompt);
    proctor_out.push_back(tmp.path() / fmt::format("proctor{}.f32", i));
    const Result l = Proctor(fmt::format("logits {} --prompt-ids {} --out {}", model.string(), ids,
                                         proctor_out.back().string()));
    ASSERT_EQ(l.status, 0) << l.out;
    jobs.push_back({{"model", model.string()},
                    {"tokens", prompt},
                    {"out", (tmp.path() / fmt::format("mlx{}.f32", i)).string()}});
  }
  std::ofstream(tmp.path() / "jobs.json") << jobs.dump();
  const Result r = MlxModel(python, "logits " + (tmp.path() / "jobs.json").string());
  ASSERT_EQ(r.status, 0) << r.out;
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string label = fs::path(cases[i].golden).filename().string() + " " + cases[i].flags;
    const std::vector<float> mine = ReadF32(proctor_out[i]);
    const std::vector<float> theirs = ReadF32(jobs[i]["out"].get<std::string>());
    ExpectLogitsNearMlxLm(mine, theirs, label);
  }
}

// mlx-lm's own quantized mixtures of experts: its conversion (mlx_model.py quantize, 4 bits,
// groups of 32) stacks each layer's experts into switch_mlp tensors, which the engine splits
// back into one matrix per expert (SplitSwitchMlp); its logits on those directories equal
// mlx-lm's forward. A Mixtral (block_sparse_moe, w1 / w3 / w2), a Qwen3-MoE (mlp, gate / up /
// down projections) and a Qwen3-Next (mlx-lm's hybrid layout, ReadMlxLmHybridLayout, and its
// quantized fused DeltaNet projections) built by transformers.
TEST(MlxLmMoe, EngineReadsMlxLmsStackedExperts) {
  const std::string python = OraclePython();
  SKIP_WITHOUT_MLX(python);
  TempDir tmp;
  const json cases = json::array(
      {BuiltCase(
           "mixtral", "mixtral", 84,
           {{"sliding_window", nullptr}, {"num_local_experts", 4}, {"num_experts_per_tok", 2}}),
       BuiltCase("qwen3_moe", "qwen3_moe", 85,
                 {{"num_experts", 4},
                  {"num_experts_per_tok", 2},
                  {"moe_intermediate_size", 32},
                  {"norm_topk_prob", true}}),
       // A Qwen3-Next: mlx-lm keeps the DeltaNet's in_proj_qkvz / in_proj_ba fused (quantized
       // here), stores the conv taps as [channels, taps, 1] and norms as 1 + weight, and
       // quantizes the routers to 8 bits in groups of 64.
       BuiltCase("qwen3_next", "qwen3_next", 86,
                 {{"head_dim", 32},
                  {"num_hidden_layers", 4},
                  {"linear_num_key_heads", 2},
                  {"linear_num_value_heads", 4},
                  {"linear_key_head_dim", 16},
                  {"linear_value_head_dim", 16},
                  {"linear_conv_kernel_dim", 4},
                  {"full_attention_interval", 2},
                  {"layer_types",
                   {"linear_attention", "full_attention", "linear_attention", "full_attention"}},
                  {"num_experts", 4},
                  {"num_experts_per_tok", 2},
                  {"moe_intermediate_size", 32},
                  {"shared_expert_intermediate_size", 32},
                  {"norm_topk_prob", true},
                  {"decoder_sparse_step", 1},
                  {"mlp_only_layers", json::array()},
                  {"rope_parameters",
                   {{"rope_type", "default"},
                    {"rope_theta", 10000.0},
                    {"partial_rotary_factor", 0.25}}}})});
  std::ofstream(tmp.path() / "built.json") << cases.dump();
  const Result made =
      RunShell(fmt::format("{} {}/tools/oracle/hf_model.py {} {} 2>&1", python, PROCTOR_SOURCE_DIR,
                           (tmp.path() / "built.json").string(), tmp.path().string()));
  ASSERT_EQ(made.status, 0) << made.out;
  json quantize_jobs = json::array(), logits_jobs = json::array();
  std::vector<std::pair<std::string, std::string>> converted;  // {label, case name}
  for (const json& c : cases) {
    const std::string name = c["name"];
    const fs::path source = WithOlderRopeSpelling(tmp.path() / name, tmp.path() / (name + "-src"));
    // mlx-lm 0.32.2's qwen3_moe reads num_experts, which transformers 5 saves as
    // num_local_experts.
    json config = json::parse(std::ifstream(source / "config.json"));
    if (config["model_type"] == "qwen3_moe") config["num_experts"] = config["num_local_experts"];
    std::ofstream(source / "config.json") << config.dump(1);
    // The Qwen3-MoE also with mlx-lm's mixed 3/6-bit recipe: an override for every module,
    // switch_mlp paths included.
    for (const json& recipe : {json(nullptr), json("mixed_3_6")}) {
      if (!recipe.is_null() && name != "qwen3_moe") continue;
      const std::string label = recipe.is_null() ? name : name + "-" + recipe.get<std::string>();
      quantize_jobs.push_back({{"source", source.string()},
                               {"out", (tmp.path() / (label + "-mlx")).string()},
                               {"bits", 4},
                               {"group_size", 32},
                               {"mode", "affine"},
                               {"recipe", recipe}});
      converted.emplace_back(label, name);
    }
  }
  std::ofstream(tmp.path() / "quantize.json") << quantize_jobs.dump();
  const Result q = MlxModel(python, "quantize " + (tmp.path() / "quantize.json").string());
  ASSERT_EQ(q.status, 0) << q.out;
  std::vector<fs::path> ours;
  for (const auto& [label, name] : converted) {
    const fs::path model = tmp.path() / (label + "-mlx");
    // mlx-lm wrote stacked experts.
    std::ifstream weights(model / "model.safetensors", std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(weights)), {});
    EXPECT_NE(bytes.find("switch_mlp"), std::string::npos) << label;
    if (label != name) {  // the recipe's overrides name the stacked experts
      const std::string config = json::parse(std::ifstream(model / "config.json")).dump();
      EXPECT_NE(config.find("mlp.switch_mlp.down_proj"), std::string::npos) << config;
    }
    if (name == "qwen3_next") {  // the fused DeltaNet projections are quantized
      EXPECT_NE(bytes.find("linear_attn.in_proj_qkvz.scales"), std::string::npos);
      EXPECT_NE(bytes.find("linear_attn.in_proj_ba.scales"), std::string::npos);
    }
    const std::vector<int> prompt =
        json::parse(std::ifstream(tmp.path() / name / "tokens.json"))["prompt"]
            .get<std::vector<int>>();
    const std::string ids = PromptIds(prompt);
    ours.push_back(tmp.path() / (label + "-proctor.f32"));
    const Result l = Proctor(fmt::format("logits {} --prompt-ids {} --out {}", model.string(), ids,
                                         ours.back().string()));
    ASSERT_EQ(l.status, 0) << l.out;
    logits_jobs.push_back({{"model", model.string()},
                           {"tokens", prompt},
                           {"out", (tmp.path() / (label + "-mlx.f32")).string()}});
  }
  std::ofstream(tmp.path() / "logits.json") << logits_jobs.dump();
  const Result r = MlxModel(python, "logits " + (tmp.path() / "logits.json").string());
  ASSERT_EQ(r.status, 0) << r.out;
  for (size_t i = 0; i < ours.size(); ++i) {
    const std::vector<float> mine = ReadF32(ours[i]);
    const std::vector<float> theirs = ReadF32(logits_jobs[i]["out"].get<std::string>());
    ExpectLogitsNearMlxLm(mine, theirs, "mlx-lm's " + converted[i].first);
  }
}

// A multimodal wrapper of an hf-goldens model as `wrap_py` writes it (python run after a preamble
// that sets `text` (the golden's config), `golden_weights` and save(config, weights)), converted
// by mlx-lm at 4 bits: the conversion holds `expected_tensor` and no vision tensor, and the
// engine's logits on it equal mlx-lm's.
void ExpectMlxLmConversionOfWrapperMatches(const std::string& golden_name, const char* wrap_py,
                                           const std::string& expected_tensor) {
  static constexpr char kPreamble[] = R"(import json, os, sys
from safetensors.numpy import load_file, save_file
golden, out = sys.argv[1], sys.argv[2]
os.makedirs(out)
text = json.load(open(os.path.join(golden, "config.json")))
golden_weights = load_file(os.path.join(golden, "model.safetensors"))
def save(config, weights):
    json.dump(config, open(os.path.join(out, "config.json"), "w"))
    save_file(weights, os.path.join(out, "model.safetensors"))
)";
  const std::string python = OraclePython();
  SKIP_WITHOUT_MLX(python);
  const fs::path golden = Fixtures() / "hf-goldens" / golden_name;
  if (!fs::exists(golden / "config.json")) GTEST_SKIP() << "fixture absent: " << golden;
  TempDir tmp;
  const fs::path wrapped = tmp.path() / "wrapped", converted = tmp.path() / "mlx";
  std::ofstream(tmp.path() / "wrap.py") << kPreamble << wrap_py;
  const Result w =
      RunShell(fmt::format("{} {} {} {} 2>&1", python, (tmp.path() / "wrap.py").string(),
                           golden.string(), wrapped.string()));
  ASSERT_EQ(w.status, 0) << w.out;
  const json jobs = json::array({{{"source", wrapped.string()},
                                  {"out", converted.string()},
                                  {"bits", 4},
                                  {"group_size", 32},
                                  {"mode", "affine"},
                                  {"recipe", nullptr}}});
  std::ofstream(tmp.path() / "quantize.json") << jobs.dump();
  const Result q = MlxModel(python, "quantize " + (tmp.path() / "quantize.json").string());
  ASSERT_EQ(q.status, 0) << q.out;
  {
    std::ifstream weights(converted / "model.safetensors", std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(weights)), {});
    EXPECT_NE(bytes.find(expected_tensor), std::string::npos) << expected_tensor;
    EXPECT_EQ(bytes.find("visual"), std::string::npos);
    EXPECT_EQ(bytes.find("vision_tower"), std::string::npos);
  }
  const std::vector<int> prompt =
      json::parse(std::ifstream(golden / "tokens.json"))["prompt"].get<std::vector<int>>();
  const fs::path ours = tmp.path() / "proctor.f32", theirs = tmp.path() / "mlx.f32";
  const Result l = Proctor(fmt::format("logits {} --prompt-ids {} --out {}", converted.string(),
                                       PromptIds(prompt), ours.string()));
  ASSERT_EQ(l.status, 0) << l.out;
  std::ofstream(tmp.path() / "logits.json")
      << json::array(
             {{{"model", converted.string()}, {"tokens", prompt}, {"out", theirs.string()}}})
             .dump();
  const Result r = MlxModel(python, "logits " + (tmp.path() / "logits.json").string());
  ASSERT_EQ(r.status, 0) << r.out;
  ExpectLogitsNearMlxLm(ReadF32(ours), ReadF32(theirs), "mlx-lm's conversion of " + golden_name);
}

// Qwen3.5 as mlx-community ships it: mlx-lm's conversion of the multimodal wrapper (qwen3_5,
// text_config) keeps the language model under language_model.model.* and
// language_model.lm_head.*, in its hybrid layout. The hf-goldens Qwen3.5 is rewritten as
// transformers 5 saves the wrapper (weights under model.language_model.*, a vision tensor
// beside). mlx-lm 0.32.2's qwen3_5 reads full_attention_interval, not layer_types (the golden's
// layers alternate).
TEST(MlxLmWrapper, EngineReadsMlxLmsQwen35Conversion) {
  ExpectMlxLmConversionOfWrapperMatches(
      "qwen3_5-f32", R"(text["full_attention_interval"] = 2
config = {"model_type": "qwen3_5", "text_config": text, "vision_config": {"depth": 1},
          "tie_word_embeddings": text["tie_word_embeddings"]}
weights = {("model.language_model." + k[6:] if k.startswith("model.") else k): v
           for k, v in golden_weights.items()}
weights["model.visual.patch_embed.proj.weight"] = weights["model.language_model.norm.weight"][:4]
save(config, weights)
)",
      "language_model.model.layers.0.linear_attn.in_proj_qkv.scales");
}

// Gemma 3 as mlx-lm reads its wrapper (gemma3): the language model under language_model.model.*
// and language_model.lm_head.* (transformers 4's names, which mlx-lm 0.32.2's sanitize expects),
// vision_tower.* and multi_modal_projector.* beside. mlx-lm's gemma3 takes the vocabulary from
// the wrapper's own vocab_size (default 262208) and its text model the sliding pattern from
// sliding_window_pattern (the golden's layers alternate) and the rope bases from rope_theta and
// rope_local_base_freq (its defaults are the golden's).
TEST(MlxLmWrapper, EngineReadsMlxLmsGemma3Conversion) {
  ExpectMlxLmConversionOfWrapperMatches("gemma3-f32", R"(text["sliding_window_pattern"] = 2
config = {"model_type": "gemma3", "text_config": text, "vision_config": {"num_hidden_layers": 1},
          "vocab_size": text["vocab_size"]}
weights = {"language_model." + k: v for k, v in golden_weights.items()}
norm = weights["language_model.model.norm.weight"]
weights["vision_tower.vision_model.post_layernorm.weight"] = norm[:4]
weights["multi_modal_projector.mm_soft_emb_norm.weight"] = norm[:4]
save(config, weights)
)",
                                        "language_model.model.layers.0.self_attn.q_proj.scales");
}

// mlx-lm's quantized KV cache (QuantizedKVCache, maybe_quantize_kv_cache after every model call,
// quantized_scaled_dot_product_attention) against the engine's --kv affine:BITS:gGROUP
// --kv-start N on the same chunks: the qwen3 golden (f32, head_dim 32) over 40 tokens.
TEST(MlxLmQuantizedKv, EngineLogitsEqualMlxLmsQuantizedCache) {
  const std::string python = OraclePython();
  SKIP_WITHOUT_MLX(python);
  const fs::path golden = Fixtures() / "hf-goldens" / "qwen3-f32";
  if (!fs::exists(golden / "config.json")) GTEST_SKIP() << "fixture absent: " << golden;
  struct Case {
    int bits, group, start, chunk;
  };
  // start 0: converted after the first chunk; 16: after the step that reaches 16 positions;
  // chunk 1: token by token (the decode path).
  const std::vector<Case> cases = {
      {4, 32, 0, 8}, {8, 32, 16, 8}, {2, 32, 5, 1}, {3, 32, 0, 13}, {6, 32, 12, 5}};
  TempDir tmp;
  const fs::path model = WithOlderRopeSpelling(golden, tmp.path() / "model");
  const int vocab = json::parse(std::ifstream(golden / "config.json"))["vocab_size"].get<int>();
  std::vector<int> tokens;
  std::string ids;
  for (int i = 0; i < 40; ++i) {
    tokens.push_back((i * 37 + 11) % vocab);
    if (i > 0) ids += ',';
    ids += std::to_string(tokens.back());
  }
  json jobs = json::array();
  std::vector<fs::path> proctor_out;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    proctor_out.push_back(tmp.path() / fmt::format("proctor{}.f32", i));
    const Result l = Proctor(fmt::format(
        "logits {} --prompt-ids {} --out {} --kv affine:{}:g{} --kv-start {} --chunk {}",
        model.string(), ids, proctor_out.back().string(), c.bits, c.group, c.start, c.chunk));
    ASSERT_EQ(l.status, 0) << l.out;
    jobs.push_back({{"model", model.string()},
                    {"tokens", tokens},
                    {"kv_bits", c.bits},
                    {"kv_group_size", c.group},
                    {"kv_start", c.start},
                    {"chunk", c.chunk},
                    {"out", (tmp.path() / fmt::format("mlx{}.f32", i)).string()}});
  }
  // The f32 cache as a yardstick: how far each quantized cache moved the logits.
  const fs::path dense_out = tmp.path() / "dense.f32";
  const Result d = Proctor(
      fmt::format("logits {} --prompt-ids {} --out {}", model.string(), ids, dense_out.string()));
  ASSERT_EQ(d.status, 0) << d.out;
  const std::vector<float> dense = ReadF32(dense_out);
  std::ofstream(tmp.path() / "jobs.json") << jobs.dump();
  const Result r = MlxModel(python, "logits " + (tmp.path() / "jobs.json").string());
  ASSERT_EQ(r.status, 0) << r.out;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const std::string label =
        fmt::format("affine:{}:g{} --kv-start {} --chunk {}", c.bits, c.group, c.start, c.chunk);
    const std::vector<float> mine = ReadF32(proctor_out[i]);
    const std::vector<float> theirs = ReadF32(jobs[i]["out"].get<std::string>());
    double scale = 0;
    for (const float x : theirs) scale = std::max(scale, std::fabs(static_cast<double>(x)));
    const double diff = MaxAbsDiff(mine, theirs);
    const double moved = MaxAbsDiff(dense, theirs);
    std::printf(
        "[ distance ] qwen3-f32 %s: max |logit difference| %.3g vs mlx-lm; the quantized cache "
        "moved the logits by %.3g (max |logit| %.3g)\n",
        label.c_str(), diff, moved, scale);
    // The cache rounds each key and value to 2^bits levels, so an ulp of difference in one
    // before rounding (the two engines' f32 products sum in different orders) can put one
    // element on the other side of a rounding boundary: one code a step away. That moves the
    // logits by far more than 1e-4 but by a sliver of what the quantization itself moved them
    // (measured: proctor's own AVX2 and AVX-512 paths differ by 1.2e-5 with the f32 cache and by
    // 4.5e-3 with affine:4:g32, one flipped code, against the 1.97 the quantization moved).
    // Equal codes agree to 1e-4; otherwise the difference must stay under 1% of that movement.
    EXPECT_LE(diff, std::max(1e-4 * std::max(1.0, scale / 8), moved / 100)) << label;
    EXPECT_GT(moved, 100 * diff) << label << ": the comparison must see the quantization";
  }
}

// mlx_lm.perplexity's eval_ppl against `proctor ppl` on one corpus (stories260K's tokenizer over
// wikitext-2), for stories260K quantized to 8 and 4 bits.
TEST(MlxLmPerplexity, ProctorPplEqualsMlxLmEvalPpl) {
  const std::string python = OraclePython();
  SKIP_WITHOUT_MLX(python);
  const fs::path gguf = Fixtures() / "stories260K" / "stories260K.gguf";
  const fs::path text = Fixtures() / "wikitext-2" / "wiki.test.raw";
  if (!fs::exists(gguf) || !fs::exists(text)) GTEST_SKIP() << "fixtures absent: " << gguf;
  TempDir tmp;
  const fs::path corpus = tmp.path() / "corpus";
  Result r = Proctor(fmt::format("corpus {} --tokenizer {} --out {} --ctx-len 128 --n-seqs 16",
                                 text.string(), gguf.string(), corpus.string()));
  ASSERT_EQ(r.status, 0) << r.out;
  for (const int bits : {8, 4}) {
    SCOPED_TRACE(bits);
    const fs::path model = tmp.path() / fmt::format("q{}", bits);
    r = Proctor(fmt::format("quantize {} --out {} --bits {} --group-size 32", gguf.string(),
                            model.string(), bits));
    ASSERT_EQ(r.status, 0) << r.out;
    const fs::path json_path = tmp.path() / fmt::format("ppl{}.json", bits);
    r = Proctor(fmt::format("ppl {} --data {} --n-seqs -1 --json {}", model.string(),
                            corpus.string(), json_path.string()));
    ASSERT_EQ(r.status, 0) << r.out;
    const json mine = json::parse(std::ifstream(json_path))["results"];
    r = MlxModel(python, fmt::format("ppl {} {} --ctx-len 128", model.string(),
                                     (corpus / "tokens.bin").string()));
    ASSERT_EQ(r.status, 0) << r.out;
    const json theirs = json::parse(r.out);
    EXPECT_EQ(mine["positions"], theirs["tokens"]);
    const double ppl = mine["ppl"], se = mine["standard_error"];
    EXPECT_NEAR(ppl, theirs["ppl"].get<double>(), 1e-4 * ppl);
    EXPECT_NEAR(se, theirs["se"].get<double>(), 1e-3 * se);
    std::printf(
        "[ ppl ] stories260K %d-bit g32 on wikitext-2: proctor %.6f +- %.6f, mlx_lm "
        "%.6f +- %.6f\n",
        bits, ppl, se, theirs["ppl"].get<double>(), theirs["se"].get<double>());
  }
}

}  // namespace
}  // namespace proctor::cli_test
