// `proctor quantize DIR --out X.gguf --type T` from a Llama safetensors checkpoint, against
// llama.cpp itself (the llama-cpp-python 0.3.36 sdist's vendor/llama.cpp, built and unpacked by
// tools/oracle/setup.sh): its convert_hf_to_gguf.py --outtype f32 makes the reference float
// file, llama_model_quantize (tools/llama_quantize_oracle.cc) quantizes it to T, and proctor's
// file must equal that one as llama.cpp's gguf-py reads both (tools/oracle/gguf_check.py): the
// same metadata keys in the same order with the same types and values, the same tensors in the
// same order with byte-identical data. Two keys are allowed to differ, each for a stated reason:
//   - general.name / general.size_label: convert_hf_to_gguf.py derives them from model-card
//     heuristics; proctor writes the directory's name and no size label;
//   - tokenizer.ggml.scores (SentencePiece-style tokenizer.json): convert_hf_to_gguf.py writes
//     -1000 for every token, proctor scores from the merge ranks;
//   - tokenizer.ggml.pre (byte-level BPE): convert_hf_to_gguf.py names the preset from a table of
//     hashes of known vocabularies, proctor from the pre-tokenizer's regexes.
// What those keys are for is then checked directly: llama.cpp's tokenizer on proctor's file
// gives Hugging Face tokenizers' ids for every hard input (testdata/tokenizer/hard_inputs.json),
// and on the Hugging Face goldens llama.cpp's logits on proctor's f32 file equal transformers'.
// Sources: the llama-f32 and llama-bf16-tied-rope-llama3 goldens (f32 and bf16 storage, a tied
// head, Llama 3 RoPE scaling as rope_freqs) with stories260K's vocabulary, and random Llamas
// (tools/write_random_llama.py) with the real Llama 3 (byte-level BPE) and Llama 2
// (SentencePiece-style) tokenizer.json files.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_test_support.h"  // same folder: cli_test has no src/ include path
#include "testing_oracles.h"   // util/ (cli_test's one extra include path)

