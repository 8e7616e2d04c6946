// End-to-end tests of `proctor quantize` (the built executable, PROCTOR_BIN): the summary and
// --json of a real model, and clear errors for bad input. The written files themselves are
// checked by model/mlx_export_test.cc (numpy oracle).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <random>

#include "cli_test_support.h"  // same folder: cli_test has no src/ include path

namespace proctor::cli_test {
namespace {

namespace fs = std::filesystem;

TEST(QuantizeVerb, Stories260kSaysWhichTensorsStayUnquantizedAndWritesJson) {
  const fs::path gguf = Fixtures() / "stories260K" / "stories260K.gguf";
  if (!fs::exists(gguf)) GTEST_SKIP() << "fixture absent: " << gguf;
  TempDir tmp;
  const fs::path out = tmp.path() / "s4";
  const fs::path json_path = tmp.path() / "summary.json";
  const Result r = Proctor(fmt::format("quantize {} --out {} --bits 4 --group-size 32 --json {}",
                                       gguf.string(), out.string(), json_path.string()));
  ASSERT_EQ(r.status, 0) << r.out;
  for (int layer = 0; layer < 5; ++layer) {
    EXPECT_TRUE(Contains(r.out, fmt::format("kept model.layers.{}.mlp.down_proj.weight: input "
                                            "width 172 is not a multiple of the group size 32",
                                            layer)))
        << r.out;
  }
  EXPECT_TRUE(Contains(r.out, "quantized 31 tensors")) << r.out;
  EXPECT_TRUE(Contains(r.out, "bits per weight")) << r.out;
  const nlohmann::json j = nlohmann::json::parse(std::ifstream(json_path));
  EXPECT_EQ(j["tensors_quantized"], 31);
  EXPECT_EQ(j["tensors_kept"], 16);  // 5 down projections, 10 layer norms, the final norm
  EXPECT_EQ(j["bits"], 4);
  EXPECT_EQ(j["group_size"], 32);
  EXPECT_EQ(j["mode"], "affine");
  // The output size is the sum of the files written; bpw = 8 * tensor bytes / parameters.
  uint64_t files = 0;
  for (const auto& entry : fs::directory_iterator(out)) files += entry.file_size();
  EXPECT_EQ(j["output_bytes"].get<uint64_t>(), files);
  EXPECT_DOUBLE_EQ(j["bits_per_weight"].get<double>(),
                   8.0 * j["tensor_bytes"].get<double>() / j["total_parameters"].get<double>());
  // Quantized tensors at 4 bits, group 32, f32 scales and biases: 4 + 2 * 32 / 32 = 6 bits.
  EXPECT_DOUBLE_EQ(j["quantized_bits_per_weight"].get<double>(), 6.0);
  // 512 x 64 embedding + 5 x (q 64x64 + k, v 32x64 + o 64x64 + 3 x 172x64 + 2 norms) + norm.
  EXPECT_EQ(j["total_parameters"], 32768 + 5 * (4096 + 2 * 2048 + 4096 + 3 * 11008 + 128) + 64);
}

TEST(QuantizeVerb, SameBytesForAnyThreadCountAndUnmatchedSkipIsNoted) {
  const fs::path src = Fixtures() / "hf-goldens" / "qwen3-bf16";
  if (!fs::exists(src)) GTEST_SKIP() << "fixture absent: " << src;
  TempDir tmp;
  std::vector<std::string> files;
  for (int threads : {1, 2, 3}) {
    const fs::path out = tmp.path() / fmt::format("t{}", threads);
    const Result r = Proctor(fmt::format("-t {} quantize {} --out {} --bits 3 --skip 'nothing.*'",
                                         threads, src.string(), out.string()));
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_TRUE(Contains(r.out, "note: --skip nothing.* matched no quantizable module")) << r.out;
    std::ifstream in(out / "model.safetensors", std::ios::binary);
    files.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  EXPECT_GT(files[0].size(), 0u);
  EXPECT_EQ(files[0], files[1]);
  EXPECT_EQ(files[0], files[2]);
}

TEST(QuantizeVerb, BadInputIsAClearError) {
  const fs::path src = Fixtures() / "hf-goldens" / "llama-f32";
  if (!fs::exists(src)) GTEST_SKIP() << "fixture absent: " << src;
  TempDir tmp;
  const std::string out = (tmp.path() / "q").string();
  struct Case {
    std::string flags;
    std::vector<std::string> expected;
  };
  const std::vector<Case> cases = {
      {"--recipe mixed_9_9", {"unknown recipe \"mixed_9_9\"", "mixed_2_6"}},
      {"--mode int4", {"unknown --mode \"int4\"", "affine, mxfp4"}},
      {"--bits 7", {"bits", "7"}},
      {"--group-size 48", {"48"}},
      {"--mode mxfp4 --group-size 64", {"mxfp4", "64"}},
      {"--recipe mixed_3_6 --mode nvfp4", {"mixed_3_6", "affine"}},
      {"--recipe mixed_3_6 --bits 4", {"--bits 4 contradicts recipe mixed_3_6"}},
  };
  for (const Case& c : cases) {
    const Result r = Proctor(fmt::format("quantize {} --out {} {}", src.string(), out, c.flags));
    EXPECT_EQ(r.status, 1) << c.flags << "\n" << r.out;
    for (const std::string& part : c.expected) {
      EXPECT_TRUE(Contains(r.out, part)) << c.flags << ": missing " << part << " in\n" << r.out;
    }
    EXPECT_FALSE(fs::exists(out)) << c.flags;
  }
  // A complete run, then: the same --out again, and the quantized output as a source.
  ASSERT_EQ(Proctor(fmt::format("quantize {} --out {}", src.string(), out)).status, 0);
  Result r = Proctor(fmt::format("quantize {} --out {}", src.string(), out));
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(Contains(r.out, "exists and is not empty")) << r.out;
  const std::string again = (tmp.path() / "q2").string();
  r = Proctor(fmt::format("quantize {} --out {}", out, again));
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(Contains(r.out, "already quantized")) << r.out;
  EXPECT_FALSE(fs::exists(again));
  r = Proctor(fmt::format("quantize {} --out {}", (tmp.path() / "missing").string(), again));
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(Contains(r.out, "missing")) << r.out;
}

}  // namespace
}  // namespace proctor::cli_test

namespace proctor::cli_test {
namespace {

// --type: a GGUF of llama.cpp's file type (the file itself against llama-quantize:
// model/gguf_quantize_oracle_test.cc). It carries the tokenizer, so `generate --prompt` runs on
// it and writes the same story as on the f32 source for a near-lossless type; --json lists
// every tensor.
TEST(QuantizeVerb, GgufOutputCarriesTheTokenizerAndRuns) {
  const fs::path src = Fixtures() / "stories260K" / "stories260K.gguf";
  if (!fs::exists(src)) GTEST_SKIP() << "fixture absent: " << src;
  TempDir tmp;
  const fs::path out = tmp.path() / "s-q8_0.gguf", json_path = tmp.path() / "q.json";
  Result r = Proctor(fmt::format("quantize {} --out {} --type q8_0 --json {}", src.string(),
                                 out.string(), json_path.string()));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "general.file_type 7")) << r.out;
  EXPECT_TRUE(Contains(r.out, "q8_0")) << r.out;
  std::ifstream in(json_path);
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["type"], "q8_0");
  EXPECT_EQ(j["format"], "gguf");
  EXPECT_EQ(j["tensors"].size(), 48u);
  EXPECT_EQ(j["file_bytes"].get<uint64_t>(), fs::file_size(out));
  r = Proctor("inspect " + out.string());
  EXPECT_TRUE(Contains(r.out, "file type        q8_0 (general.file_type")) << r.out;

