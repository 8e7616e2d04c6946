// The saved-teacher KL scorer, model-free: synthetic dumps scored through fake forwards,
// against an independent numpy oracle (tools/kl_oracle.py) and hand-worked facts.
#include "eval/runners/kl_eval.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "eval/runners/testing_forward.h"
#include "eval/testing_dumps.h"
#include "util/error.h"

namespace proctor {
namespace {

using testing::TempDir;
using testing::TinyCase;

// A fake forward that hands out the rows of `logits` ([n_seqs, ctx, vocab_stride]) for the
// sequences in the order they are started, `vocab` columns of each.
TeacherForcedLogits FakeForward(const std::vector<float>* logits, int64_t ctx, int64_t vocab_stride,
                                int64_t vocab) {
  return testing::FakeForward([=](int64_t seq, int64_t start, std::span<const int32_t> t) {
    const auto n = static_cast<int64_t>(t.size());
    return testing::LogitsRows(*logits, ctx, vocab_stride, vocab, seq, start, n);
  });
}

KlEvalResult Score(const TinyCase& c, const std::filesystem::path& dir, int64_t chunk,
                   bool self = false, int threads = 2, int64_t vocab = 0, int64_t max_seqs = 0) {
  ThreadPool pool(threads);
  return EvaluateKlVsReferenceLogits(
      {.reference_dir = dir,
       .candidate = self ? "teacher" : "noisy",
       .max_seqs = max_seqs,
       .chunk_size = chunk,
       .forward = FakeForward(self ? &c.teacher : &c.candidate, c.ctx_len, c.vocab,
                              vocab > 0 ? vocab : c.vocab),
       .pool = &pool,
       .quiet = true});
}

bool HaveNumpy() { return std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") == 0; }

nlohmann::json RunOracle(const std::string& args) {
  const std::string command =
      fmt::format("/usr/bin/python3 {}/tools/kl_oracle.py {}", PROCTOR_SOURCE_DIR, args);
  FILE* pipe = ::popen(command.c_str(), "r");
  std::string out;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.append(buffer, n);
  EXPECT_EQ(::pclose(pipe), 0) << command;
  return nlohmann::json::parse(out);
}

void WriteFloats(const std::filesystem::path& path, const std::vector<float>& v) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * 4));
}

TEST(KlEval, SeedCaseMatchesTheNumpyOracleAtChunksOf4And3) {
  if (!HaveNumpy()) GTEST_SKIP() << "/usr/bin/python3 with numpy is not available (the oracle)";
  const TinyCase c;
  TempDir temp;
  const auto dump = temp.path() / "dump";
  c.WriteDump(dump);
  WriteFloats(temp.path() / "teacher.f32", c.teacher);
  WriteFloats(temp.path() / "candidate.f32", c.candidate);
  const auto oracle = RunOracle(fmt::format("--dump {} --candidate {} --teacher {} --vocab 12",
                                            dump.string(), (temp.path() / "candidate.f32").string(),
                                            (temp.path() / "teacher.f32").string()));
  EXPECT_TRUE(oracle["writer_problems"].empty()) << oracle["writer_problems"].dump(1);
  for (const int64_t chunk : {4, 3}) {
    SCOPED_TRACE(fmt::format("chunk {}", chunk));
    const KlEvalResult r = Score(c, dump, chunk);
    const KlRunStats& s = r.stats;
    ASSERT_EQ(s.positions, 10);
    EXPECT_EQ(oracle["positions"].get<int64_t>(), 10);
    const auto near = [](double got, const nlohmann::json& want, const char* what) {
      EXPECT_NEAR(got, want.get<double>(), 2e-6 + 1e-5 * std::fabs(want.get<double>())) << what;
    };
    near(s.kl.mean, oracle["kl"]["mean"], "kl mean");
    near(s.kl.standard_error, oracle["kl"]["standard_error"], "kl se");
    near(s.kl.median, oracle["kl"]["median"], "kl median");
    near(s.kl.p95, oracle["kl"]["p95"], "kl p95");
    near(s.kl.p99, oracle["kl"]["p99"], "kl p99");
    near(s.kl.max, oracle["kl"]["max"], "kl max");
    near(s.tail_kl.mean, oracle["tail_kl"]["mean"], "tail kl mean");
    near(s.tail_kl.max, oracle["tail_kl"]["max"], "tail kl max");
    near(s.top1_agreement, oracle["top1_agreement"], "top1");
    near(s.mean_mass, oracle["mean_captured_mass"], "mass");
    near(s.min_mass, oracle["min_captured_mass"], "min mass");
    EXPECT_GT(s.kl.mean, 0.01);    // noise of +-1 is far from the fp16 floor
    EXPECT_LT(s.mean_mass, 0.99);  // top-4 of 12 misses mass, so the tail bin matters
    EXPECT_GE(s.tail_kl.mean, s.kl.mean - 1e-6);
  }
}

