// End-to-end tests of `proctor generate`, `proctor logits` and `proctor bench` (the built
// executable, PROCTOR_BIN): outputs against Hugging Face's goldens, JSON fields, and errors.
#include <cpuid.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "cli_test_support.h"  // same folder: cli_test has no src/ include path

namespace proctor::cli_test {
namespace {

namespace fs = std::filesystem;

nlohmann::json Tokens(const fs::path& dir) {
  std::ifstream in(dir / "tokens.json");
  return nlohmann::json::parse(in);
}

TEST(LogitsVerb, WritesHuggingFaceLogitsForAnyChunk) {
  const fs::path dir = Fixtures() / "hf-goldens" / "llama-f32";
  if (!fs::exists(dir)) GTEST_SKIP() << "fixture absent: " << dir;
  const auto prompt = Tokens(dir)["prompt"].get<std::vector<int>>();
  const std::vector<float> expected = ReadF32(dir / "logits.f32");
  for (const int chunk : {512, 7}) {
    const fs::path out = TempPath("logits.f32");
    const Result r =
        Proctor(fmt::format("logits {} --prompt-ids {} --out {} --chunk {}", dir.string(),
                            fmt::join(prompt, ","), out.string(), chunk));
    ASSERT_EQ(r.status, 0) << r.out;
    const std::vector<float> got = ReadF32(out);
    fs::remove(out);
    ASSERT_EQ(got.size(), expected.size());
    float max_diff = 0.0f;
    for (size_t i = 0; i < got.size(); ++i)
      max_diff = std::max(max_diff, std::abs(got[i] - expected[i]));
    EXPECT_LE(max_diff, 1e-4f) << "chunk " << chunk;
  }
}

TEST(GenerateVerb, PrintsTheGreedyContinuation) {
  const fs::path dir = Fixtures() / "hf-goldens" / "qwen3-bf16";
  if (!fs::exists(dir)) GTEST_SKIP() << "fixture absent: " << dir;
  const auto tokens = Tokens(dir);
  const auto prompt = tokens["prompt"].get<std::vector<int>>();
  const auto greedy = tokens["greedy"].get<std::vector<int>>();
  const Result r = Proctor(fmt::format("generate {} --prompt-ids {} --max-tokens 12 --kv f32",
                                       dir.string(), fmt::join(prompt, ",")));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out, fmt::format("{}\n", fmt::join(greedy.begin(), greedy.begin() + 12, ",")));
}

// The saved-teacher loop on `model`: a corpus of 4 sequences of ctx_len tokens (the tokenizer's
// vocabulary must fit the model's), a top-64 dump of the model, then `kl` against that dump of the
// model itself and of its 4-bit MLX quantization (`proctor quantize`); the two results objects.
struct SavedTeacherRun {
  nlohmann::json self, q4;
};
SavedTeacherRun SelfAndQuantizedKl(const fs::path& model, const fs::path& tokenizer,
                                   const fs::path& text, int ctx_len) {
  TempDir tmp;
  const fs::path corpus = tmp.path() / "corpus", dump = tmp.path() / "dump";
  const fs::path quantized = tmp.path() / "q4";
  Result r = Proctor(fmt::format("corpus {} --tokenizer {} --out {} --ctx-len {} --n-seqs 4",
                                 text.string(), tokenizer.string(), corpus.string(), ctx_len));
  EXPECT_EQ(r.status, 0) << r.out;
  r = Proctor(fmt::format("dump --teacher {} --corpus {} --out {} --top-k 64", model.string(),
                          corpus.string(), dump.string()));
  EXPECT_EQ(r.status, 0) << r.out;
  r = Proctor(fmt::format("quantize {} --out {} --bits 4 --group-size 32", model.string(),
                          quantized.string()));
  EXPECT_EQ(r.status, 0) << r.out;
  const auto kl = [&](const fs::path& candidate) {
    const fs::path out = tmp.path() / "kl.json";
    const Result k = Proctor(fmt::format("kl --reference-logits {} --model {} --json {}",
                                         dump.string(), candidate.string(), out.string()));
    EXPECT_EQ(k.status, 0) << k.out;
    if (k.status != 0) return nlohmann::json{{"kl", {{"mean", -1.0}}}, {"top1_agreement", -1.0}};
    std::ifstream in(out);
    return nlohmann::json::parse(in)["results"];
  };
  return {kl(model), kl(quantized)};
}

// The saved-teacher loop on Gemma: a corpus (stories260K's 512-token vocabulary, which the
// Gemma goldens share in size), a top-64 dump of gemma3-f32, `kl` of the model against its own
// dump (the floor: |KL| below 1e-5, top-1 1), of its 4-bit MLX quantization (clearly above the
// floor, top-1 below 1), and `generate` on both Gemma goldens giving transformers' greedy tokens.
TEST(GemmaEndToEnd, DumpKlAndGenerate) {
  const fs::path gemma3 = Fixtures() / "hf-goldens" / "gemma3-f32";
  const fs::path gemma2 = Fixtures() / "hf-goldens" / "gemma2-f32";
  const fs::path tokenizer = Fixtures() / "stories260K" / "stories260K.gguf";
  const fs::path text = Fixtures() / "tinystories" / "tinystories_sample.txt";
  for (const fs::path& p : {gemma3, gemma2, tokenizer, text}) {
    if (!fs::exists(p)) GTEST_SKIP() << "fixture absent: " << p;
  }
  for (const fs::path& dir : {gemma2, gemma3}) {
    const auto tokens = Tokens(dir);
    const auto prompt = tokens["prompt"].get<std::vector<int>>();
    const auto greedy = tokens["greedy"].get<std::vector<int>>();
    const Result r = Proctor(fmt::format("generate {} --prompt-ids {} --max-tokens 16",
                                         dir.string(), fmt::join(prompt, ",")));
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(r.out, fmt::format("{}\n", fmt::join(greedy.begin(), greedy.begin() + 16, ",")))
        << dir;
  }
  const SavedTeacherRun run = SelfAndQuantizedKl(gemma3, tokenizer, text, 128);
  EXPECT_LT(std::abs(run.self["kl"]["mean"].get<double>()), 1e-5) << run.self.dump();
  EXPECT_EQ(run.self["top1_agreement"].get<double>(), 1.0);
  EXPECT_GT(run.q4["kl"]["mean"].get<double>(), 1e-3) << run.q4.dump();
  EXPECT_LT(run.q4["top1_agreement"].get<double>(), 1.0);
}

// The saved-teacher loop on the Qwen3-Next golden (hybrid + mixture of experts): `generate` gives
// transformers' greedy tokens, `kl` of the model against its own top-64 dump is at the floor, and
// its 4-bit MLX quantization (the experts quantized like any matrix) is clearly above it.
TEST(MoeEndToEnd, Qwen3NextDumpKlAndGenerate) {
  const fs::path next = Fixtures() / "hf-goldens" / "qwen3_next-f32";
  const fs::path tokenizer = Fixtures() / "stories260K" / "stories260K.gguf";
  const fs::path text = Fixtures() / "tinystories" / "tinystories_sample.txt";
  for (const fs::path& p : {next, tokenizer, text}) {
    if (!fs::exists(p)) GTEST_SKIP() << "fixture absent: " << p;
  }
  const auto tokens = Tokens(next);
  const auto prompt = tokens["prompt"].get<std::vector<int>>();
  const auto greedy = tokens["greedy"].get<std::vector<int>>();
  Result r = Proctor(fmt::format("generate {} --prompt-ids {} --max-tokens 16", next.string(),
                                 fmt::join(prompt, ",")));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out, fmt::format("{}\n", fmt::join(greedy.begin(), greedy.begin() + 16, ",")));
  const SavedTeacherRun run = SelfAndQuantizedKl(next, tokenizer, text, 64);
  EXPECT_LT(std::abs(run.self["kl"]["mean"].get<double>()), 1e-5) << run.self.dump();
  EXPECT_EQ(run.self["top1_agreement"].get<double>(), 1.0);
  EXPECT_GT(run.q4["kl"]["mean"].get<double>(), 1e-3) << run.q4.dump();
}

