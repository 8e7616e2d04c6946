// Perplexity: the math with fake forwards (uniform logits give the vocabulary size to 1e-9;
// statistics against numpy in tools/ppl_oracle.py to 1e-12), mlx_lm's row packing on a
// hand-computed case, and real models through the serving forward: stories260K on the
// TinyStories excerpt (identical for every --batch-size) and every Hugging Face golden the engine
// runs against numpy on transformers' own logits (mean NLL to 1e-4 nats).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "eval/runners/eval_model.h"
#include "eval/runners/ppl.h"
#include "eval/runners/testing_forward.h"
#include "eval/testing_dumps.h"
#include "text/tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/file.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;

fs::path Fixtures() {
  const char* env = std::getenv("PROCTOR_FIXTURES");
  return env != nullptr ? fs::path(env) : fs::path(PROCTOR_FIXTURES_DEFAULT);
}
fs::path Stories260K() { return Fixtures() / "stories260K" / "stories260K.gguf"; }
fs::path TinyStories() { return Fixtures() / "tinystories" / "tinystories_sample.txt"; }

// A forward whose logits at position p depend only on (tokens[p], p) through `fill`, handed
// over in chunks like the engine's. `calls` (optional) records the token spans it ran.
using FillFn = std::function<void(int32_t token, int64_t position, float* logits)>;
TeacherForcedLogits FakeForward(int64_t vocab, const FillFn& fill,
                                std::vector<std::vector<int32_t>>* calls = nullptr) {
  auto buffers = std::make_shared<std::vector<Tensor>>();  // one per chunk, alive with the fake
  return testing::FakeForward(
      [vocab, fill, calls, buffers](int64_t, int64_t start, std::span<const int32_t> tokens) {
        if (calls != nullptr) {
          if (start == 0) calls->emplace_back();
          calls->back().insert(calls->back().end(), tokens.begin(), tokens.end());
        }
        buffers->push_back(Tensor::F32(static_cast<int64_t>(tokens.size()), vocab));
        MutMatF32 out = buffers->back().MutF32();
        for (size_t r = 0; r < tokens.size(); ++r) {
          fill(tokens[r], start + static_cast<int64_t>(r), out.data + r * vocab);
        }
        return buffers->back().View();
      });
}

// Deterministic "random" logits in [-4, 4) from (token, position, index).
float HashLogit(int32_t token, int64_t position, int64_t v) {
  uint64_t x = (static_cast<uint64_t>(token) * 0x9E3779B97F4A7C15ull) ^
               (static_cast<uint64_t>(position) * 0xBF58476D1CE4E5B9ull) ^
               (static_cast<uint64_t>(v) * 0x94D049BB133111EBull);
  x ^= x >> 31;
  x *= 0xD6E8FEB86677D4A1ull;
  x ^= x >> 29;
  return static_cast<float>(static_cast<double>(x >> 11) / 9007199254740992.0 * 8.0 - 4.0);
}

std::vector<int32_t> RandomTokens(int64_t n, int64_t vocab, uint32_t seed) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  uint32_t s = seed;
  for (auto& x : t) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<int32_t>((s >> 8) % static_cast<uint32_t>(vocab));
  }
  return t;
}

TEST(Ppl, UniformLogitsGiveTheVocabularySize) {
  for (const int64_t vocab : {2, 37, 512, 151936}) {
    const int64_t L = 9;
    const auto rows = RandomTokens(3 * L, vocab, 11);
    const PerplexityScores s = ScorePerplexityRows(
        rows, L,
        FakeForward(vocab,
                    [vocab](int32_t, int64_t p, float* out) {
                      std::fill(out, out + vocab, 0.25f * static_cast<float>(p) - 3.0f);
                    }),
        {.chunk_size = 4, .quiet = true});
    const PerplexityStats stats = PerplexityFromNlls(s.nlls, L - 1);
    EXPECT_EQ(stats.positions, 3 * (L - 1));
    EXPECT_EQ(stats.rows, 3);
    EXPECT_NEAR(stats.ppl, static_cast<double>(vocab), 1e-9 * static_cast<double>(vocab)) << vocab;
    EXPECT_NEAR(stats.mean_nll, std::log(static_cast<double>(vocab)), 1e-12);
    EXPECT_NEAR(stats.standard_error, 0.0, 1e-9 * static_cast<double>(vocab));
  }
}

