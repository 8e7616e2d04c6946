// RunDemo end to end, small (compare on the embedded default): the generated teacher is a
// loadable model, the teacher's self-score is at the fp16 storage floor, quantization damage
// orders by bits, perplexity agrees with the scorer's own NLL, the table and JSON carry every
// column, and two runs give bit-identical statistics.
#include "eval/demo/demo_pipeline.h"

#include <gtest/gtest.h>

#include <cmath>

#include "eval/compare/compare_table.h"
#include "eval/demo/demo_teacher.h"
#include "eval/demo/demo_texts.h"
#include "eval/formats/ref_logits.h"
#include "eval/testing_dumps.h"
#include "model/load.h"
#include "text/tokenizer/tokenizer.h"

namespace proctor {
namespace {

// top_k = the whole vocabulary: the KL is then the exact KL, which (unlike the top-k-truncated
// one, whose first-order term does not cancel) cannot come out negative for a small perturbation.
constexpr int64_t kSeqs = 4, kCtx = 64, kTopK = 512;

DemoOptions SmallDemo(const std::filesystem::path& dir) {
  return {.work_dir = dir, .n_seqs = kSeqs, .ctx_len = kCtx, .top_k = kTopK, .chunk_size = 16};
}

// Half the fp16 spacing at v: the most rounding can move a stored logit.
double HalfFp16Step(float v) {
  const double a = std::fabs(double{v});
  if (a < std::ldexp(1.0, -14)) return std::ldexp(1.0, -25);  // subnormal spacing / 2
  int e = 0;
  std::frexp(a, &e);  // a in [2^(e-1), 2^e): spacing 2^(e-11)
  return std::ldexp(1.0, e - 12);
}

class DemoPipeline : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    temp_ = new testing::TempDir();
    result_ = new DemoResult(RunDemo(SmallDemo(temp_->path() / "a")));
  }
  static void TearDownTestSuite() {
    delete result_;
    delete temp_;
  }
  static testing::TempDir* temp_;
  static DemoResult* result_;
};
testing::TempDir* DemoPipeline::temp_ = nullptr;
DemoResult* DemoPipeline::result_ = nullptr;

// A row's KL statistic (`key` of "kl") or a top-level number of its kl JSON.
double Kl(const CompareRow& row, const char* key) { return row.kl["kl"][key].get<double>(); }
double Number(const CompareRow& row, const char* key) { return row.kl[key].get<double>(); }

TEST_F(DemoPipeline, GeneratedTeacherIsALoadableModelWithItsOwnTokenizer) {
  ASSERT_TRUE(result_->generated_teacher);
  const CompareResult& r = result_->compare;
  const LoadedModel model = LoadModel(r.teacher);
  const DemoTeacherOptions shape;
  EXPECT_EQ(model.config.hidden_size, shape.hidden_size);
  EXPECT_EQ(model.config.num_layers, shape.num_layers);
  EXPECT_EQ(model.config.num_heads, shape.num_heads);
  EXPECT_EQ(model.config.num_kv_heads, shape.num_kv_heads);
  EXPECT_EQ(model.config.intermediate_size, shape.intermediate_size);
  EXPECT_EQ(model.config.vocab_size, shape.vocab_size);
  EXPECT_EQ(model.config.stored_dtype, "bfloat16");
  const auto tokenizer = text::LoadTokenizer(r.teacher);
  EXPECT_EQ(tokenizer->VocabSize(), static_cast<size_t>(shape.vocab_size));
  EXPECT_EQ(tokenizer->BosId(), 0);
  EXPECT_EQ(tokenizer->EosId(), 1);
  for (const auto& t : DemoTexts()) {
    const std::vector<int32_t> ids = tokenizer->Encode(t.text, true);
    ASSERT_FALSE(ids.empty());
    EXPECT_EQ(ids.front(), 0) << t.name;
    EXPECT_EQ(tokenizer->Decode(ids, true), t.text) << t.name;
    // BPE compresses (~2 bytes per token with 512 tokens).
    EXPECT_LT(ids.size(), t.text.size() * 2 / 3) << t.name;
  }
}

