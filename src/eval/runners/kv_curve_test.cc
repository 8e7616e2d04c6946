// `proctor kv-curve` (eval/runners/kv_curve.h) on the qwen3 golden (f32, head_dim 32, vocab 512):
// every row equals the `kl --kv-arm SCHEME --decode-steps S` run of that scheme
// (EvaluateKlTwoModels, itself checked against numpy in kl_e2e_test.cc), f32 against itself scores
// exactly 0, the storage column is the format's size computed here by hand, the default list fits
// head_dim, and the built verb refuses bad schemes before anything runs.
#include "eval/runners/kv_curve.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "eval/formats/corpus.h"
#include "eval/testing_dumps.h"
#include "util/file.h"
#include "util/testing_files.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;

class KvCurve : public ::testing::Test {
 protected:
  static constexpr int kVocab = 512, kSeqs = 3, kCtx = 64, kSteps = 8;
  void SetUp() override {
    golden_ = testing::FixturesDir() / "hf-goldens" / "qwen3-f32";
    if (!fs::exists(golden_ / "config.json")) GTEST_SKIP() << "fixture absent: " << golden_;
    config_ = nlohmann::json::parse(ReadFileToString(golden_ / "config.json"));
    ASSERT_EQ(config_["vocab_size"], kVocab);
    testing::WriteArithmeticCorpus(corpus(), kSeqs, kCtx, kVocab, 4099, 5);
  }
  fs::path corpus() const { return temp_.path() / "corpus"; }
  fs::path golden_;
  nlohmann::json config_;
  testing::TempDir temp_;
};

TEST_F(KvCurve, RowsAreTheKvArmRunsWithTheirStorageSizes) {
  const KvCurveOptions options{.model = golden_.string(),
                               .corpus_dir = corpus(),
                               .schemes = {"f32", "affine:8:g32", "affine:4:g32", "affine:2:g32"},
                               .max_seqs = kSeqs,
                               .decode_steps = kSteps,
                               .chunk_size = 16,
                               .quiet = true};
  const KvCurveResult curve = RunKvCurve(options);
  std::printf("%s", FormatKvCurveTable(curve).c_str());
  ASSERT_EQ(curve.rows.size(), 4u);
  EXPECT_EQ(curve.prefill, kCtx - 1 - kSteps);
  // By hand: kv_dim = 2 KV heads x 32 = 64 elements; affine B bits at g32 stores 64 * B / 8
  // bytes of codes and 2 groups x (4 + 4) bytes of scale and bias, for keys and values.
  const int layers = config_["num_hidden_layers"].get<int>();
  const std::vector<int64_t> expected_bytes = {2 * 64 * 4 * layers, 2 * (64 + 16) * layers,
                                               2 * (32 + 16) * layers, 2 * (16 + 16) * layers};
  for (size_t i = 0; i < curve.rows.size(); ++i) {
    const KvCurveRow& row = curve.rows[i];
    EXPECT_EQ(row.bytes_per_token, expected_bytes[i]) << row.scheme.Name();
    EXPECT_EQ(row.stats.positions, kSeqs * kSteps);
    EXPECT_GT(row.decode_tokens_per_second, 0.0);
    // The same numbers as `kl --kv-arm SCHEME --decode-steps S`.
    RuntimeOptions candidate;
    candidate.kv = row.scheme;
    const KlEvalResult kl = EvaluateKlTwoModels({.reference = golden_.string(),
                                                 .candidate = golden_.string(),
                                                 .corpus_dir = corpus(),
                                                 .max_seqs = kSeqs,
                                                 .chunk_size = 16,
                                                 .decode_steps = kSteps,
                                                 .runtime = candidate,
                                                 .quiet = true});
    EXPECT_EQ(row.stats.kl.mean, kl.stats.kl.mean) << row.scheme.Name();
    EXPECT_EQ(row.stats.kl.p95, kl.stats.kl.p95) << row.scheme.Name();
    EXPECT_EQ(row.stats.top1_agreement, kl.stats.top1_agreement) << row.scheme.Name();
    EXPECT_EQ(row.sequence_mean_kl, kl.sequence_mean_kl) << row.scheme.Name();
    EXPECT_EQ(row.sequence_top1, kl.sequence_top1) << row.scheme.Name();
    EXPECT_EQ(row.sequence_mean_nll, kl.sequence_mean_nll) << row.scheme.Name();
  }
  // The paired column: the f32 cache is its own floor, 2-bit values are worse than 4-bit ones.
  const std::string table = FormatKvCurveTable(curve);
  const auto line = [&](const std::string& scheme) {
    const size_t at = table.find("\n" + scheme + " ");
    return at == std::string::npos ? std::string()
                                   : table.substr(at, table.find('\n', at + 1) - at);
  };
  EXPECT_NE(line("f32").find("at floor"), std::string::npos) << table;
  // affine:2 against affine:4 worked here: the mean and sample standard error (n - 1) of the
  // per-sequence differences.
  const std::vector<double>& a = curve.rows[2].sequence_mean_kl;
  const std::vector<double>& b = curve.rows[3].sequence_mean_kl;
  ASSERT_EQ(a.size(), static_cast<size_t>(kSeqs));
  double mean = 0, squares = 0;
  for (size_t s = 0; s < a.size(); ++s) mean += (b[s] - a[s]) / static_cast<double>(a.size());
  for (size_t s = 0; s < a.size(); ++s) squares += (b[s] - a[s] - mean) * (b[s] - a[s] - mean);
  const double se = std::sqrt(squares / static_cast<double>(a.size() - 1)) /
                    std::sqrt(static_cast<double>(a.size()));
  EXPECT_NE(line("affine:2:g32").find(fmt::format("{:+.2e} +- {:.1e}", mean, se)),
            std::string::npos)
      << table;
  EXPECT_EQ(curve.rows[0].stats.kl.mean, 0.0);
  EXPECT_EQ(curve.rows[0].stats.kl.max, 0.0);
  EXPECT_EQ(curve.rows[0].stats.top1_agreement, 1.0);
  EXPECT_LT(curve.rows[2].stats.kl.mean, curve.rows[3].stats.kl.mean);
  const nlohmann::ordered_json json = KvCurveResultsEnvelope(curve, options).results;
  EXPECT_EQ(json["rows"][2]["kv"], "affine:4:g32");
  EXPECT_EQ(json["rows"][2]["bytes_per_token"], expected_bytes[2]);
  // The JSON pairs each row with the row above as kl-diff does: KL, top-1 and NLL, against
  // the means of the per-sequence differences worked here.
  EXPECT_TRUE(json["rows"][0]["vs_above"].is_null());
  const nlohmann::ordered_json& paired = json["rows"][3]["vs_above"];
  EXPECT_EQ(paired["kv"], "affine:4:g32");
  const auto mean_difference = [](const std::vector<double>& x, const std::vector<double>& y) {
    double sum = 0;
    for (size_t s = 0; s < x.size(); ++s) sum += y[s] - x[s];
    return sum / static_cast<double>(x.size());
  };
  EXPECT_NEAR(paired["metrics"]["kl"]["difference"].get<double>(), mean, 1e-12 * std::abs(mean));
  EXPECT_NEAR(paired["metrics"]["kl"]["standard_error"].get<double>(), se, 1e-9 * se);
  const double top1 = mean_difference(curve.rows[2].sequence_top1, curve.rows[3].sequence_top1);
  EXPECT_NEAR(paired["metrics"]["top1"]["difference"].get<double>(), top1, 1e-12);
  const double nll =
      mean_difference(curve.rows[2].sequence_mean_nll, curve.rows[3].sequence_mean_nll);
  EXPECT_NEAR(paired["metrics"]["nll"]["difference"].get<double>(), nll, 1e-12 * std::abs(nll));
  EXPECT_EQ(paired["metrics"]["kl"]["bootstrap_draws"], 1000);
}