// mlx_lm: data[: (len // L) * L].reshape(-1, L), then data[:num_samples].
TEST(Ppl, RowPackingIsMlxLmsNonOverlappingCut) {
  std::vector<int32_t> stream(23);
  for (int i = 0; i < 23; ++i) stream[i] = 100 + i;  // 100..122
  // L = 5: rows [100..104] [105..109] [110..114] [115..119]; 120..122 do not fill a row.
  const std::vector<int32_t> all = {100, 101, 102, 103, 104, 105, 106, 107, 108, 109,
                                    110, 111, 112, 113, 114, 115, 116, 117, 118, 119};
  EXPECT_EQ(PackPerplexityRows(stream, 5, -1), all);
  EXPECT_EQ(PackPerplexityRows(stream, 5, 2), std::vector<int32_t>(all.begin(), all.begin() + 10));
  EXPECT_EQ(PackPerplexityRows(stream, 5, 4), all);
  EXPECT_EQ(PackPerplexityRows(stream, 5, 9), all);  // fewer rows than asked: all there are
  EXPECT_EQ(PackPerplexityRows(stream, 23, -1), stream);
  EXPECT_TRUE(PackPerplexityRows(stream, 24, -1).empty());
  EXPECT_THROW(PackPerplexityRows(stream, 5, 0), Error);
  EXPECT_THROW(PackPerplexityRows(stream, 5, -2), Error);
}

// Each row runs on its own first L-1 tokens (no BOS put in front, nothing carried over from the
// previous row) and position p scores token p+1 of the same row.
TEST(Ppl, EachRowRunsAloneWithoutBosAndScoresItsNextTokens) {
  const std::vector<int32_t> rows = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3};  // two rows of 5
  std::vector<std::vector<int32_t>> calls;
  // logits[v] = v / 4: nll(t) = logsumexp(0, .25, .., 2.25) - t / 4.
  const PerplexityScores s = ScorePerplexityRows(rows, 5,
                                                 FakeForward(
                                                     10,
                                                     [](int32_t, int64_t, float* out) {
                                                       for (int v = 0; v < 10; ++v)
                                                         out[v] = static_cast<float>(v) / 4.0f;
                                                     },
                                                     &calls),
                                                 {.chunk_size = 3, .quiet = true});
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0], (std::vector<int32_t>{3, 1, 4, 1}));
  EXPECT_EQ(calls[1], (std::vector<int32_t>{9, 2, 6, 5}));
  double lse = 0;
  for (int v = 0; v < 10; ++v) lse += std::exp(v / 4.0);
  lse = std::log(lse);
  const std::vector<int32_t> targets = {1, 4, 1, 5, 2, 6, 5, 3};
  ASSERT_EQ(s.nlls.size(), targets.size());
  for (size_t i = 0; i < targets.size(); ++i) {
    EXPECT_NEAR(s.nlls[i], lse - targets[i] / 4.0, 1e-12) << i;
  }
}

bool HaveNumpy() { return std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") == 0; }

// tools/ppl_oracle.py (numpy) on a float32 logits file [>= targets, vocab].
nlohmann::json RunPplOracle(const fs::path& logits, const std::vector<int32_t>& targets,
                            int64_t vocab, int64_t rows, const fs::path& work) {
  WriteFileAtomic(
      work / "targets.i32",
      std::string_view(reinterpret_cast<const char*>(targets.data()), targets.size() * 4));
  const std::string cmd = fmt::format(
      "/usr/bin/python3 {}/tools/ppl_oracle.py --logits {} --targets {} --vocab {} --rows {}",
      PROCTOR_SOURCE_DIR, logits.string(), (work / "targets.i32").string(), vocab, rows);
  FILE* pipe = ::popen(cmd.c_str(), "r");
  std::string text;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) text.append(buffer, n);
  EXPECT_EQ(::pclose(pipe), 0) << cmd;
  return nlohmann::json::parse(text);
}