  const std::string generate = " --prompt \"Once upon a time\" -n 24";
  const Result from_f32 = Proctor("generate " + src.string() + generate);
  const Result from_q8 = Proctor("generate " + out.string() + generate);
  ASSERT_EQ(from_q8.status, 0) << from_q8.out;
  auto story = [](const std::string& text) { return text.substr(0, text.find("generated ")); };
  EXPECT_GT(story(from_q8.out).size(), 40u) << from_q8.out;
  EXPECT_EQ(story(from_q8.out), story(from_f32.out));
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(QuantizeVerb, GgufOutputBadInputIsAClearError) {
  const fs::path src = Fixtures() / "stories260K" / "stories260K.gguf";
  const fs::path hf = Fixtures() / "hf-goldens" / "llama-f32";
  const fs::path qwen = Fixtures() / "hf-goldens" / "qwen3-f32";
  if (!fs::exists(src) || !fs::exists(hf) || !fs::exists(qwen)) GTEST_SKIP() << "fixtures absent";
  TempDir tmp;
  const std::string out = (tmp.path() / "o.gguf").string();
  struct Case {
    std::string args;
    std::vector<std::string> expected;
  };
  const std::vector<Case> cases = {
      {src.string() + " --out " + out + " --type iq4_xs",
       {"unknown --type \"iq4_xs\"", "q4_k_m, q5_k_s"}},
      {src.string() + " --out " + out + " --type q4_0 --bits 4", {"--bits is for MLX output"}},
      {src.string() + " --out " + out + " --type q4_0 --recipe mixed_3_6", {"--recipe"}},
      {src.string() + " --out " + (tmp.path() / "o.bin").string() + " --type q4_0",
       {"must end in .gguf"}},
      {src.string() + " --out " + out, {"names a GGUF file", "--type"}},
      {src.string() + " --out " + (tmp.path() / "dir").string() + " --pure", {"--pure needs"}},
      // A Llama checkpoint without tokenizer files: a GGUF carries its vocabulary.
      {hf.string() + " --out " + out + " --type q4_0", {"no tokenizer.json", "tokenizer_config"}},
      // An architecture proctor does not write from safetensors.
      {qwen.string() + " --out " + out + " --type q4_0",
       {"model_type \"qwen3\"", "convert_hf_to_gguf.py"}},
  };
  for (const Case& c : cases) {
    const Result r = Proctor("quantize " + c.args);
    EXPECT_EQ(r.status, 1) << c.args << "\n" << r.out;
    for (const std::string& part : c.expected) {
      EXPECT_TRUE(Contains(r.out, part)) << c.args << ": missing " << part << " in\n" << r.out;
    }
  }
  EXPECT_TRUE(fs::is_empty(tmp.path()));
  // A quantized GGUF is not a source, and an existing --out is not overwritten.
  ASSERT_EQ(Proctor(fmt::format("quantize {} --out {} --type q4_0", src.string(), out)).status, 0);
  const std::string before = ReadFile(out);
  Result r = Proctor(fmt::format("quantize {} --out {} --type q8_0", src.string(), out));
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(Contains(r.out, "already exists")) << r.out;
  EXPECT_EQ(ReadFile(out), before);
  const std::string again = (tmp.path() / "again.gguf").string();
  r = Proctor(fmt::format("quantize {} --out {} --type q8_0", out, again));
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(Contains(r.out, "already quantized (q4_0)")) << r.out;
  EXPECT_FALSE(fs::exists(again));
}

}  // namespace
}  // namespace proctor::cli_test

