// The seam with the real engine: a real trained model (stories260K, GGUF) dumped through the
// writer and scored against its own dump by `EvaluateKlVsReferenceLogits` and `proctor kl`.
// Skips when the shared fixture is absent.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <random>

#include <nlohmann/json.hpp>

#include "eval/formats/ref_logits_writer.h"
#include "eval/runners/eval_model.h"
#include "eval/runners/kl_eval.h"
#include "eval/runners/logits_chunks.h"
#include "eval/testing_dumps.h"

namespace proctor {
namespace {

std::filesystem::path Stories260K() {
  const char* env = std::getenv("PROCTOR_FIXTURES");
  const std::filesystem::path base = env != nullptr ? env : PROCTOR_FIXTURES_DEFAULT;
  return base / "stories260K" / "stories260K.gguf";
}

class KlEngine : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(Stories260K())) {
      GTEST_SKIP() << "fixture absent: " << Stories260K();
    }
    std::mt19937 rng(5);
    std::uniform_int_distribution<int32_t> token(3, 511);
    for (int i = 0; i < kSeqs * kCtx; ++i) tokens_.push_back(token(rng));
    // Dump the model's own logits (chunks of 16, as the scorer below uses).
    LogitsChunkDriver driver(
        {{"stories260K", EvalModel::Open(Stories260K().string())->Forward({})}},
        {.chunk_size = 16, .quiet = true});
    ReferenceLogitsWriter writer({.dir = temp_.path(),
                                  .model = "stories260K",
                                  .corpus_sha256 = "test",
                                  .ctx_len = kCtx,
                                  .n_seqs = kSeqs,
                                  .top_k = 64,
                                  .created = "test"},
                                 tokens_);
    for (int64_t s = 0; s < kSeqs; ++s) {
      writer.BeginSequence(s);
      driver.RunSequence(std::span<const int32_t>(tokens_).subspan(s * kCtx, kCtx),
                         writer.positions(), "stories260K", [&](const LogitsChunk& chunk) {
                           for (int64_t r = 0; r < chunk.scored; ++r) {
                             writer.AppendLogitsRow(
                                 std::span<const float>(chunk[0].RowAs<float>(r), chunk[0].cols));
                           }
                         });
      writer.EndSequence();
    }
    writer.Finish();
  }
  static constexpr int kSeqs = 2;
  static constexpr int kCtx = 33;
  std::vector<int32_t> tokens_;
  testing::TempDir temp_;
};

TEST_F(KlEngine, SelfScoreAtTheDumpsChunkSizeIsTheFp16Floor) {
  const KlEvalResult r = EvaluateKlVsReferenceLogits({.reference_dir = temp_.path(),
                                                      .candidate = Stories260K().string(),
                                                      .chunk_size = 16,
                                                      .quiet = true});
  EXPECT_EQ(r.stats.positions, kSeqs * (kCtx - 1));
  EXPECT_EQ(r.candidate_vocab, 512);
  EXPECT_EQ(r.stats.top1_agreement, 1.0);
  EXPECT_LT(std::fabs(r.stats.kl.mean), 1e-3);  // fp16 rounding of shifted logits only
  // A proper divergence sees the fp16 rounding (<= 2^-9 for logits within 8 of the top) only
  // to second order.
  EXPECT_LT(r.stats.tail_kl.max, 1e-4);
  EXPECT_GE(r.stats.tail_kl.mean, 0.0);
}

TEST_F(KlEngine, ProctorKlWritesJson) {
  if (!std::filesystem::exists(PROCTOR_BIN)) GTEST_SKIP() << PROCTOR_BIN << " is not built";
  const auto json_path = temp_.path() / "out" / "kl.json";
  std::filesystem::create_directories(json_path.parent_path());
  const std::string command = fmt::format(
      "{} --quiet --threads 2 kl --reference-logits {} --candidate {} --chunk 16 --n-seqs 1 "
      "--json {} > {} 2>&1",
      PROCTOR_BIN, temp_.path().string(), Stories260K().string(), json_path.string(),
      (temp_.path() / "out" / "stdout.txt").string());
  ASSERT_EQ(std::system(command.c_str()), 0)
      << testing::ReadBytes(temp_.path() / "out" / "stdout.txt");
  const auto envelope = nlohmann::json::parse(testing::ReadBytes(json_path));
  EXPECT_EQ(envelope["threads"], 2);
  const auto& j = envelope["results"];
  EXPECT_EQ(j["label"], fmt::format("ref-logits:stories260K top64 ({})", temp_.path().string()));
  EXPECT_EQ(j["positions"], kCtx - 1);
  EXPECT_EQ(j["threads"], 2);
  EXPECT_EQ(j["top1_agreement"], 1.0);
  const std::string table = testing::ReadBytes(temp_.path() / "out" / "stdout.txt");
  EXPECT_NE(table.find("KL mean +- SE"), std::string::npos) << table;
}

}  // namespace
}  // namespace proctor