TEST(KlEval, ChunkSizeAndThreadCountGiveBitIdenticalResults) {
  const TinyCase c(7);
  TempDir temp;
  c.WriteDump(temp.path());
  const KlEvalResult a = Score(c, temp.path(), 4, false, 1);
  for (const auto& [chunk, threads] :
       {std::pair{3, 2}, std::pair{1, 2}, std::pair{6, 3}, std::pair{100, 1}}) {
    const KlEvalResult b = Score(c, temp.path(), chunk, false, threads);
    EXPECT_EQ(a.stats.kl.mean, b.stats.kl.mean) << chunk << " " << threads;
    EXPECT_EQ(a.stats.tail_kl.max, b.stats.tail_kl.max);
    EXPECT_EQ(a.sequence_mean_kl, b.sequence_mean_kl);
  }
}

TEST(KlEval, SelfScoringFp16RepresentableLogitsGivesExactlyZero) {
  const TinyCase c(31, /*fp16_grid=*/true);
  TempDir temp;
  c.WriteDump(temp.path());
  const KlEvalResult r = Score(c, temp.path(), 4, /*self=*/true);
  EXPECT_EQ(r.stats.kl.mean, 0.0);
  EXPECT_EQ(r.stats.kl.max, 0.0);
  EXPECT_EQ(r.stats.tail_kl.max, 0.0);
  EXPECT_EQ(r.stats.top1_agreement, 1.0);
  EXPECT_EQ(r.stats.positions, 10);
}

// With the whole vocabulary in the dump the "outside top-k" bin is empty, so the tail-aware KL is
// the KL, even where fp16 rounding leaves the stored mass a hair off 1 (it once turned that
// difference into P log(P / 1e-30)).
TEST(KlEval, TailAwareKlEqualsTheKlWhenTopKCoversTheVocabulary) {
  for (const uint32_t seed : {32u, 33u, 34u, 35u}) {
    TinyCase c(seed);
    c.top_k = c.vocab;
    TempDir temp;
    c.WriteDump(temp.path());
    for (const bool self : {true, false}) {
      const KlEvalResult r = Score(c, temp.path(), 4, self);
      EXPECT_EQ(r.stats.tail_kl.mean, r.stats.kl.mean) << seed << (self ? " self" : " noisy");
      EXPECT_EQ(r.stats.tail_kl.max, r.stats.kl.max) << seed << (self ? " self" : " noisy");
    }
  }
}

TEST(KlEval, SelfScoringOffGridLogitsShowsOnlyTheFp16Floor) {
  const TinyCase c(32);
  TempDir temp;
  c.WriteDump(temp.path());
  const KlEvalResult r = Score(c, temp.path(), 4, /*self=*/true);
  EXPECT_EQ(r.stats.top1_agreement, 1.0);
  // Shifted logits lie in [-8, 0], where fp16 rounds by at most 2^-9; each truncated-KL term
  // is p_j times that rounding, so |KL| <= mass * 2^-9 (the fp16 storage floor of this dump).
  EXPECT_LE(r.stats.kl.max, std::ldexp(1.0, -9));
  EXPECT_GE(r.stats.kl.mean, -std::ldexp(1.0, -9));
  EXPECT_GT(r.stats.kl.max, 0.0);
}