TEST(GenerateVerb, StopsAtStopIdsAndExcludesThem) {
  const fs::path gguf = Fixtures() / "stories260K" / "stories260K.gguf";
  if (!fs::exists(gguf)) GTEST_SKIP() << "fixture absent: " << gguf;
  // From BOS, stories260K ends its first story by emitting BOS (id 1), as llama2.c's run.c
  // expects; it never emits its EOS (2) in the first 400 tokens.
  const Result all = Proctor(fmt::format("generate {} --max-tokens 400", gguf.string()));
  ASSERT_EQ(all.status, 0) << all.out;
  const Result stopped =
      Proctor(fmt::format("generate {} --max-tokens 400 --stop-ids 1", gguf.string()));
  ASSERT_EQ(stopped.status, 0) << stopped.out;
  const std::string ids = stopped.out.substr(0, stopped.out.find('\n'));
  EXPECT_EQ(std::count(all.out.begin(), all.out.end(), ','), 399);
  EXPECT_TRUE(all.out.starts_with(ids + ",1,")) << ids;
  EXPECT_EQ(("," + ids + ",").find(",1,"), std::string::npos);
}

// `generate --prompt TEXT` runs on exactly the ids `tokenize` gives for the text: its --ids output
// equals `generate --prompt-ids` on them, and the text it prints is `tokenize --decode` of those
// ids. --chat needs a chat template (stories260K has none) and --ids needs --prompt.
TEST(GenerateVerb, TextPromptIsTheTokenizersIdsAndPrintsTheirText) {
  const fs::path gguf = Fixtures() / "stories260K" / "stories260K.gguf";
  if (!fs::exists(gguf)) GTEST_SKIP() << "fixture absent: " << gguf;
  const auto first_line = [](const std::string& s) { return s.substr(0, s.find('\n')); };
  const Result tokens =
      Proctor(fmt::format("tokenize {} --text \"Once upon a time\" --ids-only", gguf.string()));
  ASSERT_EQ(tokens.status, 0) << tokens.out;
  std::string prompt_ids = first_line(tokens.out);
  std::replace(prompt_ids.begin(), prompt_ids.end(), ' ', ',');
  const Result from_ids =
      Proctor(fmt::format("generate {} --prompt-ids {} -n 20", gguf.string(), prompt_ids));
  const Result ids = Proctor(
      fmt::format("generate --model {} --prompt \"Once upon a time\" -n 20 --ids", gguf.string()));
  const Result text =
      Proctor(fmt::format("generate {} --prompt \"Once upon a time\" -n 20", gguf.string()));
  ASSERT_EQ(ids.status, 0) << ids.out;
  ASSERT_EQ(text.status, 0) << text.out;
  EXPECT_EQ(std::count(ids.out.begin(), ids.out.end(), ','), 19) << ids.out;
  EXPECT_EQ(first_line(ids.out), first_line(from_ids.out));
  const Result decoded =
      Proctor(fmt::format("tokenize {} --decode {}", gguf.string(), first_line(ids.out)));
  ASSERT_EQ(decoded.status, 0) << decoded.out;
  EXPECT_EQ(text.out, decoded.out);
  const Result chat = Proctor(fmt::format("generate {} --prompt hi --chat", gguf.string()));
  EXPECT_EQ(chat.status, 1);
  EXPECT_NE(chat.out.find("no chat template"), std::string::npos) << chat.out;
  EXPECT_NE(Proctor(fmt::format("generate {} --ids", gguf.string())).status, 0);
}

