// llama.cpp base files (.kld): the reader and writer against an independent numpy writer
// (tools/llama_kld_file.py), the llama.cpp-convention scorer against the same script's numpy
// statistics, hand-worked cases (the -16 cutoff, no renormalisation), malformed files and the
// chunk-start (BOS) rule. The interop test against llama.cpp itself is llama_kld_interop_slow_test.
#include "eval/formats/llama_kld.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "eval/formats/corpus.h"
#include "eval/runners/llama_kld_eval.h"
#include "eval/runners/testing_forward.h"
#include "eval/testing_dumps.h"
#include "text/tokenizer/tokenizer.h"
#include "util/error.h"

namespace proctor {
namespace {

using testing::TempDir;

bool HaveNumpy() { return std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") == 0; }

std::vector<float> ReadFloats(const std::filesystem::path& path) {
  const std::string bytes = ReadFileToString(path);
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), v.size() * 4);
  return v;
}

// Runs tools/llama_kld_file.py into dir; returns expected.json.
nlohmann::json WriteNumpyCase(const std::filesystem::path& dir) {
  const std::string command = fmt::format("/usr/bin/python3 {}/tools/llama_kld_file.py {}",
                                          PROCTOR_SOURCE_DIR, dir.string());
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  return nlohmann::json::parse(ReadFileToString(dir / "expected.json"));
}

// A fake forward over logits [n_chunks, n_ctx, vocab] that hands out chunk after chunk (in the
// order they are started) the rows asked for, and records the tokens it was given.
struct FakeForward {
  const std::vector<float>* logits;
  int64_t n_ctx, vocab;
  std::shared_ptr<std::vector<std::vector<int32_t>>> seen =
      std::make_shared<std::vector<std::vector<int32_t>>>();