TEST(KlEval, NarrowerCandidateVocabularyIsADifferentTokenizer) {
  const TinyCase c;
  TempDir temp;
  c.WriteDump(temp.path());
  try {
    Score(c, temp.path(), 4, false, 2, /*vocab=*/8);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("different tokenizer"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("vocabulary of 8"), std::string::npos) << e.what();
  }
}

TEST(KlEval, FormatVersion2IsRejected) {
  const TinyCase c;
  TempDir temp;
  c.WriteDump(temp.path());
  std::string manifest = testing::ReadBytes(temp.path() / "manifest.json");
  manifest.replace(manifest.find("\"format_version\": 1"), 19, "\"format_version\": 2");
  testing::WriteBytes(temp.path() / "manifest.json", manifest);
  EXPECT_THROW(Score(c, temp.path(), 4), Error);
}

TEST(KlEval, MaxSeqsCapsTheRun) {
  const TinyCase c;
  TempDir temp;
  c.WriteDump(temp.path());
  const KlEvalResult r = Score(c, temp.path(), 4, false, 2, 0, /*max_seqs=*/1);
  EXPECT_EQ(r.stats.positions, 5);
  EXPECT_EQ(r.stats.sequences, 1);
  EXPECT_EQ(r.sequence_mean_kl.size(), 1u);
}