TEST(BenchVerb, SyntheticModelPrintsJson) {
  const Result r = Proctor(
      "-t 1 bench --synthetic tiny --dtype q8_0 --prompt-tokens 20 --decode-tokens 3 "
      "--compute bf16 --kv bf16 --chunk 8");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto json = nlohmann::json::parse(r.out);
  EXPECT_EQ(json["threads"], 1);
  EXPECT_EQ(json["compute"], "bf16");
  EXPECT_EQ(json["kv"], "bf16");
  EXPECT_EQ(json["prefill_tokens"], 20);
  EXPECT_GT(json["prefill_tokens_per_second"].get<double>(), 0.0);
  EXPECT_GT(json["decode_tokens_per_second"].get<double>(), 0.0);
  EXPECT_GT(json["peak_rss_bytes"].get<double>(), 0.0);
}

// A mixture of experts reads only the routed experts: tiny-moe's 2 layers of 8 f32 experts of
// 3 x 64 x 128 floats, 2 per token, by hand.
TEST(BenchVerb, MixtureOfExpertsReadsOnlyTheRoutedExperts) {
  const Result r =
      Proctor("-t 1 bench --synthetic tiny-moe --dtype f32 --prompt-tokens 20 --decode-tokens 5");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto moe = nlohmann::json::parse(r.out).at("moe");
  const int64_t expert = 3 * 64 * 128 * 4;
  EXPECT_EQ(moe["experts"], 8);
  EXPECT_EQ(moe["experts_per_token"], 2);
  EXPECT_EQ(moe["expert_bytes"], 2 * 8 * expert);
  EXPECT_EQ(moe["expert_bytes_per_token"], 2 * 2 * expert);
  EXPECT_EQ(moe["expert_bytes_read_per_decoded_token"].get<double>(), 2 * 2 * expert);
  EXPECT_FALSE(nlohmann::json::parse(Proctor("-t 1 bench --synthetic tiny --prompt-tokens 4 "
                                             "--decode-tokens 1")
                                         .out)
                   .contains("moe"));
}