namespace proctor::cli_test {
namespace {

// An MLX directory made from a GGUF carries the GGUF's tokenizer (tokenizer.json converted from
// its vocabulary): `generate --prompt` on it tells the f32 model's story. Without tokenizer files
// (removed here, as from a model written without them) text verbs say so and suggest
// --tokenizer, and with the source .gguf as --tokenizer they run; a tokenizer with more tokens
// than the model has logits is refused by name.
TEST(QuantizeVerb, AModelWithoutTokenizerTakesTokenizer) {
  const fs::path src = Fixtures() / "stories260K" / "stories260K.gguf";
  const fs::path spm = Fixtures() / "llama.cpp-vocab" / "ggml-vocab-llama-spm.gguf";
  if (!fs::exists(src) || !fs::exists(spm)) GTEST_SKIP() << "fixtures absent";
  TempDir tmp;
  const fs::path dir = tmp.path() / "m8";
  const Result made = Proctor(
      fmt::format("quantize {} --out {} --bits 8 --group-size 32", src.string(), dir.string()));
  ASSERT_EQ(made.status, 0) << made.out;
  EXPECT_TRUE(fs::exists(dir / "tokenizer.json")) << made.out;
  EXPECT_TRUE(fs::exists(dir / "tokenizer_config.json")) << made.out;
  const std::string prompt = " --prompt \"Once upon a time\" -n 16";
  auto story = [](const std::string& text) { return text.substr(0, text.find("generated ")); };
  const Result f32 = Proctor("generate " + src.string() + prompt);
  Result r = Proctor("generate " + dir.string() + prompt);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_GT(story(r.out).size(), 20u) << r.out;
  EXPECT_EQ(story(r.out), story(f32.out));

  fs::remove(dir / "tokenizer.json");
  fs::remove(dir / "tokenizer_config.json");
  r = Proctor("generate " + dir.string() + prompt);
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(Contains(r.out, "has no tokenizer")) << r.out;
  EXPECT_TRUE(Contains(r.out, "pass --tokenizer PATH")) << r.out;
  r = Proctor("generate " + dir.string() + prompt + " --tokenizer " + src.string());
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(story(r.out), story(f32.out));
  r = Proctor("generate " + dir.string() + prompt + " --tokenizer " + spm.string());
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(Contains(r.out, "has 32000 tokens, but model")) << r.out;
  EXPECT_TRUE(Contains(r.out, "has 512 logits")) << r.out;
  r = Proctor("eval mmlu --endpoint http://127.0.0.1:9 --tokenizer " + src.string());
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(Contains(r.out, "--tokenizer goes with --model")) << r.out;
}

}  // namespace
}  // namespace proctor::cli_test

