// End to end: models written by `proctor quantize` run in the engine. Their logits move away
// from the source model's as the bits shrink (8 < 4 < 2 bits; distances printed and recorded in
// docs/quantization.md), and a 4-bit model stays quantized in memory (peak RSS near its file
// size, far below its f32 size).
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

// How far a candidate's logits [T, V] are from the source's.
struct Distance {
  double mean_kl = 0.0;  // mean over positions of KL(source || candidate), nats
  double max_abs = 0.0;  // max |logit difference|
  double rms = 0.0;      // root mean square logit difference
  double top1 = 0.0;     // fraction of positions with the same argmax
};

Distance Compare(const std::vector<float>& src, const std::vector<float>& cand, size_t vocab) {
  Distance d;
  const size_t positions = src.size() / vocab;
  double sq = 0.0;
  for (size_t t = 0; t < positions; ++t) {
    const float* p = src.data() + t * vocab;
    const float* q = cand.data() + t * vocab;
    double pmax = p[0], qmax = q[0];
    size_t parg = 0, qarg = 0;
    for (size_t i = 0; i < vocab; ++i) {
      if (p[i] > pmax) pmax = p[i], parg = i;
      if (q[i] > qmax) qmax = q[i], qarg = i;
      const double diff = static_cast<double>(p[i]) - q[i];
      d.max_abs = std::max(d.max_abs, std::fabs(diff));
      sq += diff * diff;
    }
    double psum = 0.0, qsum = 0.0;
    for (size_t i = 0; i < vocab; ++i) {
      psum += std::exp(p[i] - pmax);
      qsum += std::exp(q[i] - qmax);
    }
    const double plse = pmax + std::log(psum), qlse = qmax + std::log(qsum);
    double kl = 0.0;
    for (size_t i = 0; i < vocab; ++i) {
      const double lp = p[i] - plse, lq = q[i] - qlse;
      kl += std::exp(lp) * (lp - lq);
    }
    d.mean_kl += kl / static_cast<double>(positions);
    d.top1 += (parg == qarg) / static_cast<double>(positions);
  }
  d.rms = std::sqrt(sq / static_cast<double>(src.size()));
  return d;
}

// Quantizes `source` at each bit width, runs `proctor logits` on the source and on each result
// over `prompt`, and returns the distances (index = position in `bits`).
std::vector<Distance> DistancesByBits(const fs::path& source, const std::string& prompt,
                                      const std::vector<int>& bits, int group,
                                      const std::string& label, std::string* quantize_output) {
  TempDir tmp;
  const fs::path src_logits = tmp.path() / "source.f32";
  const Result base = Proctor(fmt::format("logits {} --prompt-ids {} --out {}", source.string(),
                                          prompt, src_logits.string()));
  EXPECT_EQ(base.status, 0) << base.out;
  if (base.status != 0) return {};
  const std::vector<float> reference = ReadF32(src_logits);
  const size_t tokens = static_cast<size_t>(std::count(prompt.begin(), prompt.end(), ',') + 1);
  const size_t vocab = reference.size() / tokens;
  std::vector<Distance> out;
  for (int b : bits) {
    const fs::path dir = tmp.path() / fmt::format("q{}", b);
    const Result q = Proctor(fmt::format("quantize {} --out {} --bits {} --group-size {}",
                                         source.string(), dir.string(), b, group));
    EXPECT_EQ(q.status, 0) << q.out;
    if (quantize_output != nullptr) *quantize_output += q.out;
    const fs::path logits = tmp.path() / fmt::format("q{}.f32", b);
    const Result r = Proctor(
        fmt::format("logits {} --prompt-ids {} --out {}", dir.string(), prompt, logits.string()));
    EXPECT_EQ(r.status, 0) << r.out;
    if (q.status != 0 || r.status != 0) return {};
    const Distance d = Compare(reference, ReadF32(logits), vocab);
    std::printf("%-30s %d-bit g%d: mean KL %.3e  max|dlogit| %.3e  rms %.3e  top-1 %.3f\n",
                label.c_str(), b, group, d.mean_kl, d.max_abs, d.rms, d.top1);
    out.push_back(d);
  }
  std::fflush(stdout);
  return out;
}

std::string PromptOf(const fs::path& golden) {
  const nlohmann::json tokens = nlohmann::json::parse(std::ifstream(golden / "tokens.json"));
  return fmt::format("{}", fmt::join(tokens["prompt"].get<std::vector<int>>(), ","));
}