TEST(Ppl, StatisticsMatchNumpyOnAFakeForwardsLogits) {
  if (!HaveNumpy()) GTEST_SKIP() << "/usr/bin/python3 with numpy is not available (the oracle)";
  const int64_t vocab = 50, L = 17, n_rows = 5;
  const auto rows = RandomTokens(n_rows * L, vocab, 3);
  const FillFn fill = [](int32_t token, int64_t p, float* out) {
    for (int64_t v = 0; v < vocab; ++v) out[v] = HashLogit(token, p, v);
  };
  std::vector<float> logits;
  std::vector<int32_t> targets;
  std::vector<float> row_logits(static_cast<size_t>(vocab));
  for (int64_t r = 0; r < n_rows; ++r) {
    for (int64_t p = 0; p + 1 < L; ++p) {
      fill(rows[r * L + p], p, row_logits.data());
      logits.insert(logits.end(), row_logits.begin(), row_logits.end());
      targets.push_back(rows[r * L + p + 1]);
    }
  }
  testing::TempDir temp;
  WriteFileAtomic(
      temp.path() / "logits.f32",
      std::string_view(reinterpret_cast<const char*>(logits.data()), logits.size() * 4));
  const auto want = RunPplOracle(temp.path() / "logits.f32", targets, vocab, n_rows, temp.path());

  for (const int64_t chunk : {16, 5, 1}) {
    const PerplexityScores s = ScorePerplexityRows(rows, L, FakeForward(vocab, fill),
                                                   {.chunk_size = chunk, .quiet = true});
    const PerplexityStats got = PerplexityFromNlls(s.nlls, L - 1);
    ASSERT_EQ(got.positions, want["positions"].get<int64_t>());
    const auto near = [](double a, const nlohmann::json& b, const char* what) {
      EXPECT_NEAR(a, b.get<double>(), 1e-12 * std::max(1.0, std::fabs(b.get<double>()))) << what;
    };
    near(got.mean_nll, want["mean_nll"], "mean nll");
    near(got.ppl, want["ppl"], "ppl");
    near(got.standard_error, want["standard_error"], "standard error");
    near(got.standard_error_rows, want["standard_error_rows"], "standard error over rows");
    EXPECT_GT(got.standard_error, 0.01);
  }
}

TEST(Ppl, BadLogitsAndTargetsAreErrors) {
  const std::vector<float> with_nan = {0.0f, 1.0f, NAN};
  EXPECT_THROW(NextTokenNll(with_nan, 0), Error);
  const std::vector<float> ok = {0.0f, 1.0f};
  EXPECT_THROW(NextTokenNll(ok, 2), Error);
  EXPECT_THROW(NextTokenNll(ok, -1), Error);
  EXPECT_NEAR(NextTokenNll(ok, 1), std::log(1.0 + std::exp(-1.0)), 1e-15);
  // A forward that returns too few rows.
  const std::vector<int32_t> rows = {1, 1, 1, 1};
  Tensor one_row = Tensor::F32(1, 2);
  std::fill(one_row.MutF32().data, one_row.MutF32().data + 2, 0.0f);
  const TeacherForcedLogits short_forward = testing::FakeForward(
      [&](int64_t, int64_t, std::span<const int32_t>) { return one_row.View(); });
  EXPECT_NE(testing::ErrorOf([&] {
              ScorePerplexityRows(rows, 4, short_forward, {.quiet = true});
            }).find("gave 1 rows of 2 logits for the 3 tokens"),
            std::string::npos);
}

// The text pipeline end to end with a fake forward: the .txt file is one row, encoded with BOS
// and closed with EOS, and the rows handed to the forward are that stream cut into L-token rows.
TEST(Ppl, TextDataIsTokenizedWithBosAndEosAndCutIntoRows) {
  if (!fs::exists(Stories260K()) || !fs::exists(TinyStories())) {
    GTEST_SKIP() << "fixtures absent: " << Stories260K() << " / " << TinyStories();
  }
  const auto tokenizer = text::LoadTokenizer(Stories260K());
  std::vector<int32_t> stream = tokenizer->Encode(ReadFileToString(TinyStories()), true);
  stream.push_back(tokenizer->EosId());
  ASSERT_EQ(stream.front(), 1);  // BOS
  std::vector<std::vector<int32_t>> calls;
  const PplResult r = EvaluatePerplexity(
      {.model = "fake",
       .data = {TinyStories()},
       .sequence_length = 100,
       .num_samples = -1,
       .forward = FakeForward(
           512, [](int32_t, int64_t, float* out) { std::fill(out, out + 512, 0.0f); }, &calls),
       .tokenizer = Stories260K().string(),
       .quiet = true});
  const size_t n_rows = stream.size() / 100;
  ASSERT_EQ(calls.size(), n_rows);
  for (size_t i = 0; i < n_rows; ++i) {
    EXPECT_EQ(calls[i],
              std::vector<int32_t>(stream.begin() + i * 100, stream.begin() + i * 100 + 99));
  }
  EXPECT_EQ(r.rows_available, static_cast<int64_t>(n_rows));
  EXPECT_NEAR(r.stats.ppl, 512.0, 1e-9 * 512);
  EXPECT_TRUE(r.warnings.empty());
  // num_samples larger than the data: every row, with a warning.
  const PplResult more = EvaluatePerplexity(
      {.model = "fake",
       .data = {TinyStories()},
       .sequence_length = 100,
       .num_samples = 1000,
       .forward =
           FakeForward(512, [](int32_t, int64_t, float* out) { std::fill(out, out + 512, 0.0f); }),
       .tokenizer = Stories260K().string(),
       .quiet = true});
  EXPECT_EQ(more.stats.rows, static_cast<int64_t>(n_rows));
  ASSERT_EQ(more.warnings.size(), 1u);
  EXPECT_NE(more.warnings[0].find("fewer than --n-seqs 1000"), std::string::npos);
}