namespace proctor::cli_test {
namespace {

// One vocabulary of flags: the model is the first argument or --model, for every one-model verb;
// the old spelling of an option works with a note.
TEST(QuantizeVerb, TheModelIsTheFirstArgumentOrModel) {
  const fs::path src = Fixtures() / "stories260K" / "stories260K.gguf";
  const fs::path text = Fixtures() / "tinystories" / "tinystories_sample.txt";
  if (!fs::exists(src) || !fs::exists(text)) GTEST_SKIP() << "fixtures absent";
  TempDir tmp;
  const fs::path a = tmp.path() / "a.gguf", b = tmp.path() / "b.gguf";
  ASSERT_EQ(
      Proctor(fmt::format("quantize {} --out {} --type q8_0", src.string(), a.string())).status, 0);
  ASSERT_EQ(
      Proctor(fmt::format("quantize --model {} --out {} --type q8_0", src.string(), b.string()))
          .status,
      0);
  EXPECT_EQ(ReadFile(a.string()), ReadFile(b.string()));
  for (const char* verb : {"ppl {} --data {} --ctx-len 64 --n-seqs 2",
                           "ppl --model {} --data {} --ctx-len 64 --n-seqs 2"}) {
    const Result r = Proctor(fmt::format(fmt::runtime(verb), src.string(), text.string()));
    EXPECT_EQ(r.status, 0) << verb << "\n" << r.out;
    EXPECT_TRUE(Contains(r.out, "126 positions")) << r.out;
  }
}

}  // namespace
}  // namespace proctor::cli_test