TEST(QuantizeLogits, HfGoldensMoveAwayAsBitsShrink) {
  const fs::path goldens = Fixtures() / "hf-goldens";
  if (!fs::exists(goldens)) GTEST_SKIP() << "fixture absent: " << goldens;
  for (const char* name :
       {"llama-f32", "qwen2-f32-bias", "qwen3-f32", "qwen3-bf16", "llama-bf16-tied-rope-llama3"}) {
    SCOPED_TRACE(name);
    const std::vector<Distance> d =
        DistancesByBits(goldens / name, PromptOf(goldens / name), {8, 4, 2}, 64, name, nullptr);
    ASSERT_EQ(d.size(), 3u);
    EXPECT_LT(d[0].mean_kl, d[1].mean_kl);
    EXPECT_LT(d[1].mean_kl, d[2].mean_kl);
    EXPECT_LT(d[0].rms, d[1].rms);
    EXPECT_LT(d[1].rms, d[2].rms);
    // 8 bits is close: measured mean KL <= 1.6e-4 and top-1 >= 0.95 (docs/quantization.md).
    EXPECT_LT(d[0].mean_kl, 1e-3);
    EXPECT_GE(d[0].top1, 0.9);
  }
}

TEST(QuantizeLogits, Stories260kRequantizedAtGroup32) {
  const fs::path gguf = Fixtures() / "stories260K" / "stories260K.gguf";
  if (!fs::exists(gguf)) GTEST_SKIP() << "fixture absent: " << gguf;
  // The prompt: BOS and the source model's own greedy story (real text for this model).
  const Result story = RunShell(fmt::format(
      "{} -q generate {} --max-tokens 63 --ignore-eos 2>/dev/null", PROCTOR_BIN, gguf.string()));
  ASSERT_EQ(story.status, 0) << story.out;
  std::string ids = story.out.substr(0, story.out.find('\n'));
  const std::string prompt = "1," + ids;
  std::string messages;
  const std::vector<Distance> d =
      DistancesByBits(gguf, prompt, {8, 4, 2}, 32, "stories260K", &messages);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_NE(messages.find("kept model.layers.0.mlp.down_proj.weight: input width 172 is not a "
                          "multiple of the group size 32"),
            std::string::npos)
      << messages;
  EXPECT_LT(d[0].mean_kl, d[1].mean_kl);
  EXPECT_LT(d[1].mean_kl, d[2].mean_kl);
  EXPECT_LT(d[0].rms, d[1].rms);
  EXPECT_LT(d[1].rms, d[2].rms);
  EXPECT_LT(d[0].mean_kl, 1e-3);
  EXPECT_GE(d[0].top1, 0.9);
}

// Peak RSS of `proctor bench` (VmHWM) on a model directory.
int64_t PeakRss(const fs::path& model) {
  const Result r =
      RunShell(fmt::format("{} -q -t 1 bench {} --prompt-tokens 8 --decode-tokens 4 "
                           "2>/dev/null",
                           PROCTOR_BIN, model.string()));
  EXPECT_EQ(r.status, 0) << r.out;
  if (r.status != 0) return -1;
  return nlohmann::json::parse(r.out)["peak_rss_bytes"].get<int64_t>();
}

uint64_t DirectoryBytes(const fs::path& dir) {
  uint64_t total = 0;
  for (const auto& entry : fs::directory_iterator(dir)) total += entry.file_size();
  return total;
}

TEST(QuantizeLogits, FourBitModelStaysQuantizedInMemory) {
  if (std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "/usr/bin/python3 with numpy unavailable";
  }
  TempDir tmp;
  // 57M parameters: bf16 114 MB, f32 229 MB, 4-bit g64 32 MB.
  const fs::path source = tmp.path() / "bf16";
  ASSERT_EQ(std::system(fmt::format("/usr/bin/python3 {}/tools/write_random_llama.py {} "
                                    "--hidden 1024 --layers 2 --ff 2816 --vocab 16384",
                                    PROCTOR_SOURCE_DIR, source.string())
                            .c_str()),
            0);
  const fs::path q4 = tmp.path() / "q4";
  const Result q =
      Proctor(fmt::format("quantize {} --out {} --bits 4", source.string(), q4.string()));
  ASSERT_EQ(q.status, 0) << q.out;
  const uint64_t file_bytes = DirectoryBytes(q4);
  const int64_t rss = PeakRss(q4);
  const int64_t source_rss = PeakRss(source);
  const uint64_t f32_bytes = 2 * DirectoryBytes(source);
  std::printf(
      "4-bit model: files %.1f MB, peak RSS %.1f MB; its bf16 source: files %.1f MB, peak "
      "RSS %.1f MB; f32 weights would be %.1f MB\n",
      file_bytes / 1e6, rss / 1e6, DirectoryBytes(source) / 1e6, source_rss / 1e6, f32_bytes / 1e6);
  std::fflush(stdout);
  ASSERT_GT(rss, 0);
  // Loose: the mapped file plus buffers, runtime and allowance; well below an f32 expansion.
  EXPECT_LT(static_cast<uint64_t>(rss), 2 * file_bytes + (48u << 20));
  EXPECT_LT(static_cast<uint64_t>(rss), f32_bytes / 2);
}

}  // namespace
}  // namespace proctor::cli_test