// --noise-context puts N positions in the cache before the prompt: the cache then holds N +
// prompt + decode positions (tiny's f32 cache: 4 layers x 2 x 64 floats a position), an affine
// cache converts at the default kv-start it reaches only that way, and the total counts toward
// the context.
TEST(BenchVerb, NoiseContextFillsTheCacheBeforeThePrompt) {
  const Result r = Proctor(
      "-t 1 bench --synthetic tiny --dtype f32 --noise-context 5000 --context 5100 "
      "--prompt-tokens 20 --decode-tokens 4 --kv affine:4:g32");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto json = nlohmann::json::parse(r.out);
  EXPECT_EQ(json["noise_positions"], 5000);
  EXPECT_EQ(json["kv_converted"], true);
  EXPECT_EQ(json["kv_cache_bytes"], 5024 * 4 * 2 * (32 + 2 * 8));
  const Result dense = Proctor(
      "-t 1 bench --synthetic tiny --dtype f32 --noise-context 100 --prompt-tokens 20 "
      "--decode-tokens 4");
  ASSERT_EQ(dense.status, 0) << dense.out;
  EXPECT_EQ(nlohmann::json::parse(dense.out)["kv_cache_bytes"], 124 * 4 * 2 * 64 * 4);
  const Result over = Proctor(
      "bench --synthetic tiny --noise-context 5000 --context 5010 --prompt-tokens 20 "
      "--decode-tokens 4");
  EXPECT_EQ(over.status, 1);
  EXPECT_NE(over.out.find("--noise-context 5000 + --prompt-tokens 20 + --decode-tokens 4 = 5024 "
                          "positions exceed the context"),
            std::string::npos)
      << over.out;
}

// The quantized cache's bytes are the storage formula: positions x layers x (codes + f32 scale
// and bias per group) for keys and values, computed here by hand for tiny (4 layers, 2 KV heads
// of 32: kv_dim 64) at 4 bits, group 32: 64 * 4 / 8 = 32 bytes of codes, 2 groups x 8 bytes.
TEST(BenchVerb, QuantizedCacheBytesEqualTheStorageFormula) {
  const Result r = Proctor(
      "-t 1 bench --synthetic tiny --dtype f32 --prompt-tokens 20 --decode-tokens 4 "
      "--kv affine:4:g32 --kv-start 0 --chunk 8");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto json = nlohmann::json::parse(r.out);
  EXPECT_EQ(json["kv"], "affine:4:g32");
  EXPECT_EQ(json["kv_converted"], true);
  EXPECT_EQ(json["kv_bytes_per_token_per_layer"], 2 * (32 + 2 * 8));
  EXPECT_EQ(json["kv_cache_bytes"], 24 * 4 * 2 * (32 + 2 * 8));
  EXPECT_DOUBLE_EQ(json["kv_effective_bits"].get<double>(), 4 + 64.0 / 32);
  const Result dense = Proctor(
      "-t 1 bench --synthetic tiny --dtype f32 --prompt-tokens 20 --decode-tokens 4 --kv f16");
  ASSERT_EQ(dense.status, 0) << dense.out;
  EXPECT_EQ(nlohmann::json::parse(dense.out)["kv_cache_bytes"], 24 * 4 * 2 * 64 * 2);
  // Not reached: the default kv-start (5000) keeps the cache in f32.
  const Result early = Proctor(
      "-t 1 bench --synthetic tiny --dtype f32 --prompt-tokens 20 --decode-tokens 4 "
      "--kv affine:4:g32");
  ASSERT_EQ(early.status, 0) << early.out;
  EXPECT_EQ(nlohmann::json::parse(early.out)["kv_converted"], false);
  EXPECT_EQ(nlohmann::json::parse(early.out)["kv_cache_bytes"], 24 * 4 * 2 * 64 * 4);
}

// llama.cpp's --cache-type-k / -v: by hand, tiny's kv_dim 64 is 2 blocks: q8_0 keys 2 x 34
// bytes, q4_0 values 2 x 18, per position and layer.
TEST(BenchVerb, KeysAndValuesTypedApartAsLlamaCpp) {
  const Result r = Proctor(
      "-t 1 bench --synthetic tiny --dtype f32 --prompt-tokens 20 --decode-tokens 4 "
      "--kv-k q8_0 --kv-v q4_0");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto json = nlohmann::json::parse(r.out);
  EXPECT_EQ(json["kv"], "ggml:q8_0/q4_0");
  EXPECT_EQ(json["kv_bytes_per_token_per_layer"], 2 * 34 + 2 * 18);
  EXPECT_EQ(json["kv_cache_bytes"], 24 * 4 * (2 * 34 + 2 * 18));
  const Result bad = Proctor(
      "bench --synthetic tiny --prompt-tokens 4 --decode-tokens 1 --kv affine:4:g32 --kv-k q8_0");
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.out.find("affine"), std::string::npos) << bad.out;
}