TEST_F(DemoPipeline, TeacherSelfScoreIsAtTheFp16Floor) {
  const CompareRow& self = result_->compare.rows.at(0);
  EXPECT_EQ(self.kind, "teacher");
  EXPECT_EQ(self.bits_per_weight, 16.0);
  EXPECT_EQ(self.kl["positions"], kSeqs * (kCtx - 1));
  EXPECT_EQ(Number(self, "top1_agreement"), 1.0);
  // Each stored logit is off by at most half its fp16 spacing: a position's KL is at most
  // sum_j p_j * half-spacing_j (first order; 1.01 covers the second).
  const auto dump = ReferenceLogitsDump::Open(result_->compare.dump_dir);
  ReferenceRecords records;
  double bound_sum = 0, bound_max = 0;
  for (int64_t s = 0; s < kSeqs; ++s) {
    dump.ReadRecords(s, 0, kCtx - 1, &records);
    for (int64_t p = 0; p < kCtx - 1; ++p) {
      double bound = 0;
      for (int64_t j = 0; j < kTopK; ++j) {
        bound += std::exp(double{records.Logits(p)[j]} - records.logsumexp[p]) *
                 HalfFp16Step(records.Logits(p)[j]);
      }
      bound_sum += bound;
      bound_max = std::max(bound_max, bound);
    }
  }
  EXPECT_LE(std::abs(Kl(self, "mean")), 1.01 * bound_sum / (kSeqs * (kCtx - 1)));
  EXPECT_LE(Kl(self, "max"), 1.01 * bound_max);
  std::printf("[ floor ] teacher self-score: mean KL %.3e (bound %.3e), max %.3e (bound %.3e)\n",
              Kl(self, "mean"), bound_sum / (kSeqs * (kCtx - 1)), Kl(self, "max"), bound_max);
}

TEST_F(DemoPipeline, DamageOrdersByBits) {
  const auto& rows = result_->compare.rows;
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[1].candidate, "affine8-g64");
  EXPECT_EQ(rows[2].candidate, "affine4-g64");
  EXPECT_EQ(rows[3].candidate, "affine3-g64");
  for (size_t i = 1; i < rows.size(); ++i) {
    std::printf("[ demo ] %-14s bits/w %.3f  KL %.3e  top-1 %.4f  ppl %.3f\n",
                rows[i].candidate.c_str(), rows[i].bits_per_weight, Kl(rows[i], "mean"),
                Number(rows[i], "top1_agreement"), rows[i].perplexity.ppl);
    EXPECT_EQ(rows[i].kind, "quantized");
    // Everyone is scored on the same positions.
    EXPECT_EQ(rows[i].kl["positions"], rows[0].kl["positions"]);
    // Above the teacher's floor by orders of magnitude.
    EXPECT_GT(Kl(rows[i], "mean"), 100 * std::abs(Kl(rows[0], "mean")));
    EXPECT_LT(Number(rows[i], "top1_agreement"), 1.0);
  }
  EXPECT_LT(Kl(rows[1], "mean"), Kl(rows[2], "mean"));
  EXPECT_LT(Kl(rows[2], "mean"), Kl(rows[3], "mean"));
  EXPECT_GT(Number(rows[1], "top1_agreement"), Number(rows[2], "top1_agreement"));
  EXPECT_GT(Number(rows[2], "top1_agreement"), Number(rows[3], "top1_agreement"));
  EXPECT_LT(rows[0].perplexity.ppl, rows[2].perplexity.ppl);
  EXPECT_LT(rows[2].perplexity.ppl, rows[3].perplexity.ppl);
}

TEST_F(DemoPipeline, BitsPerWeightCountCodesScalesAndBiases) {
  // bf16 teacher: quantized matrices store bits + 2 * 16 / 64 bits per value (bf16 scale and
  // bias per group of 64); the norms stay bf16.
  const DemoTeacherOptions o;
  const double h = o.hidden_size, ff = o.intermediate_size, v = o.vocab_size;
  const double head_dim = h / o.num_heads;
  const double per_layer_matrices =
      h * (o.num_heads * head_dim) * 2 + h * (o.num_kv_heads * head_dim) * 2 + 3 * h * ff;
  const double matrices = 2 * v * h + o.num_layers * per_layer_matrices;
  const double norms = (2.0 * o.num_layers + 1) * h;
  const int bits[] = {8, 4, 3};
  for (size_t i = 1; i < result_->compare.rows.size(); ++i) {
    const CompareRow& row = result_->compare.rows[i];
    const double expected = ((bits[i - 1] + 0.5) * matrices + 16 * norms) / (matrices + norms);
    EXPECT_NEAR(row.bits_per_weight, expected, 1e-12) << row.candidate;
  }
}

TEST_F(DemoPipeline, PerplexityAgreesWithTheScorersOwnNll) {
  // The perplexity's NLLs (ppl.h, from the logits) and the KL scorer's (computed on its own from
  // the same logits) agree for every row; the teacher's is far below the uniform guess.
  for (const auto& row : result_->compare.rows) {
    EXPECT_EQ(row.perplexity.positions, kSeqs * (kCtx - 1)) << row.candidate;
    EXPECT_NEAR(row.perplexity.mean_nll, Number(row, "candidate_mean_nll"), 1e-6) << row.candidate;
    EXPECT_NEAR(row.perplexity.ppl, std::exp(row.perplexity.mean_nll), 1e-9) << row.candidate;
  }
  EXPECT_LT(result_->compare.rows[0].perplexity.ppl, 512.0 / 4);
}

