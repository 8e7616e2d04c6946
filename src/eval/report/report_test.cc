// The report's pieces that need no gnuplot: the Pareto front, and compare's results read back.
// (The page itself, in a real browser: cli/report_verb_test.cc.)
#include "eval/report/report.h"

#include <gtest/gtest.h>

#include "util/testing_files.h"

namespace proctor {
namespace {

TEST(ParetoFront, KeepsThePointsNoSmallerPointBeats) {
  // (bits, KL): a beats c (fewer bits, lower KL); b and d are on the front; e ties d's bits with
  // a higher KL.
  const std::vector<std::pair<double, double>> points = {{4.5, 0.05},  {8.5, 0.001}, {5.0, 0.08},
                                                         {16.0, 1e-6}, {16.0, 1e-5}, {3.0, 0.3}};
  EXPECT_EQ(ParetoFront(points), (std::vector<size_t>{5, 0, 1, 3}));
  EXPECT_TRUE(ParetoFront({}).empty());
  EXPECT_EQ(ParetoFront({{1, 1}}), std::vector<size_t>{0});
}

TEST(CompareResultFromJson, ReadsBackWhatCompareWrites) {
  CompareResult r;
  r.out_dir = "study";
  r.teacher = "t.gguf";
  r.teacher_summary = "llama";
  r.teacher_sha256 = "ab";
  r.tokenizer = "tok";
  r.teacher_parameters = 1000;
  r.corpus_dir = "study/corpus";
  r.corpus_description = "1 file";
  r.corpus_sha256 = "cd";
  r.n_seqs = 4;
  r.ctx_len = 64;
  r.top_k = 32;
  r.compute = "f32";
  r.kv = "f32";
  r.chunk_size = 16;
  r.threads = 2;
  r.rows.push_back(CompareRow{.candidate = "teacher (f32)",
                              .kind = "teacher",
                              .model = "t.gguf",
                              .bits_per_weight = 32,
                              .kl = {{"kl", {{"mean", 1e-6}}}},
                              .perplexity = {},
                              .seconds = 0.5,
                              .reused = true,
                              .per_position = "positions/x.kl"});
  const CompareResult back = CompareResultFromJson(CompareResultToJson(r), "c.json");
  EXPECT_EQ(back.out_dir, r.out_dir);
  EXPECT_EQ(back.teacher, "t.gguf");
  EXPECT_EQ(back.top_k, 32);
  ASSERT_EQ(back.rows.size(), 1u);
  EXPECT_EQ(back.rows[0].candidate, "teacher (f32)");
  EXPECT_EQ(back.rows[0].per_position, "positions/x.kl");
  EXPECT_TRUE(back.rows[0].reused);
  EXPECT_EQ(back.rows[0].kl, r.rows[0].kl);
  const std::string error = testing::ErrorOf([] {
    CompareResultFromJson({{"teacher", {}}}, "kl.json");
  });
  EXPECT_NE(error.find("kl.json: not the results of `proctor compare`"), std::string::npos)
      << error;
}

}  // namespace
}  // namespace proctor