// PROCTOR_CPU_CAP=avx2 runs the AVX2 kernels (and Highway's AVX2 target) on any bigger CPU:
// bench names them, and the logits of every decode step (chunk 1: matrix-vector products) are
// those of the uncapped run up to f32 summation order.
TEST(CpuCap, Avx2CapRunsTheAvx2KernelsWithTheSameLogits) {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;  // F16C: CPUID.1:ECX bit 29
  const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") || !f16c) {
    GTEST_SKIP() << "CPU lacks AVX2, FMA and F16C";
  }
  const std::string capped = "PROCTOR_CPU_CAP=avx2";
  const Result bench = RunShell(fmt::format(
      "{} {} -q -t 1 bench --synthetic tiny --dtype q4_0 --prompt-tokens 8 --decode-tokens 2 2>&1",
      capped, PROCTOR_BIN));
  ASSERT_EQ(bench.status, 0) << bench.out;
  const auto json = nlohmann::json::parse(bench.out);
  EXPECT_EQ(json["cpu_cap"], "avx2");
  EXPECT_EQ(json["decode_kernels"]["q4_0"], "gguf-matvec-avx2") << json.dump(1);
  EXPECT_EQ(json["bf16_kernel"], "f32-fallback");
  for (const auto& [type, kernel] : json["prefill_kernels"].items()) {
    EXPECT_EQ(kernel.get<std::string>().find("amx"), std::string::npos) << type;
  }

  const std::string logits_args =
      "-t 2 logits synthetic:tiny:q4_0 --prompt-ids 1,5,9,200,3,77,41,8 --chunk 1 --out";
  const fs::path plain_out = TempPath("plain.f32"), capped_out = TempPath("capped.f32");
  const Result plain = Proctor(fmt::format("{} {}", logits_args, plain_out.string()));
  ASSERT_EQ(plain.status, 0) << plain.out;
  const Result cap = RunShell(
      fmt::format("{} {} -q {} {} 2>&1", capped, PROCTOR_BIN, logits_args, capped_out.string()));
  ASSERT_EQ(cap.status, 0) << cap.out;
  const std::vector<float> a = ReadF32(plain_out), b = ReadF32(capped_out);
  fs::remove(plain_out);
  fs::remove(capped_out);
  ASSERT_EQ(a.size(), b.size());
  ASSERT_FALSE(a.empty());
  float max_diff = 0.0f, max_abs = 0.0f;
  for (size_t i = 0; i < a.size(); ++i) {
    max_diff = std::max(max_diff, std::abs(a[i] - b[i]));
    max_abs = std::max(max_abs, std::abs(a[i]));
  }
  EXPECT_LE(max_diff, 1e-5f * max_abs + 1e-6f);

  const Result bad = RunShell(fmt::format(
      "PROCTOR_CPU_CAP=sse2 {} -q bench --synthetic tiny --prompt-tokens 4 2>&1", PROCTOR_BIN));
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.out.find("PROCTOR_CPU_CAP='sse2' is not a cap"), std::string::npos) << bad.out;
}

// --compute q8 (8-bit activations before products with GGUF block weights): bench names the
// integer kernel for decode; decode-shaped logits (chunk 1, the integer kernel) equal the
// teacher-forced ones bit for bit (chunk 8: the integer prefill kernel, AMX int8 tiles where the
// CPU has them, else AVX2), and differ from f32 mode; `kl --self
// compute=f32:q8` reports what it costs (0 for q8 against itself).
TEST(ComputeQ8, IntegerDecodeMatchesTeacherForcedQ8AndTheSelfAbPricesIt) {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") || !f16c) {
    GTEST_SKIP() << "CPU lacks AVX2, FMA and F16C";
  }
  const Result bench = Proctor(
      "-t 1 bench --synthetic tiny --dtype q4_0 --prompt-tokens 8 --decode-tokens 2 --compute q8");
  ASSERT_EQ(bench.status, 0) << bench.out;
  const auto json = nlohmann::json::parse(bench.out);
  EXPECT_EQ(json["compute"], "q8");
  EXPECT_EQ(json["decode_kernels"]["q4_0"], "gguf-q8-avx2") << json.dump(1);

  const auto logits = [](const std::string& compute, int chunk) {
    const fs::path out = TempPath("q8.f32");
    const Result r = Proctor(fmt::format(
        "-t 2 logits synthetic:tiny:q4_0 --prompt-ids 1,5,9,200,3,77,41,8 --compute {} --chunk {} "
        "--out {}",
        compute, chunk, out.string()));
    EXPECT_EQ(r.status, 0) << r.out;
    std::vector<float> values = ReadF32(out);
    fs::remove(out);
    return values;
  };
  const auto max_diff = [](const std::vector<float>& a, const std::vector<float>& b) {
    float diff = 0.0f;
    for (size_t i = 0; i < a.size(); ++i) diff = std::max(diff, std::abs(a[i] - b[i]));
    return diff;
  };
  const std::vector<float> decode = logits("q8", 1), forced = logits("q8", 8),
                           exact = logits("f32", 1);
  ASSERT_EQ(decode.size(), forced.size());
  ASSERT_EQ(decode.size(), exact.size());
  ASSERT_FALSE(decode.empty());
  float max_abs = 0.0f;
  for (const float v : exact) max_abs = std::max(max_abs, std::abs(v));
  const std::string prefill_kernel = json["prefill_kernels"]["q4_0"];
  EXPECT_TRUE(prefill_kernel == "gguf-q8-gemm-avx2" || prefill_kernel == "amx-q8")
      << prefill_kernel;
  EXPECT_EQ(decode, forced);
  EXPECT_GT(max_diff(decode, exact), 1e-4f * max_abs);

  const fs::path tokenizer = Fixtures() / "stories260K" / "stories260K.gguf";
  const fs::path text = Fixtures() / "tinystories" / "tinystories_sample.txt";
  if (!fs::exists(tokenizer) || !fs::exists(text)) GTEST_SKIP() << "fixtures absent";
  TempDir tmp;
  const std::string corpus = (tmp.path() / "corpus").string();
  ASSERT_EQ(Proctor(fmt::format("corpus --tokenizer {} --out {} --ctx-len 32 --n-seqs 3 {}",
                                tokenizer.string(), corpus, text.string()))
                .status,
            0);
  const auto self_kl = [&](const std::string& ab, const std::string& extra) {
    const fs::path out = tmp.path() / "kl.json";
    const Result r =
        Proctor(fmt::format("-t 2 kl --model synthetic:tiny:q4_0 --self compute={} --corpus {} {} "
                            "--json {}",
                            ab, corpus, extra, out.string()));
    EXPECT_EQ(r.status, 0) << r.out;
    std::ifstream in(out);
    return nlohmann::json::parse(in)["results"]["kl"]["mean"].get<double>();
  };
  EXPECT_EQ(self_kl("q8:q8", ""), 0.0);
  const double forced_kl = self_kl("f32:q8", ""), decode_kl = self_kl("f32:q8", "--decode-steps 4");
  EXPECT_GT(forced_kl, 0.0);
  EXPECT_LT(forced_kl, 1e-2);
  EXPECT_GT(decode_kl, 0.0);
  EXPECT_LT(decode_kl, 1e-2);
}

