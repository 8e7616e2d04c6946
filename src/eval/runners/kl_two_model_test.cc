// Two-model KL (both models resident, full vocabulary) and the per-position scores file:
// model-free, with the synthetic LM through the stepping seam, against a direct float64
// computation written here (softmax, KL, argmax, NLL, nearest rank).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "eval/demo/synthetic_lm.h"
#include "eval/formats/corpus.h"
#include "eval/formats/per_position.h"
#include "eval/runners/kl_eval.h"
#include "eval/runners/testing_forward.h"
#include "eval/testing_dumps.h"
#include "util/error.h"

namespace proctor {
namespace {

using testing::ErrorOf;
using testing::TempDir;

struct Direct {
  std::vector<std::vector<double>> kl;  // [seq][pos]
  int64_t hits = 0, positions = 0;
  double candidate_nll = 0, teacher_nll = 0;
};

// Full-vocabulary KL(teacher || candidate), top-1 and NLLs in float64, position by position.
Direct DirectComputation(const SyntheticLm& teacher, const SyntheticLm& candidate,
                         const std::vector<int32_t>& tokens, int64_t n_seqs, int64_t ctx) {
  const int64_t vocab = teacher.vocab();
  Direct d;
  std::vector<float> t(vocab), c(vocab);
  const auto log_softmax = [&](const std::vector<float>& row) {
    const double m = *std::max_element(row.begin(), row.end());
    double sum = 0;
    for (float v : row) sum += std::exp(v - m);
    std::vector<double> out(row.size());
    for (size_t j = 0; j < row.size(); ++j) out[j] = row[j] - m - std::log(sum);
    return out;
  };
  for (int64_t s = 0; s < n_seqs; ++s) {
    const auto seq = std::span<const int32_t>(tokens).subspan(s * ctx, ctx);
    d.kl.emplace_back();
    for (int64_t p = 0; p + 1 < ctx; ++p) {
      teacher.RowLogits(seq, p, t.data());
      candidate.RowLogits(seq, p, c.data());
      const auto lp = log_softmax(t), lq = log_softmax(c);
      double kl = 0;
      for (int64_t j = 0; j < vocab; ++j) kl += std::exp(lp[j]) * (lp[j] - lq[j]);
      d.kl.back().push_back(kl);
      const auto argmax = [](const std::vector<float>& row) {
        return std::max_element(row.begin(), row.end()) - row.begin();  // first maximum
      };
      d.hits += argmax(t) == argmax(c) ? 1 : 0;
      d.candidate_nll += -lq[seq[p + 1]];
      d.teacher_nll += -lp[seq[p + 1]];
      ++d.positions;
    }
  }
  return d;
}

class TwoModel : public ::testing::Test {
 protected:
  void SetUp() override {
    tokens_ = SyntheticTokens(kSeqs, kCtx, kVocab, 11);
    WriteCorpus(temp_.path() / "corpus", tokens_, kCtx, {{"vocab_size", kVocab}});
  }
  KlEvalResult Run(const SyntheticLm& reference, const SyntheticLm& candidate, int64_t chunk,
                   int threads, const std::filesystem::path& per_position = {}) {
    ThreadPool pool(threads);
    return EvaluateKlTwoModels({.reference = "teacher",
                                .candidate = "candidate",
                                .corpus_dir = temp_.path() / "corpus",
                                .chunk_size = chunk,
                                .reference_forward = reference.Forward(),
                                .candidate_forward = candidate.Forward(),
                                .pool = &pool,
                                .quiet = true,
                                .per_position = per_position});
  }
  static constexpr int64_t kSeqs = 3, kCtx = 21, kVocab = 257;
  TempDir temp_;
  std::vector<int32_t> tokens_;
  SyntheticLm teacher_{kVocab, 7};
  SyntheticLm candidate_{kVocab, 7, 0.6f, 3};
};

TEST_F(TwoModel, EveryStatisticMatchesADirectFloat64Computation) {
  const Direct d = DirectComputation(teacher_, candidate_, tokens_, kSeqs, kCtx);
  const KlEvalResult r = Run(teacher_, candidate_, 6, 2);
  ASSERT_EQ(r.stats.positions, kSeqs * (kCtx - 1));
  EXPECT_EQ(r.mode, "two-model");
  EXPECT_EQ(r.candidate_vocab, kVocab);
  double mean = 0;
  std::vector<double> pooled;
  for (const auto& seq : d.kl) {
    mean += std::accumulate(seq.begin(), seq.end(), 0.0) / seq.size() / kSeqs;
    pooled.insert(pooled.end(), seq.begin(), seq.end());
  }
  std::sort(pooled.begin(), pooled.end());
  const auto rank = [&](double pct) {
    return pooled[std::min(pooled.size() - 1, static_cast<size_t>(pct / 100 * pooled.size()))];
  };
  const auto near = [](double got, double want, const char* what) {
    EXPECT_NEAR(got, want, 1e-6 + 2e-5 * std::fabs(want)) << what;
  };
  near(r.stats.kl.mean, mean, "mean");
  near(r.stats.kl.median, rank(50), "median");
  near(r.stats.kl.p95, rank(95), "p95");
  near(r.stats.kl.max, pooled.back(), "max");
  near(r.stats.tail_kl.mean, mean, "tail = full KL");
  EXPECT_EQ(r.stats.mean_mass, 1.0);
  EXPECT_EQ(r.stats.top1_agreement, static_cast<double>(d.hits) / d.positions);
  near(r.stats.candidate_mean_nll, d.candidate_nll / d.positions, "candidate nll");
  near(r.stats.teacher_mean_nll, d.teacher_nll / d.positions, "teacher nll");
  EXPECT_EQ(r.stats.teacher_nll_positions, d.positions);
  EXPECT_GT(r.stats.kl.mean, 0.05);  // noise 0.6 is far above float rounding
  EXPECT_LT(r.stats.top1_agreement, 1.0);
  EXPECT_GT(r.stats.top1_agreement, 0.5);
}

TEST_F(TwoModel, SelfScoringIsExactlyZeroAndChunksAndThreadsDoNotMatter) {
  const KlEvalResult self = Run(teacher_, teacher_, 5, 2);
  EXPECT_EQ(self.stats.kl.max, 0.0);
  EXPECT_EQ(self.stats.top1_agreement, 1.0);
  const KlEvalResult a = Run(teacher_, candidate_, 4, 1);
  for (const auto& [chunk, threads] : {std::pair{1, 2}, std::pair{7, 3}, std::pair{100, 2}}) {
    const KlEvalResult b = Run(teacher_, candidate_, chunk, threads);
    EXPECT_EQ(a.stats.kl.mean, b.stats.kl.mean) << chunk << " " << threads;
    EXPECT_EQ(a.stats.kl.max, b.stats.kl.max);
    EXPECT_EQ(a.sequence_mean_kl, b.sequence_mean_kl);
    EXPECT_EQ(a.stats.candidate_mean_nll, b.stats.candidate_mean_nll);
  }
}

TEST_F(TwoModel, DifferentVocabulariesAreAnErrorNamingBothModels) {
  const SyntheticLm wider(kVocab + 1, 7);
  const std::string error = ErrorOf([&] { Run(teacher_, wider, 8, 1); });
  EXPECT_NE(error.find("reference 'teacher' gives 257"), std::string::npos) << error;
  EXPECT_NE(error.find("candidate 'candidate' gives 258"), std::string::npos) << error;
}

TEST_F(TwoModel, PerPositionFileHoldsEveryPositionAndReproducesTheRunExactly) {
  const auto path = temp_.path() / "pp.bin";
  const KlEvalResult r = Run(teacher_, candidate_, 6, 2, path);
  const PerPositionFile file = ReadPerPositionFile(path);
  EXPECT_EQ(file.header.flags, kPerPositionFullVocabulary);
  EXPECT_EQ(file.header.record_count, static_cast<uint64_t>(kSeqs * (kCtx - 1)));
  EXPECT_EQ(file.header.n_seqs, static_cast<uint64_t>(kSeqs));
  EXPECT_EQ(file.header.positions_per_seq, static_cast<uint64_t>(kCtx - 1));
  EXPECT_EQ(file.header.top_k, 0u);
  EXPECT_EQ(file.header.vocab, static_cast<uint64_t>(kVocab));
  std::vector<std::vector<PositionScore>> per_seq(kSeqs);
  for (size_t i = 0; i < file.records.size(); ++i) {
    const PerPositionRecord& rec = file.records[i];
    ASSERT_EQ(rec.seq, i / (kCtx - 1));
    ASSERT_EQ(rec.position, i % (kCtx - 1));
    EXPECT_EQ(rec.score.next_token, tokens_[rec.seq * kCtx + rec.position + 1]);
    EXPECT_EQ(rec.score.top1, rec.score.candidate_argmax == rec.score.teacher_argmax);
    per_seq[rec.seq].push_back(rec.score);
  }
  // A merge recomputes the run from the records, bit for bit.
  const KlRunStats again = AggregateKlRun(per_seq, r.stats.elapsed_seconds);
  EXPECT_EQ(again.kl.mean, r.stats.kl.mean);
  EXPECT_EQ(again.kl.standard_error, r.stats.kl.standard_error);
  EXPECT_EQ(again.kl.p99, r.stats.kl.p99);
  EXPECT_EQ(again.top1_agreement, r.stats.top1_agreement);
  EXPECT_EQ(again.candidate_mean_nll, r.stats.candidate_mean_nll);
}

TEST(PerPosition, TheLayoutIsTheDocumentedOne) {
  TempDir temp;
  PositionScore a;
  a.kl = 0.25;
  a.tail_kl = 0.5;
  a.mass = 0.75;
  a.top1 = true;
  a.candidate_nll = 1.5;
  a.next_token = 42;
  a.candidate_argmax = 7;
  a.teacher_argmax = 7;
  a.teacher_top1_probability = 0.625;
  const auto path = temp.path() / "pp.bin";
  WritePerPositionFile(path, {.positions_per_seq = 1, .top_k = 64, .vocab = 512}, {{}, {a}});
  const std::string bytes = testing::ReadBytes(path);
  ASSERT_EQ(bytes.size(), 136u);
  EXPECT_EQ(bytes.substr(0, 8), "PROCKLPP");
  const auto u32 = [&](size_t at) {
    uint32_t v;
    std::memcpy(&v, bytes.data() + at, 4);
    return v;
  };
  const auto u64 = [&](size_t at) {
    uint64_t v;
    std::memcpy(&v, bytes.data() + at, 8);
    return v;
  };
  const auto f64 = [&](size_t at) {
    double v;
    std::memcpy(&v, bytes.data() + at, 8);
    return v;
  };
  EXPECT_EQ(u32(8), 2u);    // version
  EXPECT_EQ(u32(12), 64u);  // header bytes
  EXPECT_EQ(u32(16), 72u);  // record bytes
  EXPECT_EQ(u32(20), 0u);   // flags
  EXPECT_EQ(u64(24), 1u);   // records
  EXPECT_EQ(u64(32), 2u);   // sequences (the first one empty)
  EXPECT_EQ(u64(40), 1u);
  EXPECT_EQ(u64(48), 64u);
  EXPECT_EQ(u64(56), 512u);
  EXPECT_EQ(u32(64), 1u);  // seq
  EXPECT_EQ(u32(68), 0u);  // position
  EXPECT_EQ(f64(72), 0.25);
  EXPECT_EQ(f64(80), 0.5);
  EXPECT_EQ(f64(88), 0.75);
  EXPECT_EQ(f64(96), 1.5);
  EXPECT_TRUE(std::isnan(f64(104)));  // teacher NLL unknown
  EXPECT_EQ(u32(112), 42u);
  EXPECT_EQ(u32(116), 7u);
  EXPECT_EQ(u32(120), 7u);
  EXPECT_EQ(bytes[124], 1);
  EXPECT_EQ(bytes.substr(125, 3), std::string(3, '\0'));
  EXPECT_EQ(f64(128), 0.625);  // the teacher's top-1 probability
  const PerPositionFile back = ReadPerPositionFile(path);
  ASSERT_EQ(back.records.size(), 1u);
  EXPECT_EQ(back.records[0].score.teacher_top1_probability, 0.625);
  EXPECT_EQ(back.records[0].score.kl, 0.25);
  // A version 1 file (64-byte records, no top-1 probability) still reads; the probability is NaN.
  {
    std::string v1 = bytes.substr(0, 128);
    v1[8] = 1;
    v1[16] = 64;
    const auto old = temp.path() / "v1.bin";
    testing::WriteBytes(old, v1);
    const PerPositionFile read = ReadPerPositionFile(old);
    ASSERT_EQ(read.records.size(), 1u);
    EXPECT_EQ(read.records[0].score.candidate_nll, 1.5);
    EXPECT_TRUE(std::isnan(read.records[0].score.teacher_top1_probability));
  }
  // Damaged copies are errors that name the file and the values.
  const auto damaged = temp.path() / "bad.bin";
  const auto error_with = [&](const std::string& b) {
    testing::WriteBytes(damaged, b);
    return ErrorOf([&] { ReadPerPositionFile(damaged); });
  };
  std::string b = bytes;
  b[0] = 'X';
  EXPECT_NE(error_with(b).find("magic"), std::string::npos);
  b = bytes;
  b[8] = 3;
  EXPECT_NE(error_with(b).find("version 3"), std::string::npos);
  b = bytes;
  b[8] = 1;  // version 1 with 72-byte records
  EXPECT_NE(error_with(b).find("72-byte records; version 1 has 64 and 64"), std::string::npos);
  EXPECT_NE(error_with(bytes.substr(0, 100)).find("is 100 bytes"), std::string::npos);
  EXPECT_NE(error_with(bytes.substr(0, 10)).find("shorter than the 64-byte header"),
            std::string::npos);
  b = bytes;
  b[126] = 1;
  EXPECT_NE(error_with(b).find("reserved bytes"), std::string::npos);
  EXPECT_NE(error_with(b).find(damaged.string()), std::string::npos);
}

// The saved-teacher path writes the same file; NLLs are checked against a direct computation.
TEST(PerPosition, SavedTeacherRecordsCarryTheNextTokensNll) {
  const testing::TinyCase c;
  TempDir temp;
  c.WriteDump(temp.path() / "dump");
  const TeacherForcedLogits forward =
      testing::FakeForward([&](int64_t seq, int64_t start, std::span<const int32_t> t) {
        const auto n = static_cast<int64_t>(t.size());
        return testing::LogitsRows(c.candidate, c.ctx_len, c.vocab, c.vocab, seq, start, n);
      });
  const auto path = temp.path() / "pp.bin";
  const KlEvalResult r = EvaluateKlVsReferenceLogits({.reference_dir = temp.path() / "dump",
                                                      .candidate = "noisy",
                                                      .chunk_size = 4,
                                                      .forward = forward,
                                                      .quiet = true,
                                                      .per_position = path});
  const PerPositionFile file = ReadPerPositionFile(path);
  EXPECT_EQ(file.header.flags, 0u);
  EXPECT_EQ(file.header.top_k, static_cast<uint64_t>(c.top_k));
  ASSERT_EQ(file.records.size(), static_cast<size_t>(c.n_seqs * (c.ctx_len - 1)));
  int64_t teacher_known = 0;
  for (const PerPositionRecord& rec : file.records) {
    const int32_t next = c.tokens[rec.seq * c.ctx_len + rec.position + 1];
    ASSERT_EQ(rec.score.next_token, next);
    const auto nll = [&](const float* row) {
      const double m = *std::max_element(row, row + c.vocab);
      double sum = 0;
      for (int64_t j = 0; j < c.vocab; ++j) sum += std::exp(row[j] - m);
      return -(row[next] - m - std::log(sum));
    };
    EXPECT_NEAR(rec.score.candidate_nll, nll(c.CandidateRow(rec.seq, rec.position)), 1e-5);
    // The teacher's NLL is known exactly when the next token is in its top-k (fp16 storage).
    std::vector<int32_t> order(c.vocab);
    std::iota(order.begin(), order.end(), 0);
    const float* t = c.TeacherRow(rec.seq, rec.position);
    std::stable_sort(order.begin(), order.end(), [&](int32_t x, int32_t y) { return t[x] > t[y]; });
    const bool in_top_k =
        std::find(order.begin(), order.begin() + c.top_k, next) != order.begin() + c.top_k;
    EXPECT_EQ(!std::isnan(rec.score.teacher_nll), in_top_k);
    if (in_top_k) {
      EXPECT_NEAR(rec.score.teacher_nll, nll(t), 2e-3);
      ++teacher_known;
    }
    EXPECT_EQ(rec.score.teacher_argmax, order[0]);
  }
  EXPECT_EQ(r.stats.teacher_nll_positions, teacher_known);
  EXPECT_GT(teacher_known, 0);
}

}  // namespace
}  // namespace proctor
