// Gemma as GGUF, against both references. transformers (tools/oracle/hf_model.py) builds a
// Gemma 2 and a Gemma 3 model in configurations a GGUF file can express (query_pre_attn_scalar =
// head_dim, as llama.cpp assumes); tools/hf_to_gguf.py writes each in llama.cpp's layout (norms
// stored as 1 + weight, Gemma's tensor names and metadata); the engine reads the GGUF and must
// give transformers' prompt logits (1e-4) and greedy tokens, and llama.cpp (its libllama, F32
// cache) computes logits from the same file that the engine's match within the distance of
// llama.cpp's own arithmetic: ggml evaluates GELU through an f16 table, so its logits sit about
// 1e-3 from both transformers' and the engine's (printed), and its top token agrees at every
// position. The writer's refusals need no oracle.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "model/load.h"
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

json GemmaCases() {
  const json base = {{"vocab_size", 512},        {"hidden_size", 64},
                     {"intermediate_size", 128}, {"num_hidden_layers", 3},
                     {"num_attention_heads", 4}, {"num_key_value_heads", 2},
                     {"head_dim", 16},           {"max_position_embeddings", 256},
                     {"sliding_window", 16},     {"query_pre_attn_scalar", 16}};
  json gemma2 = base;
  gemma2["attn_logit_softcapping"] = 2.0;  // tied head, final cap 30: Gemma 2's defaults
  json gemma3 = base;
  gemma3.update(
      {{"final_logit_softcapping", 10.0},
       {"tie_word_embeddings", false},
       {"layer_types", {"sliding_attention", "sliding_attention", "full_attention"}},
       {"rope_parameters",
        {{"full_attention", {{"rope_type", "linear"}, {"factor", 8.0}, {"rope_theta", 1000000.0}}},
         {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}}}}}});
  const auto with = [](const std::string& name, const std::string& type, int seed,
                       const json& config) {
    return json{{"name", name},     {"model_type", type}, {"dtype", "float32"}, {"seed", seed},
                {"prompt_len", 64}, {"greedy_len", 16},   {"config", config}};
  };
  return json::array(
      {with("gemma2-gguf", "gemma2", 71, gemma2), with("gemma3-gguf", "gemma3_text", 72, gemma3)});
}

TEST(GemmaGguf, ConvertedModelsMatchTransformersAndLlamaCpp) {
  if (const std::string problem = testing::OraclesProblem({"python", "llama.cpp"});
      !problem.empty()) {
    GTEST_SKIP() << "oracle environment not installed: " << problem;
  }
  const std::string python = testing::Oracles("python").Path("python");
  const auto& llama_cpp = testing::Oracles("llama.cpp");
  const testing::TempDir tmp;
  const json cases = GemmaCases();
  std::ofstream(tmp.path() / "cases.json") << cases.dump(1);
  ASSERT_EQ(
      RunLogged(fmt::format("{} {}/tools/oracle/hf_model.py {} {}", python, PROCTOR_SOURCE_DIR,
                            (tmp.path() / "cases.json").string(), tmp.path().string()),
                tmp.path() / "hf.log"),
      0)
      << ReadText(tmp.path() / "hf.log");

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
    EXPECT_FALSE(loaded.config.norm_adds_one);  // the file stores 1 + weight
    const RuntimeModel model(loaded.config, loaded.weights, RuntimeOptions{});
    const testing::GoldenDistances d = testing::ExpectModelMatchesGolden(model, *g, name);

    // llama.cpp on the same file.
    const std::vector<float> ours = testing::PromptLogits(model, g->prompt, 512);
    const fs::path out = tmp.path() / (name + ".llama.f32");
    ASSERT_EQ(RunLogged(fmt::format("{} {} {} {} {} 1", llama_cpp.Path("llama_cpp_logits"),
                                    llama_cpp.Path("llama_cpp_lib"), gguf.string(),
                                    fmt::join(g->prompt, ","), out.string()),
                        tmp.path() / "llama.log"),
              0)
        << ReadText(tmp.path() / "llama.log");
    const std::vector<float> theirs = testing::ReadF32File(out);
    ASSERT_EQ(theirs.size(), ours.size());
    const float to_llama_cpp = testing::MaxAbsDiff(ours, theirs);
    const float hf_to_llama_cpp = testing::MaxAbsDiff(g->logits, theirs);
    EXPECT_LE(to_llama_cpp, 1e-2f);
    const size_t vocab = static_cast<size_t>(loaded.config.vocab_size);
    for (size_t t = 0; t < g->prompt.size(); ++t) {
      const auto row = [&](const std::vector<float>& v) { return v.begin() + t * vocab; };
      EXPECT_EQ(std::max_element(row(ours), row(ours) + vocab) - row(ours),
                std::max_element(row(theirs), row(theirs) + vocab) - row(theirs))
          << "top token at position " << t;
    }
    std::printf(
        "[ distance ] %s GGUF: transformers %.3g (steps %.3g); llama.cpp %.3g (transformers to "
        "llama.cpp %.3g)\n",
        name.c_str(), d.prompt, d.steps, to_llama_cpp, hf_to_llama_cpp);
  }
}

// What GGUF cannot say is refused by the writer, naming the setting: the hf-goldens Gemma 2 has
// query_pre_attn_scalar 256 over head_dim 16, and an untied head.
TEST(GemmaGguf, TheWriterRefusesWhatLlamaCppCannotRepresent) {
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