// kl and kv-curve on the decode path over a prompt file: each row a prompt of its own length,
// counted and reported; the f32 cache scores exactly 0; a prompt scores what a corpus made of
// that row alone (`proctor corpus`, ctx-len its length) scores; kv-curve's rows are kl's runs.
TEST(KlVerb, PromptsFileOnTheDecodePath) {
  const fs::path model = Fixtures() / "stories260K" / "stories260K.gguf";
  const fs::path text = Fixtures() / "tinystories" / "tinystories_sample.txt";
  if (!fs::exists(model) || !fs::exists(text)) GTEST_SKIP() << "fixtures absent";
  TempDir tmp;
  std::vector<std::string> rows;
  {
    std::ifstream in(text);
    for (std::string line; std::getline(in, line) && rows.size() < 4;) {
      if (line.size() > 40) rows.push_back(nlohmann::json{{"text", line}}.dump());
    }
  }
  rows.insert(rows.begin() + 1, nlohmann::json{{"text", "Hi."}}.dump());  // too short for 4 steps
  const fs::path prompts = tmp.path() / "prompts.jsonl";
  {
    std::ofstream out(prompts);
    for (const auto& row : rows) out << row << "\n";
  }
  const auto kl = [&](const std::string& extra, const fs::path& json) {
    const Result r = Proctor(fmt::format("kl --model {} --decode-steps 4 --json {} {}",
                                         model.string(), json.string(), extra));
    EXPECT_EQ(r.status, 0) << r.out;
    std::ifstream in(json);
    return std::make_pair(r.out, nlohmann::json::parse(in));
  };
  const auto [same_out, same] =
      kl(fmt::format("--kv-arm f32 --prompts {} --seq 48", prompts.string()),
         tmp.path() / "same.json");
  EXPECT_EQ(same["results"]["kl"]["mean"].get<double>(), 0.0);
  EXPECT_TRUE(Contains(same_out, "prompts: 4 scored of 5 rows")) << same_out;
  const auto& summary = same["settings"]["prompts"];
  EXPECT_EQ(summary["skipped_short"], 1);
  EXPECT_EQ(summary["min_tokens"], 6);
  EXPECT_EQ(same["settings"]["seq"], 48);
  EXPECT_EQ(same["settings"]["kv_start"], nullptr);
  const auto lengths = summary["lengths"].get<std::vector<int64_t>>();
  ASSERT_EQ(lengths.size(), 4u);
  EXPECT_LE(summary["longest"].get<int64_t>(), 48);
  EXPECT_EQ(same["results"]["positions"], 16);

  const fs::path all_bin = tmp.path() / "all.bin";
  const auto [bf16_out, bf16] =
      kl(fmt::format("--kv-arm bf16 --prompts {} --seq 48 --per-position {}", prompts.string(),
                     all_bin.string()),
         tmp.path() / "bf16.json");
  EXPECT_GT(bf16["results"]["kl"]["mean"].get<double>(), 0.0);
  // The third prompt (file row 4) alone, as a corpus of one sequence of its length.
  const fs::path row_file = tmp.path() / "row.jsonl", corpus = tmp.path() / "corpus";
  std::ofstream(row_file) << rows[3] << "\n";
  const Result made =
      Proctor(fmt::format("corpus {} --tokenizer {} --out {} --ctx-len {} --n-seqs 1",
                          row_file.string(), model.string(), corpus.string(), lengths[2]));
  ASSERT_EQ(made.status, 0) << made.out;
  const fs::path one_bin = tmp.path() / "one.bin";
  kl(fmt::format("--kv-arm bf16 --corpus {} --per-position {}", corpus.string(), one_bin.string()),
     tmp.path() / "one.json");
  const auto bytes = [](const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string all = bytes(all_bin), one = bytes(one_bin);
  constexpr size_t kRecord = 72;  // docs/formats.md, per-position version 2
  ASSERT_EQ(all.size(), 64u + 16 * kRecord);
  ASSERT_EQ(one.size(), 64u + 4 * kRecord);
  for (size_t p = 0; p < 4; ++p) {  // each record but its sequence index (bytes 0-3)
    EXPECT_EQ(all.substr(64 + (2 * 4 + p) * kRecord + 4, kRecord - 4),
              one.substr(64 + p * kRecord + 4, kRecord - 4))
        << p;
  }

  const fs::path curve = tmp.path() / "curve.json";
  const Result r = Proctor(
      fmt::format("kv-curve {} --prompts {} --seq 48 --decode-steps 4 --schemes f32,bf16 --json {}",
                  model.string(), prompts.string(), curve.string()));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "4 prompts of")) << r.out;
  std::ifstream in(curve);
  const nlohmann::json table = nlohmann::json::parse(in);
  EXPECT_EQ(table["settings"]["prompts"]["lengths"].get<std::vector<int64_t>>(), lengths);
  EXPECT_EQ(table["settings"]["prefill"], nullptr);
  EXPECT_EQ(table["results"]["rows"][1]["kl"]["mean"], bf16["results"]["kl"]["mean"]);

  // Prompts are for the decode path, and not with a corpus.
  Result bad = Proctor(
      fmt::format("kl --model {} --kv-arm bf16 --prompts {}", model.string(), prompts.string()));
  EXPECT_EQ(bad.status, 1);
  EXPECT_TRUE(Contains(bad.out, "--prompts needs --decode-steps")) << bad.out;
  bad = Proctor(fmt::format("kl --model {} --kv-arm bf16 --decode-steps 400 --seq 500 --prompts {}",
                            model.string(), prompts.string()));
  EXPECT_EQ(bad.status, 1);
  EXPECT_TRUE(Contains(bad.out, "no prompt has the 402 tokens needed")) << bad.out;
  bad = Proctor(fmt::format("kl --model {} --kv-arm bf16 --decode-steps 4 --prompts {} --corpus {}",
                            model.string(), prompts.string(), corpus.string()));
  EXPECT_NE(bad.status, 0);
  EXPECT_TRUE(Contains(bad.out, "excludes")) << bad.out;
}