TEST_F(DemoPipeline, TableAndJsonHoldEveryColumn) {
  const CompareResult& r = result_->compare;
  const std::string table = FormatCompareTable(r);
  for (const char* column :
       {"candidate", "bits/w", "KL mean +- SE", "dKL vs above +- SE", "verdict", "median", "p95",
        "top-1", "mass", "perplexity", "delta-ppl", "seconds"}) {
    EXPECT_NE(table.find(column), std::string::npos) << column << "\n" << table;
  }
  for (const auto& row : r.rows) {
    EXPECT_NE(table.find(row.candidate), std::string::npos) << row.candidate;
  }
  const nlohmann::ordered_json j = CompareResultToJson(r);
  ASSERT_EQ(j["candidates"].size(), 4u);
  for (const auto& c : j["candidates"]) {
    for (const char* key :
         {"candidate", "bits_per_weight", "kl", "perplexity", "delta_perplexity", "seconds"}) {
      EXPECT_TRUE(c.contains(key)) << key;
    }
    for (const char* key : {"mean", "standard_error", "median", "p95"}) {
      EXPECT_TRUE(c["kl"]["kl"].contains(key)) << key;
    }
    EXPECT_TRUE(c["kl"].contains("top1_agreement"));
    EXPECT_TRUE(c["kl"].contains("mean_captured_mass"));
    EXPECT_TRUE(c["perplexity"].contains("perplexity"));
  }
  EXPECT_EQ(j["candidates"][0]["delta_perplexity"], 0.0);
  EXPECT_EQ(j["corpus"]["tokens_sha256"], r.corpus_sha256);
  const DemoOptions options = SmallDemo(temp_->path() / "a");
  const nlohmann::ordered_json envelope = ResultsEnvelopeToJson(
      CompareResultsEnvelope(r, DemoCompareOptions(options, r.teacher), "demo"));
  EXPECT_EQ(envelope["command"], "demo");
  EXPECT_EQ(envelope["results"], j);
  EXPECT_EQ(envelope["settings"]["top_k"], kTopK);
  ASSERT_EQ(envelope["inputs"].size(), 1u);
  EXPECT_EQ(envelope["inputs"][0]["role"], "teacher");
  EXPECT_EQ(envelope["inputs"][0]["kind"], "model-directory");
  ASSERT_EQ(envelope["outputs"].size(), 5u);  // corpus, dump, the three candidates
  EXPECT_EQ(envelope["outputs"][0]["tokens_sha256"], r.corpus_sha256);
  EXPECT_EQ(envelope["outputs"][1]["kind"], "reference-logits");
  for (int i = 2; i < 5; ++i) {
    EXPECT_EQ(envelope["outputs"][i]["role"], "candidate");
    EXPECT_EQ(envelope["outputs"][i]["kind"], "model-directory");
  }
  EXPECT_GT(envelope["timings"]["forward_seconds"].get<double>(), 0.0);
  // The Markdown and CSV forms carry the same rows.
  const std::string md = FormatCompareMarkdown(r), csv = FormatCompareCsv(r);
  for (const auto& row : r.rows) {
    EXPECT_NE(md.find("| " + row.candidate + " |"), std::string::npos) << row.candidate;
    EXPECT_NE(csv.find(row.candidate + ","), std::string::npos) << row.candidate;
  }
}

// The deterministic part of the JSON: every statistic, no paths or timings.
nlohmann::ordered_json Statistics(const CompareResult& r) {
  nlohmann::ordered_json out;
  out["corpus"] = r.corpus_sha256;
  for (const auto& c : CompareResultToJson(r)["candidates"]) {
    nlohmann::ordered_json row;
    for (const char* key : {"candidate", "bits_per_weight", "perplexity"}) row[key] = c[key];
    for (const char* key : {"kl", "tail_kl", "top1_agreement", "mean_captured_mass",
                            "min_captured_mass", "positions", "sequence_mean_kl"}) {
      row[key] = c["kl"][key];
    }
    out["rows"].push_back(row);
  }
  return out;
}

TEST_F(DemoPipeline, TwoRunsGiveBitIdenticalStatistics) {
  const DemoResult again = RunDemo(SmallDemo(temp_->path() / "b"));
  EXPECT_EQ(Statistics(again.compare).dump(), Statistics(result_->compare).dump());
  EXPECT_EQ(testing::ReadBytes(temp_->path() / "a" / "teacher" / "model.safetensors"),
            testing::ReadBytes(temp_->path() / "b" / "teacher" / "model.safetensors"));
  EXPECT_EQ(testing::ReadBytes(temp_->path() / "a" / "teacher" / "tokenizer.json"),
            testing::ReadBytes(temp_->path() / "b" / "teacher" / "tokenizer.json"));
}

TEST(DemoPipelineErrors, BadOptionsAreErrors) {
  testing::TempDir temp;
  DemoOptions o = SmallDemo(temp.path());
  o.ctx_len = 1;
  EXPECT_THROW(RunDemo(o), Error);
  o = SmallDemo({});
  EXPECT_THROW(RunDemo(o), Error);
  o = SmallDemo(temp.path());
  o.ctx_len = int64_t{1} << 30;  // more than the docs hold
  try {
    RunDemo(o);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("need 1073741824"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace proctor