namespace proctor::cli_test {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

struct Case {
  std::string name;
  std::string golden;     // an hf-goldens folder, or "" for a random llama
  std::string tokenizer;  // a fixtures/tokenizers folder for a random llama
  int vocab = 0;          // the random llama's vocabulary
  std::vector<std::string> types;
  std::vector<std::string> may_differ;  // besides general.name / general.size_label
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

// llama.cpp's llama_ftype numbers (include/llama.h) for the types the cases use.
int LlamaFtype(const std::string& type) {
  static const std::map<std::string, int> kFtypes = {{"f32", 0},     {"f16", 1},     {"q4_0", 2},
                                                     {"q8_0", 7},    {"q4_k_s", 14}, {"q4_k_m", 15},
                                                     {"q5_k_m", 17}, {"q6_k", 18},   {"bf16", 32}};
  return kFtypes.at(type);
}

json ReadJson(const fs::path& path) { return json::parse(std::ifstream(path)); }

Result Logged(const std::string& command, const fs::path& log) {
  return RunShell(fmt::format("{} >{} 2>&1", command, log.string()));
}

std::string Tail(const fs::path& log) {
  std::ifstream in(log);
  std::string all((std::istreambuf_iterator<char>(in)), {});
  return all.size() > 3000 ? all.substr(all.size() - 3000) : all;
}

class QuantizeGgufFromHf : public ::testing::TestWithParam<Case> {};

TEST_P(QuantizeGgufFromHf, EqualsConvertHfToGgufThenLlamaQuantize) {
  const Case& c = GetParam();
  if (const std::string problem = testing::OraclesProblem({"python", "llama.cpp"});
      !problem.empty()) {
    GTEST_SKIP() << "oracle unavailable: " << problem;
  }
  const auto& python_part = testing::Oracles("python");
  const auto& llama_cpp = testing::Oracles("llama.cpp");
  const std::string python = python_part.Path("python");
  const std::string check = std::string(PROCTOR_SOURCE_DIR) + "/tools/oracle/gguf_check.py";
  TempDir tmp;
  const fs::path dir = tmp.path() / "checkpoint";
  fs::create_directories(dir);

  // The checkpoint.
  if (!c.golden.empty()) {
    const fs::path golden = Fixtures() / "hf-goldens" / c.golden;
    const fs::path stories = Fixtures() / "stories260K" / "stories260K.gguf";
    if (!fs::exists(golden) || !fs::exists(stories)) GTEST_SKIP() << "fixtures absent";
    for (const char* file : {"config.json", "model.safetensors"}) {
      fs::copy_file(golden / file, dir / file);
    }
    // stories260K's 512-token vocabulary as tokenizer files (the goldens have none).
    const fs::path mlx = tmp.path() / "stories-mlx";
    const Result r =
        Proctor(fmt::format("quantize {} --out {} --bits 8", stories.string(), mlx.string()));
    ASSERT_EQ(r.status, 0) << r.out;
    for (const char* file : {"tokenizer.json", "tokenizer_config.json"}) {
      fs::copy_file(mlx / file, dir / file);
    }
  } else {
    const fs::path tokenizer = Fixtures() / "tokenizers" / c.tokenizer;
    if (!fs::exists(tokenizer)) GTEST_SKIP() << "fixture absent: " << tokenizer;
    fs::remove(dir);
    const fs::path log = tmp.path() / "write.log";
    ASSERT_EQ(Logged(fmt::format("/usr/bin/python3 {}/tools/write_random_llama.py {} --hidden 64 "
                                 "--layers 1 --ff 128 --vocab {} --heads 4 --kv-heads 2",
                                 PROCTOR_SOURCE_DIR, dir.string(), c.vocab),
                     log)
                  .status,
              0)
        << Tail(log);
    ASSERT_EQ(RunShell(fmt::format("xz -dc {} > {}", (tokenizer / "tokenizer.json.xz").string(),
                                   (dir / "tokenizer.json").string()))
                  .status,
              0);
    fs::copy_file(tokenizer / "tokenizer_config.json", dir / "tokenizer_config.json");
  }

  // llama.cpp's float file of it.
  const fs::path reference = tmp.path() / "reference-f32.gguf";
  const fs::path convert_log = tmp.path() / "convert.log";
  ASSERT_EQ(
      Logged(fmt::format("{} {} {} --outtype f32 --outfile {}", python,
                         llama_cpp.Path("convert_hf_to_gguf"), dir.string(), reference.string()),
             convert_log)
          .status,
      0)
      << Tail(convert_log);

  for (const std::string& type : c.types) {
    SCOPED_TRACE(type);
    const fs::path theirs = tmp.path() / ("llama-" + type + ".gguf");
    const fs::path ours = tmp.path() / ("proctor-" + type + ".gguf");
    const fs::path dump = tmp.path() / ("dump-" + type);
    fs::create_directories(dump);
    const fs::path log = tmp.path() / ("quantize-" + type + ".log");
    ASSERT_EQ(
        Logged(fmt::format("{} {} {} {} {}", llama_cpp.Path("llama_quantize_oracle"),
                           reference.string(), theirs.string(), LlamaFtype(type), dump.string()),
               log)
            .status,
        0)
        << Tail(log);
    const Result r =
        Proctor(fmt::format("quantize {} --out {} --type {}", dir.string(), ours.string(), type));
    ASSERT_EQ(r.status, 0) << r.out;
    const fs::path report = tmp.path() / ("compare-" + type + ".json");
    const fs::path compare_log = tmp.path() / ("compare-" + type + ".log");
    ASSERT_EQ(Logged(fmt::format("{} {} compare {} {} {} {} --ignore "
                                 "general.name,general.size_label",
                                 python, check, llama_cpp.Path("gguf_py"), ours.string(),
                                 theirs.string(), report.string()),
                     compare_log)
                  .status,
              0)
        << Tail(compare_log);
    const json diff = ReadJson(report);
    EXPECT_EQ(diff["keys_a"], diff["keys_b"]);
    for (const json& key : diff["differing_keys"]) {
      EXPECT_NE(std::find(c.may_differ.begin(), c.may_differ.end(), key.get<std::string>()),
                c.may_differ.end())
          << "metadata key " << key << " differs from llama.cpp's";
    }
    EXPECT_EQ(diff["tensors_a"], diff["tensors_b"]);
    EXPECT_EQ(diff["differing_tensors"], json::array());
  }

  // The keys allowed to differ do their job: llama.cpp tokenizes proctor's file as Hugging Face
  // tokenizes the checkpoint's tokenizer.json.
  const fs::path ours_f32 = tmp.path() / "proctor-f32.gguf";
  const fs::path tokens = tmp.path() / "tokenize.json";
  const fs::path tokenize_log = tmp.path() / "tokenize.log";
  ASSERT_EQ(
      Logged(fmt::format("{} {} tokenize {} {} {} {}/testdata/tokenizer/hard_inputs.json {}",
                         python, check, llama_cpp.Path("llama_cpp_tokenize"), ours_f32.string(),
                         (dir / "tokenizer.json").string(), PROCTOR_SOURCE_DIR, tokens.string()),
             tokenize_log)
          .status,
      0)
      << Tail(tokenize_log);
  const json tokenized = ReadJson(tokens);
  EXPECT_GT(tokenized["inputs"].get<int>(), 50);
  EXPECT_EQ(tokenized["mismatches"], json::array());

  // On a golden, llama.cpp's logits on proctor's f32 file are transformers'.
  if (!c.golden.empty()) {
    const fs::path golden = Fixtures() / "hf-goldens" / c.golden;
    const std::vector<int> prompt = ReadJson(golden / "tokens.json")["prompt"];
    const fs::path logits = tmp.path() / "llama-cpp.logits.f32";
    const fs::path log = tmp.path() / "logits.log";
    ASSERT_EQ(Logged(fmt::format("{} {} {} {} {} 1", llama_cpp.Path("llama_cpp_logits"),
                                 llama_cpp.Path("llama_cpp_lib"), ours_f32.string(),
                                 fmt::join(prompt, ","), logits.string()),
                     log)
                  .status,
              0)
        << Tail(log);
    const std::vector<float> got = ReadF32(logits), want = ReadF32(golden / "logits.f32");
    ASSERT_EQ(got.size(), want.size());
    float max_diff = 0.0f;
    for (size_t i = 0; i < got.size(); ++i)
      max_diff = std::max(max_diff, std::abs(got[i] - want[i]));
    std::printf("[ distance ] %s: llama.cpp on proctor's GGUF vs transformers: max |diff| %.3g\n",
                c.golden.c_str(), max_diff);
    EXPECT_LE(max_diff, 1e-4f);
  }
}

INSTANTIATE_TEST_SUITE_P(Sources, QuantizeGgufFromHf,
                         ::testing::Values(Case{"GoldenLlamaF32",
                                                "llama-f32",
                                                "",
                                                0,
                                                {"f32", "f16", "q8_0", "q4_k_m", "q6_k"},
                                                {"tokenizer.ggml.scores"}},
                                           Case{"GoldenLlamaBf16TiedRopeLlama3",
                                                "llama-bf16-tied-rope-llama3",
                                                "",
                                                0,
                                                {"f32", "bf16", "q4_0", "q5_k_m"},
                                                {"tokenizer.ggml.scores"}},
                                           Case{"RandomLlamaLlama3Tokenizer",
                                                "",
                                                "llama3",
                                                128256,
                                                {"f32", "q8_0", "q4_k_m"},
                                                {"tokenizer.ggml.pre"}},
                                           Case{"RandomLlamaLlama2Tokenizer",
                                                "",
                                                "llama2",
                                                32000,
                                                {"f32", "q4_k_s"},
                                                {"tokenizer.ggml.scores"}}),
                         [](const ::testing::TestParamInfo<Case>& case_info) {
                           return case_info.param.name;
                         });

}  // namespace
}  // namespace proctor::cli_test