TEST(EngineVerbs, BadKvSchemesAreClearErrors) {
  Result r = Proctor("bench --synthetic tiny --prompt-tokens 4 --decode-tokens 1 --kv affine:7");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("affine:7"), std::string::npos) << r.out;
  r = Proctor("bench --synthetic tiny --prompt-tokens 4 --decode-tokens 1 --kv affine:4:g64");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("head_dim 32"), std::string::npos) << r.out;
  r = Proctor("bench --synthetic tiny --prompt-tokens 4 --decode-tokens 1 --kv q4");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("'q4'"), std::string::npos) << r.out;
  r = Proctor("bench --synthetic tiny --prompt-tokens 4 --decode-tokens 1 --kv-start -3");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("--kv-start"), std::string::npos) << r.out;
}

// --kv config reads the model directory's kv_config.json: the logits equal those of the same
// bits given as config:FILE and as the per-layer scheme's name, and differ from a uniform cache.
TEST(EngineVerbs, KvConfigOfTheModelDirectory) {
  const fs::path golden = Fixtures() / "hf-goldens" / "qwen3-f32";  // 2 layers, head_dim 32
  if (!fs::exists(golden / "config.json")) GTEST_SKIP() << "fixture absent: " << golden;
  TempDir tmp;
  const fs::path model = tmp.path() / "model";
  fs::create_directories(model);
  for (const char* name : {"config.json", "model.safetensors"}) {
    fs::create_symlink(golden / name, model / name);
  }
  std::ofstream(model / "kv_config.json") << R"({"bits": [8, 2], "group_size": 32})";
  std::vector<std::vector<float>> logits;
  const std::vector<std::string> schemes = {
      "config", "config:" + (model / "kv_config.json").string(), "affine:8-2:g32", "affine:2:g32"};
  for (const std::string& kv : schemes) {
    const fs::path out = tmp.path() / fmt::format("{}.f32", logits.size());
    const Result r = Proctor(
        fmt::format("logits {} --prompt-ids 5,9,14,3,77,120,8,301,44,2,17,256 --chunk 4 --kv {} "
                    "--kv-start 0 --out {}",
                    model.string(), kv, out.string()));
    ASSERT_EQ(r.status, 0) << kv << ": " << r.out;
    logits.push_back(ReadF32(out));
  }
  EXPECT_EQ(logits[0], logits[1]);
  EXPECT_EQ(logits[0], logits[2]);
  EXPECT_NE(logits[0], logits[3]);  // layer 0 at 8 bits
  Result r = Proctor("bench --synthetic tiny --prompt-tokens 4 --decode-tokens 1 --kv config");
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(Contains(r.out,
                       "--kv config reads the model directory's kv_config.json, and this "
                       "verb names no model directory"))
      << r.out;
  r = Proctor(fmt::format("logits {} --prompt-ids 5,9 --kv config --out {}", golden.string(),
                          (tmp.path() / "x.f32").string()));
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(Contains(r.out, (golden / "kv_config.json").string())) << r.out;
  EXPECT_FALSE(fs::exists(tmp.path() / "x.f32"));
  std::ofstream(model / "kv_config.json") << "[8, 2, 4]";
  r = Proctor(fmt::format("logits {} --prompt-ids 5,9 --kv config --out {}", model.string(),
                          (tmp.path() / "x.f32").string()));
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(Contains(r.out, "3 entries, but the model has 2 layers")) << r.out;
}