// stories260K (validation loss 1.30 on TinyStories when trained, i.e. ppl ~3.7) on a 5-story
// TinyStories excerpt, through the real forward: finite, plausible, and the same for every
// --batch-size.
TEST(Ppl, Stories260KOnTinyStoriesIsPlausibleAndIndependentOfBatchSize) {
  if (!fs::exists(Stories260K()) || !fs::exists(TinyStories())) {
    GTEST_SKIP() << "fixtures absent: " << Stories260K() << " / " << TinyStories();
  }
  std::vector<PplResult> results;
  for (const int64_t batch : {1, 3, 8}) {
    results.push_back(EvaluatePerplexity({.model = Stories260K().string(),
                                          .data = {TinyStories()},
                                          .sequence_length = 128,
                                          .num_samples = -1,
                                          .batch_size = batch,
                                          .chunk_size = 48,
                                          .quiet = true}));
  }
  const PplResult& r = results[0];
  std::printf(
      "[ ppl ] stories260K on tinystories_sample.txt: ppl %.4f ± %.4f (rows: ± %.4f), "
      "%lld rows x 128, %lld positions, %.0f tokens/s\n",
      r.stats.ppl, r.stats.standard_error, r.stats.standard_error_rows,
      static_cast<long long>(r.stats.rows), static_cast<long long>(r.stats.positions),
      r.tokens_per_second);
  EXPECT_TRUE(std::isfinite(r.stats.ppl));
  EXPECT_GT(r.stats.ppl, 1.5);
  EXPECT_LT(r.stats.ppl, 30.0);  // far below the uniform 512
  EXPECT_GE(r.stats.rows, 5);
  for (const PplResult& other : results) {
    EXPECT_EQ(other.stats.ppl, r.stats.ppl);
    EXPECT_EQ(other.stats.standard_error, r.stats.standard_error);
    EXPECT_EQ(other.row_mean_nll, r.row_mean_nll);
    EXPECT_EQ(other.rows_sha256, r.rows_sha256);
  }
}

// Through the serving forward, every Hugging Face golden the engine runs: the NLL of the prompt's
// next tokens against numpy on transformers' own logits for the same tokens (one row, the whole
// prompt; the engine's logits match transformers' to 1e-4). Gemma and the hybrids join this
// list when the engine runs them (ppl goes through the engine forward, EvalModel, like kl and
// dump).
TEST(Ppl, MatchesTransformersLogitsOnEveryHfGoldenTheEngineRuns) {
  if (!HaveNumpy()) GTEST_SKIP() << "/usr/bin/python3 with numpy is not available (the oracle)";
  for (const char* name : {"llama-f32", "llama-bf16-tied-rope-llama3", "qwen2-f32-bias",
                           "qwen3-f32", "qwen3-bf16", "qwen3-f32-long"}) {
    SCOPED_TRACE(name);
    const fs::path dir = Fixtures() / "hf-goldens" / name;
    if (!fs::exists(dir / "tokens.json")) GTEST_SKIP() << "fixture absent: " << dir;
    const auto prompt = nlohmann::json::parse(ReadFileToString(dir / "tokens.json"))["prompt"]
                            .get<std::vector<int32_t>>();
    const auto L = static_cast<int64_t>(prompt.size());
    const PerplexityScores s = ScorePerplexityRows(
        prompt, L, EvalModel::Open(dir.string())->Forward({}), {.chunk_size = 16, .quiet = true});
    const PerplexityStats got = PerplexityFromNlls(s.nlls, L - 1);
    testing::TempDir temp;
    const auto want =
        RunPplOracle(dir / "logits.f32", std::vector<int32_t>(prompt.begin() + 1, prompt.end()),
                     512, 1, temp.path());
    ASSERT_EQ(got.positions, want["positions"].get<int64_t>());
    EXPECT_NEAR(got.mean_nll, want["mean_nll"].get<double>(), 1e-4);
    EXPECT_NEAR(got.standard_error, want["standard_error"].get<double>(),
                1e-3 * want["standard_error"].get<double>());
    std::printf("[ ppl ] %s: ppl %.8g (transformers' logits: %.8g)\n", name, got.ppl,
                want["ppl"].get<double>());
  }
}

}  // namespace
}  // namespace proctor