TEST_F(KvCurve, DefaultSchemesFitTheHeadAndTheVerbRefusesBadInputBeforeRunning) {
  // head_dim 32: group 64 does not fit, so the affine rows use group 32; head_dim 8 has none.
  EXPECT_EQ(DefaultKvCurveSchemes(32),
            (std::vector<std::string>{"f32", "bf16", "f16", "ggml:q8_0", "ggml:q4_0",
                                      "affine:8:g32", "affine:6:g32", "affine:4:g32",
                                      "affine:3:g32", "affine:2:g32", "turbo:k8v8", "turbo:k8v4",
                                      "turbo:k8v3", "turbo:k8v2", "turbo:k4v3", "turbo:k4v2"}));
  EXPECT_EQ(DefaultKvCurveSchemes(96).back(), "affine:2:g32");  // no rotation of 96 elements
  EXPECT_EQ(DefaultKvCurveSchemes(128)[5], "affine:8:g64");
  EXPECT_EQ(DefaultKvCurveSchemes(8), (std::vector<std::string>{"f32", "bf16", "f16"}));
  if (!fs::exists(PROCTOR_BIN)) GTEST_SKIP() << PROCTOR_BIN << " is not built";
  const std::string verb =
      fmt::format("{} kv-curve {} --corpus {}", PROCTOR_BIN, golden_.string(), corpus().string());
  testing::CommandOutput r = testing::RunCommand(verb + " --schemes bf16,affine:4:g64");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("head_dim 32"), std::string::npos) << r.output;
  // Not quiet: a progress line would show a scheme that ran before the refusal.
  EXPECT_EQ(r.output.find("kv-curve: bf16"), std::string::npos) << "ran before: " << r.output;
  r = testing::RunCommand(verb + " --schemes turbo:k3v3");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("keys take 2, 4, 5 or 8 bits (seen 3)"), std::string::npos) << r.output;
  r = testing::RunCommand(verb + " --decode-steps 63");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("1 to 62"), std::string::npos) << r.output;
  const fs::path json = temp_.path() / "curve.json";
  r = testing::RunCommand(
      fmt::format("{} --schemes f32,affine:4:g32 --n-seqs 1 --decode-steps 2 --chunk 32 --json {}",
                  verb, json.string()));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("bytes/token"), std::string::npos) << r.output;  // table and legend
  EXPECT_EQ(nlohmann::json::parse(ReadFileToString(json))["command"], "kv-curve");
}

}  // namespace
}  // namespace proctor