TEST(EngineVerbs, BadInputIsAClearError) {
  Result r = Proctor("generate /nonexistent/model --prompt-ids 1");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("/nonexistent/model"), std::string::npos) << r.out;
  r = Proctor("bench --synthetic tiny --prompt-tokens 4 --decode-tokens 1 --dtype q9");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("q9"), std::string::npos) << r.out;
  r = Proctor("bench");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("--synthetic"), std::string::npos) << r.out;
  // An escape sequence in what an error echoes reaches the terminal escaped (#18 class 12).
  r = Proctor("eval \"$(printf 'mmlu,\\033[31mred')\" --endpoint http://127.0.0.1:1");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("unknown task '\\x1b[31mred'"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
  // Unbounded arguments (#18 class 11) are refused before any thread or buffer is made.
  r = Proctor("-t 100000 version");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("--threads 100000 is more than proctor runs: at most 1024"),
            std::string::npos)
      << r.out;
  r = Proctor("bench --synthetic tiny --prompt-tokens 2000000000 --decode-tokens 1");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("2000000001 positions exceed the context of 'synthetic:tiny:bf16' (4096"),
            std::string::npos)
      << r.out;
  // --context times a synthetic model at a longer length; it bounds the run the same way.
  r = Proctor("bench --synthetic tiny --prompt-tokens 4100 --decode-tokens 1 --context 4101");
  EXPECT_EQ(r.status, 0) << r.out;
  r = Proctor("bench --synthetic tiny --prompt-tokens 4100 --decode-tokens 2 --context 4101");
  EXPECT_NE(r.out.find("4102 positions exceed the context of 'synthetic:tiny:bf16' (4101"),
            std::string::npos)
      << r.out;
  const fs::path dir = Fixtures() / "hf-goldens" / "llama-f32";
  if (fs::exists(dir)) {
    r = Proctor(fmt::format("bench {} --prompt-tokens 8 --context 100000", dir.string()));
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("--context 100000 sets a --synthetic model's context"), std::string::npos)
        << r.out;
    r = Proctor(fmt::format("generate {} --prompt-ids 1,x", dir.string()));
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("'x'"), std::string::npos) << r.out;
    r = Proctor(fmt::format("generate {} --prompt-ids 1,999", dir.string()));
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("999"), std::string::npos) << r.out;
    // #18 class 12: generation ends at the model's context (256 positions here) and says so.
    std::string ids = "5";
    for (int i = 1; i < 250; ++i) ids += ",5";
    r = Proctor(fmt::format("generate {} --prompt-ids {} -n 20 --ignore-eos", dir.string(), ids));
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("note: generation stopped at the model's context (256 positions)"),
              std::string::npos)
        << r.out;
  }
  const fs::path next = Fixtures() / "hf-goldens" / "qwen3_next-f32";
  if (fs::exists(next)) {  // an architecture the engine does not run is named
    TempDir tmp;
    std::ifstream in(next / "config.json");
    nlohmann::json config = nlohmann::json::parse(in);
    config["model_type"] = "dbrx";
    std::ofstream(tmp.path() / "config.json") << config.dump();
    fs::create_symlink(next / "model.safetensors", tmp.path() / "model.safetensors");
    r = Proctor(fmt::format("generate {} --prompt-ids 1", tmp.path().string()));
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("\"dbrx\" is not supported"), std::string::npos) << r.out;
  }
}

}  // namespace
}  // namespace proctor::cli_test