  TeacherForcedLogits Get() const {
    const FakeForward self = *this;
    return testing::FakeForward([self](int64_t c, int64_t start, std::span<const int32_t> t) {
      if (start == 0) self.seen->emplace_back();
      self.seen->back().insert(self.seen->back().end(), t.begin(), t.end());
      return testing::LogitsRows(*self.logits, self.n_ctx, self.vocab, self.vocab, c, start,
                                 static_cast<int64_t>(t.size()));
    });
  }
};

void ExpectClose(double got, double want, const std::string& what) {
  EXPECT_NEAR(got, want, 2e-6 * std::fabs(want) + 1e-9) << what;
}

TEST(LlamaKld, ReaderMatchesTheNumpyWriter) {
  if (!HaveNumpy()) GTEST_SKIP() << "/usr/bin/python3 with numpy is not available (the oracle)";
  TempDir temp;
  const nlohmann::json e = WriteNumpyCase(temp.path());
  const LlamaKldFile f = LlamaKldFile::Open(temp.path() / "base.kld");
  ASSERT_EQ(f.n_ctx(), e["n_ctx"].get<int64_t>());
  ASSERT_EQ(f.n_vocab(), e["n_vocab"].get<int64_t>());
  ASSERT_EQ(f.n_chunk(), e["n_chunk"].get<int64_t>());
  ASSERT_EQ(f.records_per_chunk(), e["records_per_chunk"].get<int64_t>());
  const auto tokens = e["tokens"].get<std::vector<int32_t>>();
  for (int64_t c = 0; c < f.n_chunk(); ++c) {
    const auto got = f.Tokens(c);
    EXPECT_EQ(
        std::vector<int32_t>(got.begin(), got.end()),
        std::vector<int32_t>(tokens.begin() + c * f.n_ctx(), tokens.begin() + (c + 1) * f.n_ctx()));
  }
  LlamaKldRecords records;
  for (const auto& r : e["records"]) {
    const int64_t c = r["chunk"], pos = r["position"];
    // Read a one-record range (exercises the offset arithmetic) ...
    f.ReadRecords(c, pos - f.first_position(), pos - f.first_position() + 1, &records);
    const LlamaKldRecordView view = records.Row(0);
    EXPECT_EQ(view.scale, r["scale"].get<float>()) << c << "/" << pos;
    EXPECT_EQ(view.min_log_prob, r["min_log_prob"].get<float>()) << c << "/" << pos;
    const auto codes = r["codes"].get<std::vector<uint16_t>>();
    EXPECT_EQ(std::vector<uint16_t>(view.codes, view.codes + f.n_vocab()), codes);
  }
  // ... and a whole chunk at once.
  f.ReadRecords(1, 0, f.records_per_chunk(), &records);
  EXPECT_EQ(records.count, f.records_per_chunk());
  EXPECT_EQ(records.Row(records.count - 1).scale,
            e["records"][2 * f.records_per_chunk() - 1]["scale"].get<float>());
}

TEST(LlamaKld, WriterIsByteIdenticalToTheNumpyWriter) {
  if (!HaveNumpy()) GTEST_SKIP() << "/usr/bin/python3 with numpy is not available (the oracle)";
  TempDir temp;
  const nlohmann::json e = WriteNumpyCase(temp.path());
  const int64_t n_ctx = e["n_ctx"], n_vocab = e["n_vocab"], n_chunk = e["n_chunk"];
  const auto tokens = e["tokens"].get<std::vector<int32_t>>();
  const std::vector<float> teacher = ReadFloats(temp.path() / "teacher.f32");
  const auto out = temp.path() / "proctor.kld";
  LlamaKldWriter writer(out, n_ctx, n_vocab, n_chunk, tokens);
  for (int64_t c = 0; c < n_chunk; ++c) {
    for (int64_t p = n_ctx / 2; p < n_ctx - 1; ++p) {
      EXPECT_EQ(writer.NextToken(), tokens[c * n_ctx + p + 1]);
      writer.AppendLogitsRow(std::span<const float>(teacher).subspan(
          static_cast<size_t>((c * n_ctx + p) * n_vocab), static_cast<size_t>(n_vocab)));
    }
  }
  EXPECT_FALSE(std::filesystem::exists(out)) << "visible before Finish()";
  writer.Finish();
  EXPECT_EQ(ReadFileToString(out), ReadFileToString(temp.path() / "base.kld"));
}

TEST(LlamaKld, ScorerMatchesNumpyStatisticsAtAnyChunkAndThreadCount) {
  if (!HaveNumpy()) GTEST_SKIP() << "/usr/bin/python3 with numpy is not available (the oracle)";
  TempDir temp;
  const nlohmann::json e = WriteNumpyCase(temp.path());
  const int64_t n_ctx = e["n_ctx"], n_vocab = e["n_vocab"];
  const std::vector<float> candidate = ReadFloats(temp.path() / "candidate.f32");
  std::optional<LlamaKlSums> first_sums;
  for (const auto& [chunk, threads] : {std::pair{int64_t{16}, 1}, {5, 3}, {1, 2}}) {
    ThreadPool pool(threads);
    FakeForward fake{&candidate, n_ctx, n_vocab};
    const LlamaKldEvalResult r = EvaluateKlVsLlamaKld({.base_file = temp.path() / "base.kld",
                                                       .candidate = "numpy-candidate",
                                                       .chunk_size = chunk,
                                                       .chunk_start_token = kChunkStartKeep,
                                                       .forward = fake.Get(),
                                                       .pool = &pool,
                                                       .quiet = true});
    const nlohmann::json& w = e["statistics"];
    const LlamaKlStats& s = r.stats;
    ASSERT_EQ(s.count, w["count"].get<int64_t>());
    const auto pair = [&](const ValueAndUncertainty& v, const char* name) {
      ExpectClose(v.value, w[name][0].get<double>(), name);
      ExpectClose(v.uncertainty, w[name][1].get<double>(), std::string(name) + " uncertainty");
    };
    pair(s.ppl, "ppl");
    pair(s.ppl_base, "ppl_base");
    pair(s.ln_ppl_ratio, "ln_ppl_ratio");
    pair(s.ppl_ratio, "ppl_ratio");
    pair(s.ppl_diff, "ppl_diff");
    ExpectClose(s.ln_ppl_correlation, w["ln_ppl_correlation"], "correlation");
    pair(s.kld, "kld");
    pair(s.p_diff, "p_diff");
    pair(s.p_diff_rms, "p_diff_rms");
    pair(s.same_top, "same_top");
    const std::pair<double, const char*> singles[] = {
        {s.kld_max, "kld_max"},         {s.kld_p999, "kld_p999"},
        {s.kld_p99, "kld_p99"},         {s.kld_p95, "kld_p95"},
        {s.kld_p90, "kld_p90"},         {s.kld_median, "kld_median"},
        {s.kld_p10, "kld_p10"},         {s.kld_p5, "kld_p5"},
        {s.kld_p1, "kld_p1"},           {s.kld_p01, "kld_p01"},
        {s.kld_min, "kld_min"},         {s.p_diff_max, "p_diff_max"},
        {s.p_diff_p999, "p_diff_p999"}, {s.p_diff_p99, "p_diff_p99"},
        {s.p_diff_p95, "p_diff_p95"},   {s.p_diff_p90, "p_diff_p90"},
        {s.p_diff_p75, "p_diff_p75"},   {s.p_diff_median, "p_diff_median"},
        {s.p_diff_p25, "p_diff_p25"},   {s.p_diff_p10, "p_diff_p10"},
        {s.p_diff_p5, "p_diff_p5"},     {s.p_diff_p1, "p_diff_p1"},
        {s.p_diff_p01, "p_diff_p01"},   {s.p_diff_min, "p_diff_min"}};
    for (const auto& [got, name] : singles) ExpectClose(got, w[name].get<double>(), name);
    // Bit-identical across chunk sizes and thread counts.
    if (!first_sums) {
      first_sums = r.sums;
    } else {
      // Bit patterns on purpose: the same bits, not equal values.
      // NOLINTNEXTLINE(bugprone-suspicious-memory-comparison)
      EXPECT_EQ(std::memcmp(&*first_sums, &r.sums, sizeof(LlamaKlSums)), 0);
    }
    // Stored tokens were passed through unchanged.
    EXPECT_EQ((*fake.seen)[1][0], e["tokens"][n_ctx].get<int32_t>());
  }
}

// A record by hand: vocabulary 4, codes chosen so the log-probabilities are exactly known.
std::vector<uint16_t> HandRecord(float scale, float min_log_prob, std::vector<uint16_t> codes) {
  std::vector<uint16_t> rec(static_cast<size_t>(LlamaKldRecordWords(4)));
  std::memcpy(rec.data(), &scale, 4);
  std::memcpy(rec.data() + 2, &min_log_prob, 4);
  std::copy(codes.begin(), codes.end(), rec.begin() + 4);
  return rec;
}

TEST(LlamaKld, ScorerDropsBaseProbabilitiesBelowEToTheMinus16WithoutRenormalising) {
  // scale 1/8, min -20: codes 156 -> -0.5, 0 -> -20 (dropped), 128 -> -4, 32 -> -16 (dropped:
  // the cutoff is strict).
  const auto rec = HandRecord(0.125f, -20.f, {156, 0, 128, 32});
  const LlamaKldRecordView view = ViewLlamaKldRecord(rec.data());
  const float logits[4] = {0.f, 0.f, 0.f, 0.f};  // candidate: uniform, log q = -ln 4
  const LlamaPositionScore s = ScoreLlamaPosition(logits, 4, view, 2, "hand", 0);
  const double log_q = -std::log(4.0);
  const double want = std::exp(-0.5) * (-0.5 - log_q) + std::exp(-4.0) * (-4.0 - log_q);
  EXPECT_NEAR(s.kld, want, 1e-6);
  EXPECT_NEAR(s.nll_base, 4.0, 1e-6);
  EXPECT_NEAR(s.nll, -log_q, 1e-6);
  EXPECT_NEAR(s.p_diff, 0.25 - std::exp(-4.0), 1e-6);
  EXPECT_TRUE(s.same_top);  // both argmaxes are index 0 (the candidate's first of four ties)
}

TEST(LlamaKld, EncoderKeepsTheSixteenNatWindowAndScaleZeroRows) {
  std::vector<uint16_t> rec(static_cast<size_t>(LlamaKldRecordWords(3)), 0xffff);
  // Range 30 > 16: min is raised to max - 16; the lowest logit gets code 0.
  const float wide[3] = {10.f, -20.f, 2.f};
  const double nll = EncodeLlamaKldRecord(wide, 1, rec.data());
  const LlamaKldRecordView v = ViewLlamaKldRecord(rec.data());
  EXPECT_FLOAT_EQ(v.scale, 16.f / 65535.f);
  const double lse = std::log(1 + std::exp(-30.0) + std::exp(-8.0));
  EXPECT_NEAR(v.min_log_prob, -16 - lse, 1e-6);
  EXPECT_EQ(v.codes[0], 65535);
  EXPECT_EQ(v.codes[1], 0);
  EXPECT_EQ(v.codes[2], 32768);  // (2 - (-6)) / (16/65535) = 32767.5 -> ties to even
  EXPECT_EQ(rec[4 + 3], 0) << "padding word";
  EXPECT_NEAR(nll, 30 + lse, 1e-5);  // the exact NLL, not the clamped stored one
  // All logits equal: scale 0, every code 0, log p = -ln 3.
  const float flat[3] = {1.5f, 1.5f, 1.5f};
  EncodeLlamaKldRecord(flat, 0, rec.data());
  const LlamaKldRecordView f = ViewLlamaKldRecord(rec.data());
  EXPECT_EQ(f.scale, 0.f);
  EXPECT_NEAR(f.min_log_prob, -std::log(3.0), 1e-6);
  EXPECT_EQ(f.codes[0] | f.codes[1] | f.codes[2], 0);
  const float bad[3] = {1.f, NAN, 0.f};
  EXPECT_THROW(EncodeLlamaKldRecord(bad, 0, rec.data()), Error);
}

// A valid file built byte by byte: n_ctx 6 (2 records per chunk), n_vocab 3, n_chunk 2.
std::string HandFile(int32_t n_ctx = 6, int32_t n_vocab = 3, int32_t n_chunk = 2) {
  std::string bytes = "_logits_";
  for (int32_t v : {n_ctx, n_vocab, n_chunk}) bytes.append(reinterpret_cast<const char*>(&v), 4);
  for (int32_t i = 0; i < n_ctx * n_chunk; ++i) {
    const int32_t token = i % n_vocab;
    bytes.append(reinterpret_cast<const char*>(&token), 4);
  }
  const auto rec = HandRecord(0.001f, -5.f, {1, 2, 3, 0});
  for (int64_t r = 0; r < n_chunk * LlamaKldRecordsPerChunk(n_ctx); ++r) {
    bytes.append(reinterpret_cast<const char*>(rec.data()),
                 static_cast<size_t>(LlamaKldRecordWords(n_vocab)) * 2);
  }
  return bytes;
}

std::string OpenError(const std::filesystem::path& path, const std::string& bytes) {
  WriteFileAtomic(path, bytes);
  try {
    LlamaKldFile::Open(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(LlamaKld, MalformedFilesAreErrorsNamingTheFileAndValues) {
  TempDir temp;
  const auto path = temp.path() / "bad.kld";
  const std::string good = HandFile();
  ASSERT_EQ(good.size(), 20u + 4 * 12 + 4 * 16);  // 4 records of 8 words
  EXPECT_EQ(OpenError(path, good), "no error");
  const std::string name = path.string();
  const auto expect = [&](const std::string& bytes, const std::vector<std::string>& parts) {
    const std::string message = OpenError(path, bytes);
    EXPECT_NE(message.find("[llama-kld]"), std::string::npos) << message;
    EXPECT_NE(message.find(name), std::string::npos) << message;
    for (const auto& p : parts) EXPECT_NE(message.find(p), std::string::npos) << message;
  };
  expect("_logi", {"5 bytes", "too short"});
  expect("GGUF" + good.substr(4), {"\"GGUF", "_logits_"});
  expect(good.substr(0, 15), {"truncated", "15 bytes", "header"});
  expect(good.substr(0, good.size() - 1), {"truncated", "131 bytes", "need 132"});
  expect(good + "x", {"longer", "133 bytes", "need 132"});
  expect(HandFile(2), {"n_ctx 2", "n_ctx >= 3"});
  std::string zero_vocab = good;
  std::memset(zero_vocab.data() + 12, 0, 4);
  expect(zero_vocab, {"n_vocab 0"});
  std::string huge = good;
  const int32_t big = 0x7fffffff;
  for (int at : {8, 12, 16}) std::memcpy(huge.data() + at, &big, 4);
  expect(huge, {"truncated", "2147483647", "more than 2^63"});
  std::string bad_token = good;
  const int32_t token = 3;  // n_vocab is 3
  std::memcpy(bad_token.data() + 20 + 4 * 7, &token, 4);
  expect(bad_token, {"chunk 1 position 1", "token 3", "[0, 3)"});
  std::string negative_token = good;
  const int32_t minus = -1;
  std::memcpy(negative_token.data() + 20, &minus, 4);
  expect(negative_token, {"chunk 0 position 0", "token -1"});
  // A record with a NaN scale passes Open (records are read lazily) and fails on reading.
  std::string nan_scale = good;
  const float nan = NAN;
  std::memcpy(nan_scale.data() + 20 + 48 + 16 * 3, &nan, 4);  // chunk 1, record 1
  WriteFileAtomic(path, nan_scale);
  const LlamaKldFile f = LlamaKldFile::Open(path);
  LlamaKldRecords records;
  f.ReadRecords(1, 0, 1, &records);
  try {
    f.ReadRecords(1, 0, 2, &records);
    ADD_FAILURE() << "NaN scale accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("chunk 1 position 4 has scale nan"), std::string::npos)
        << e.what();
  }
  // #18 class 8: a scale that decodes a code to log p > 0 (here 2 x 3 - 5 = 1) is refused.
  std::string big_scale = good;
  const float two = 2.f;
  std::memcpy(big_scale.data() + 20 + 48 + 16 * 2, &two, 4);  // chunk 1, record 0
  WriteFileAtomic(path, big_scale);
  const LlamaKldFile g = LlamaKldFile::Open(path);
  try {
    g.ReadRecords(1, 0, 1, &records);
    ADD_FAILURE() << "a probability above 1 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("chunk 1 position 3: code 3 with scale 2"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("log p = 1 > 0"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(LooksLikeLlamaKld(temp.path() / "missing.kld"));
  EXPECT_TRUE(LooksLikeLlamaKld(path));
}

TEST(LlamaKld, CandidateVocabularyMismatchIsAnError) {
  TempDir temp;
  const auto path = temp.path() / "base.kld";
  WriteFileAtomic(path, HandFile());
  const std::vector<float> logits(2 * 6 * 4, 0.f);
  try {
    EvaluateKlVsLlamaKld({.base_file = path,
                          .candidate = "four-token-model",
                          .chunk_start_token = kChunkStartKeep,
                          .forward = FakeForward{&logits, 6, 4}.Get(),
                          .quiet = true});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    const std::string m = e.what();
    for (const std::string& part :
         std::vector<std::string>{path.string(), "vocabulary of 3", "four-token-model", "has 4"}) {
      EXPECT_NE(m.find(part), std::string::npos) << m;
    }
  }
}

TEST(LlamaKld, ChunkStartTokenReplacesPositionZeroOfEveryChunkOnly) {
  TempDir temp;
  const auto path = temp.path() / "base.kld";
  WriteFileAtomic(path, HandFile());
  const std::vector<float> logits(2 * 6 * 3, 0.f);
  FakeForward fake{&logits, 6, 3};
  const LlamaKldEvalResult r = EvaluateKlVsLlamaKld({.base_file = path,
                                                     .candidate = "c",
                                                     .chunk_start_token = 2,
                                                     .forward = fake.Get(),
                                                     .quiet = true});
  ASSERT_EQ(fake.seen->size(), 2u);
  EXPECT_EQ((*fake.seen)[0], (std::vector<int32_t>{2, 1, 2, 0, 1, 2}));
  EXPECT_EQ((*fake.seen)[1], (std::vector<int32_t>{2, 1, 2, 0, 1, 2}));  // stored: 0 1 2 0 1 2
  EXPECT_EQ(r.stats.count, 4);
  EXPECT_EQ(r.chunk_start_token, 2);
}

TEST(LlamaKld, UnfinishedWriterLeavesNoFile) {
  TempDir temp;
  const auto path = temp.path() / "out.kld";
  const std::vector<int32_t> tokens = {0, 1, 2, 0, 1, 2};
  {
    LlamaKldWriter writer(path, 6, 3, 1, tokens);
    const float row[3] = {0.f, 1.f, 2.f};
    writer.AppendLogitsRow(row);
    EXPECT_THROW(writer.Finish(), Error);  // 1 of 2 records
  }
  EXPECT_TRUE(std::filesystem::is_empty(temp.path()));
  EXPECT_THROW(LlamaKldWriter(path, 6, 3, 1, std::vector<int32_t>{0, 1, 2, 0, 1, 3}), Error);
  EXPECT_THROW(LlamaKldWriter(path, 2, 3, 1, std::vector<int32_t>{0, 1}), Error);
}

TEST(LlamaKld, DumpWritesTheNumpyFileAndReportsExactAndStoredPerplexity) {
  if (!HaveNumpy()) GTEST_SKIP() << "/usr/bin/python3 with numpy is not available (the oracle)";
  TempDir temp;
  const nlohmann::json e = WriteNumpyCase(temp.path());
  const int64_t n_ctx = e["n_ctx"], n_vocab = e["n_vocab"];
  const auto tokens = e["tokens"].get<std::vector<int32_t>>();
  WriteCorpus(temp.path() / "corpus", tokens, n_ctx, {{"tokenizer", "numpy"}});
  const std::vector<float> teacher = ReadFloats(temp.path() / "teacher.f32");
  ThreadPool pool(2);
  const LlamaKldDumpResult r =
      DumpTeacherLlamaKld({.teacher = "numpy-teacher",
                           .corpus_dir = temp.path() / "corpus",
                           .out_file = temp.path() / "dump.kld",
                           .chunk_size = 5,
                           .chunk_start_token = kChunkStartKeep,
                           .forward = FakeForward{&teacher, n_ctx, n_vocab}.Get(),
                           .pool = &pool,
                           .quiet = true});
  EXPECT_EQ(ReadFileToString(temp.path() / "dump.kld"), ReadFileToString(temp.path() / "base.kld"));
  EXPECT_EQ(r.positions, e["statistics"]["count"].get<int64_t>());
  ExpectClose(r.exact_ppl.value, e["teacher_exact_ppl"][0].get<double>(), "exact ppl");
  ExpectClose(r.exact_ppl.uncertainty, e["teacher_exact_ppl"][1].get<double>(), "exact unc");
  ExpectClose(r.stored_ppl.value, e["statistics"]["ppl_base"][0].get<double>(), "stored ppl");
  // A slice of the corpus is a file of its own: chunk 1 only.
  DumpTeacherLlamaKld({.teacher = "numpy-teacher",
                       .corpus_dir = temp.path() / "corpus",
                       .out_file = temp.path() / "slice.kld",
                       .seq_start = 1,
                       .seq_end = 2,
                       .chunk_start_token = kChunkStartKeep,
                       .forward = FakeForward{&teacher, n_ctx, n_vocab}.Get(),
                       .quiet = true});
  const LlamaKldFile slice = LlamaKldFile::Open(temp.path() / "slice.kld");
  EXPECT_EQ(slice.n_chunk(), 1);
  EXPECT_EQ(slice.Tokens(0)[0], tokens[static_cast<size_t>(n_ctx)]);
}

// The real engine end to end, no llama.cpp needed: stories260K writes a base file over
// tinystories and scores itself against it. llama.cpp's rule puts BOS (id 1) at position 0 of
// every chunk; the self-score is at the file's quantization floor (half a 16/65535-nat step).
TEST(LlamaKld, Stories260KSelfScoreIsAtTheQuantizationFloor) {
  const char* env = std::getenv("PROCTOR_FIXTURES");
  const std::filesystem::path fixtures =
      env != nullptr && *env != '\0' ? env : PROCTOR_FIXTURES_DEFAULT;
  const auto model = fixtures / "stories260K" / "stories260K.gguf";
  const auto text = fixtures / "tinystories" / "tinystories_sample.txt";
  if (!std::filesystem::exists(model) || !std::filesystem::exists(text)) {
    GTEST_SKIP() << "fixtures absent: " << model << ", " << text;
  }
  const auto tokenizer = text::LoadTokenizer(model);
  EXPECT_EQ(LlamaKldChunkStartToken(tokenizer.get()), 1);
  EXPECT_EQ(LlamaKldChunkStartToken(nullptr), kChunkStartKeep);
  std::vector<int32_t> tokens = tokenizer->Encode(ReadFileToString(text), true);
  const int64_t n_ctx = 64, n_seqs = 4;
  ASSERT_GE(static_cast<int64_t>(tokens.size()), n_ctx * n_seqs);
  tokens.resize(static_cast<size_t>(n_ctx * n_seqs));
  TempDir temp;
  WriteCorpus(temp.path() / "corpus", tokens, n_ctx, {{"tokenizer", model.string()}});
  const LlamaKldDumpResult dump = DumpTeacherLlamaKld({.teacher = model.string(),
                                                       .corpus_dir = temp.path() / "corpus",
                                                       .out_file = temp.path() / "base.kld",
                                                       .chunk_size = 24,
                                                       .quiet = true});
  EXPECT_EQ(dump.chunk_start_token, 1);
  EXPECT_EQ(dump.positions, n_seqs * 31);
  // Stored PPL <= exact: the file clamps tokens more than 16 nats below the top.
  EXPECT_LE(dump.stored_ppl.value, dump.exact_ppl.value * (1 + 1e-4));
  const LlamaKldEvalResult self = EvaluateKlVsLlamaKld({.base_file = temp.path() / "base.kld",
                                                        .candidate = model.string(),
                                                        .chunk_size = 40,
                                                        .quiet = true});
  std::printf(
      "[ self-score ] KLD mean %.3g max %.3g, same top %.4f, PPL(Q) %.6f, PPL(base) "
      "stored %.6f, exact %.6f\n",
      self.stats.kld.value, self.stats.kld_max, self.stats.same_top.value, self.stats.ppl.value,
      self.stats.ppl_base.value, dump.exact_ppl.value);
  EXPECT_EQ(self.chunk_start_token, 1);
  EXPECT_EQ(self.stats.count, dump.positions);
  // Each stored log-prob is off by at most half a step, 8/65535 = 1.22e-4 nats, and llama.cpp's
  // KLD does not renormalise the base, so the floor is first order: every position's KLD is
  // sum_i p_i * rounding_i, within +-1.22e-4 (plus float rounding), of either sign.
  constexpr double kHalfStep = 8.0 / 65535.0;
  EXPECT_LT(self.stats.kld_max, kHalfStep * 1.05);
  EXPECT_GT(self.stats.kld_min, -kHalfStep * 1.05);
  EXPECT_LT(std::fabs(self.stats.kld.value), kHalfStep);
  EXPECT_GE(self.stats.same_top.value, 0.99);
  // The candidate's own PPL is the teacher's exact one (same forward, same positions).
  EXPECT_NEAR(self.stats.ppl.value, dump.exact_ppl.value, 1e-5 * dump.exact_ppl.value);
  EXPECT_NEAR(self.stats.ppl_base.value, dump.stored_ppl.value, 1e-6 * dump.stored_ppl.value);
}

}  // namespace
}  // namespace proctor