void ExpectForwardError(const TeacherForcedLogits& forward, const std::string& fragment) {
  const TinyCase c;
  TempDir temp;
  c.WriteDump(temp.path());
  try {
    EvaluateKlVsReferenceLogits({.reference_dir = temp.path(),
                                 .candidate = "/nonexistent/candidate-model",
                                 .chunk_size = 3,
                                 .forward = forward,
                                 .quiet = true});
    FAIL() << "expected an error containing " << fragment;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

// The chunk driver (eval/runners/logits_chunks.h) decides the chunks; a forward that returns
// anything but one float32 row per token of the chunk, or changes its vocabulary, is a clear error.
TEST(KlEval, AForwardMustReturnOneFloatRowPerTokenOfTheChunk) {
  static const TinyCase c;
  const auto rows = [](int64_t start, int64_t n) {
    return MatView{DType::kF32, n, 12, 48,
                   reinterpret_cast<const uint8_t*>(c.candidate.data() + start * 12)};
  };
  using testing::FakeForward;
  ExpectForwardError(FakeForward([&](int64_t, int64_t start, std::span<const int32_t> t) {
                       const auto n = static_cast<int64_t>(t.size());
                       return rows(start, n - 1);
                     }),
                     "gave 2 rows of 12 logits for the 3 tokens at positions [0, 3)");
  ExpectForwardError(FakeForward([&](int64_t, int64_t start, std::span<const int32_t> t) {
                       const auto n = static_cast<int64_t>(t.size());
                       return rows(start, n + 1);
                     }),
                     "gave 4 rows of 12 logits for the 3 tokens at positions [0, 3)");
  ExpectForwardError(FakeForward([&](int64_t, int64_t start, std::span<const int32_t> t) {
                       const auto n = static_cast<int64_t>(t.size());
                       MatView v = rows(start, n);
                       v.type = DType::kBF16;
                       return v;
                     }),
                     "gave bf16 logits; float32 expected");
  ExpectForwardError(FakeForward([&](int64_t, int64_t start, std::span<const int32_t> t) {
                       const auto n = static_cast<int64_t>(t.size());
                       MatView v = rows(start, n);
                       if (start > 0) v.cols = 11;
                       return v;
                     }),
                     "gave 11 logits per position at position 3, 12 before");
  std::vector<float> nan_rows(6 * 12, 0.0f);
  nan_rows[2 * 12 + 5] = std::nanf("");
  ExpectForwardError(FakeForward([&](int64_t, int64_t start, std::span<const int32_t> t) {
                       const auto n = static_cast<int64_t>(t.size());
                       return MatView{
                           DType::kF32, n, 12, 48,
                           reinterpret_cast<const uint8_t*>(nan_rows.data() + start * 12)};
                     }),
                     "position 2: the candidate's logits have a NaN");
}

TEST(KlEval, WithoutAnInjectedForwardTheCandidateIsLoadedAsAModel) {
  ExpectForwardError(nullptr, "/nonexistent/candidate-model");  // LoadModel names the spec
}

TEST(KlEval, JsonHasEveryStatisticAndTheLabel) {
  const TinyCase c;
  TempDir temp;
  c.WriteDump(temp.path());
  const auto j = KlEvalResultToJson(Score(c, temp.path(), 4));
  EXPECT_EQ(j["label"], fmt::format("ref-logits:tiny-teacher top4 ({})", temp.path().string()));
  for (const char* key : {"mean", "standard_error", "median", "p95", "p99", "max"}) {
    EXPECT_TRUE(j["kl"].contains(key)) << key;
    EXPECT_TRUE(j["tail_kl"].contains(key)) << key;
  }
  // (proctor_version, the command line and the inputs are in the envelope: results_json.h)
  for (const char* key :
       {"top1_agreement", "mean_captured_mass", "min_captured_mass", "positions", "elapsed_seconds",
        "positions_per_second", "threads", "mode", "candidate_mean_nll", "candidate_ppl",
        "teacher_mean_nll", "teacher_nll_positions", "scoring_positions_per_second"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["threads"], 2);
}

}  // namespace
}  // namespace proctor

namespace proctor {
namespace {

// kl runs `proctor inspect`'s record checks on every record it scores (issue 18, class 6): a
// damaged record is refused with the file and the record, never scored into impossible numbers.
TEST(KlEval, DamagedRecordsAreRefusedNotScored) {
  const TinyCase c = TinyCase();
  struct Damage {
    size_t at;
    std::string bytes;
    const char* message;
  };
  const auto bytes = [](const void* p, size_t n) {
    return std::string(static_cast<const char*>(p), n);
  };
  const uint16_t nan = 0x7E00, inf16 = 0x7C00;
  const float below = -0.01f, inf = std::numeric_limits<float>::infinity();
  std::vector<Damage> damages = {
      {16 + 2, bytes(&nan, 2), "logit 1 is NaN"},
      {16, bytes(&inf16, 2), "not finite"},
      {24, bytes(&below, 4), "is below the top logit"},
      {24, bytes(&inf, 4), "not finite"},
  };
  {
    testing::TempDir probe;
    c.WriteDump(probe.path());
    const std::string data = testing::ReadBytes(probe.path() / "seq-1.bin");
    damages.push_back({8, data.substr(3 * 28, 4), "appears twice"});  // index 1 = index 0
  }
  for (const Damage& d : damages) {
    SCOPED_TRACE(d.message);
    testing::TempDir dir;
    c.WriteDump(dir.path());
    std::string data = testing::ReadBytes(dir.path() / "seq-1.bin");
    data.replace(3 * 28 + d.at, d.bytes.size(), d.bytes);
    testing::WriteBytes(dir.path() / "seq-1.bin", data);
    const std::string error = testing::ErrorOf([&] { Score(c, dir.path(), 4); });
    EXPECT_NE(error.find("seq-1.bin' record 3"), std::string::npos) << error;
    EXPECT_NE(error.find(d.message), std::string::npos) << error;
  }
}

// The table's legend names the mode's reference distribution.
TEST(KlLegend, SaysWhatTheKlIsOver) {
  KlEvalResult saved;
  saved.manifest.top_k = 64;
  EXPECT_NE(KlLegend({saved}).find("over the reference's top-64 logits"), std::string::npos);
  KlEvalResult two;
  two.mode = "two-model";
  const std::string legend = KlLegend({two});
  EXPECT_NE(legend.find("over the full vocabulary,"), std::string::npos) << legend;
  for (const char* column : {"tail KL", "top-1", "mass", "pos/s"}) {
    EXPECT_NE(legend.find(column), std::string::npos) << column;
  }
  EXPECT_EQ(KlLegend({}), "");
}

}  // namespace
}  // namespace proctor
