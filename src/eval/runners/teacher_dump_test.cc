// Tests of the corpus reader/writer and `proctor dump`: records checked against a direct
// computation (sort + double logsumexp), slices, in-process and SIGKILL resume (byte
// comparison with an uninterrupted dump), and self-scoring stories260K (fixture).
#include "eval/runners/teacher_dump.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <random>
#include <thread>

#include "eval/demo/synthetic_lm.h"
#include "eval/formats/corpus.h"
#include "eval/formats/ref_logits.h"
#include "eval/formats/ref_logits_integrity.h"
#include "eval/runners/dump_floor.h"
#include "eval/runners/kl_eval.h"
#include "eval/testing_dumps.h"
#include "util/error.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;
using testing::ReadBytes;
using testing::TempDir;

std::string ShellOutput(const std::string& command) {
  FILE* pipe = ::popen(command.c_str(), "r");
  std::string out;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.append(buffer, n);
  ::pclose(pipe);
  return out;
}

std::vector<int32_t> RandomTokens(int64_t count, int32_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> token(0, vocab - 1);
  std::vector<int32_t> tokens(static_cast<size_t>(count));
  for (auto& t : tokens) t = token(rng);
  return tokens;
}

TEST(Corpus, RoundTripsAndTheShaMatchesSha256sum) {
  TempDir temp;
  const auto tokens = RandomTokens(3 * 10, 100, 1);
  WriteCorpus(temp.path(), tokens, 10, {{"tokenizer", "t"}, {"vocab_size", 100}});
  const Corpus corpus = ReadCorpus(temp.path());
  EXPECT_EQ(corpus.n_seqs, 3);
  EXPECT_EQ(corpus.ctx_len, 10);
  EXPECT_EQ(corpus.vocab_size, 100);
  EXPECT_EQ(corpus.tokens, tokens);
  const std::string sum = ShellOutput("sha256sum " + (temp.path() / "tokens.bin").string());
  EXPECT_EQ(sum.substr(0, 64), corpus.tokens_sha256);
}

TEST(Corpus, ShaMismatchSizeMismatchAndOutOfRangeTokensAreErrors) {
  TempDir temp;
  auto tokens = RandomTokens(2 * 8, 50, 2);
  WriteCorpus(temp.path(), tokens, 8, {{"vocab_size", 50}});
  std::string bytes = ReadBytes(temp.path() / "tokens.bin");
  bytes[0] ^= 1;
  testing::WriteBytes(temp.path() / "tokens.bin", bytes);
  EXPECT_NE(testing::ErrorOf([&] {
              ReadCorpus(temp.path());
            }).find("but manifest.json says tokens_sha256"),
            std::string::npos);
  testing::WriteBytes(temp.path() / "tokens.bin", bytes.substr(4));
  EXPECT_NE(testing::ErrorOf([&] { ReadCorpus(temp.path()); }).find("is 60 bytes"),
            std::string::npos);
  tokens[5] = 50;
  WriteCorpus(temp.path(), tokens, 8, {{"vocab_size", 50}});
  EXPECT_NE(
      testing::ErrorOf([&] { ReadCorpus(temp.path()); }).find("token 50 (sequence 0, position 5)"),
      std::string::npos);
}

// A manifest whose n_seqs x ctx_len x 4 wraps around 64 bits to the token file's real size is
// refused (issue 18, class 4: it used to pass the size check and corrupt the heap).
TEST(Corpus, SizesThatWrapAroundAreRefused) {
  TempDir temp;
  WriteCorpus(temp.path(), RandomTokens(4 * 128, 50, 3), 128, {{"vocab_size", 50}});
  const auto manifest_path = temp.path() / "manifest.json";
  auto manifest = nlohmann::json::parse(ReadBytes(manifest_path));
  // (2^62 + 128) x 4 sequences x 4 bytes = 2^66 + 2048: 2048 modulo 2^64, this file's size.
  manifest["ctx_len"] = (int64_t{1} << 62) + 128;
  testing::WriteBytes(manifest_path, manifest.dump());
  const std::string error = testing::ErrorOf([&] { ReadCorpus(temp.path()); });
  EXPECT_NE(error.find("is 2048 bytes; n_seqs 4 x ctx_len 4611686018427388032 x 4 needs more "
                       "than 2^64"),
            std::string::npos)
      << error;
}

// Every record of a dump of the synthetic LM equals a direct computation: indices by a stable
// sort (ties to the lower index), logits shifted by the top logit within fp16 rounding, and the
// logsumexp in double.
TEST(TeacherDump, RecordsMatchADirectComputationAtAnUnevenChunk) {
  TempDir temp;
  const int64_t vocab = 300, ctx = 17, n_seqs = 3, top_k = 20;
  const SyntheticLm lm(vocab, 7);
  const auto tokens = SyntheticTokens(n_seqs, ctx, vocab, 3);
  WriteCorpus(temp.path() / "corpus", tokens, ctx, {{"vocab_size", vocab}});
  const auto result = DumpTeacher({.teacher = "synthetic",
                                   .corpus_dir = temp.path() / "corpus",
                                   .out_dir = temp.path() / "dump",
                                   .top_k = top_k,
                                   .chunk_size = 5,
                                   .forward = lm.Forward(),
                                   .quiet = true});
  EXPECT_EQ(result.positions_written, n_seqs * (ctx - 1));
  EXPECT_EQ(result.vocab, vocab);
  const auto dump = ReferenceLogitsDump::Open(temp.path() / "dump");
  EXPECT_EQ(dump.positions(), ctx - 1);
  EXPECT_EQ(dump.manifest().corpus_sha256, ReadCorpus(temp.path() / "corpus").tokens_sha256);
  EXPECT_EQ(dump.manifest().model, "synthetic");
  ReferenceRecords records;
  std::vector<float> row(vocab);
  std::vector<int32_t> order(vocab);
  for (int64_t s = 0; s < n_seqs; ++s) {
    const auto seq = std::span<const int32_t>(tokens).subspan(s * ctx, ctx);
    EXPECT_EQ(dump.Tokens(s), std::vector<int32_t>(seq.begin(), seq.end()));
    dump.ReadRecords(s, 0, ctx - 1, &records);
    for (int64_t p = 0; p < ctx - 1; ++p) {
      lm.RowLogits(seq, p, row.data());
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](int32_t a, int32_t b) { return row[a] > row[b]; });
      double sum = 0;
      for (float v : row) sum += std::exp(static_cast<double>(v) - row[order[0]]);
      for (int64_t j = 0; j < top_k; ++j) {
        ASSERT_EQ(records.Indices(p)[j], order[j]) << "seq " << s << " pos " << p << " j " << j;
        const double shifted = row[order[j]] - row[order[0]];
        EXPECT_NEAR(records.Logits(p)[j], shifted, std::abs(shifted) / 1024 + 1e-7);
      }
      EXPECT_NEAR(records.logsumexp[p], std::log(sum), 1e-5);
    }
  }
}

TEST(TeacherDump, SliceIsASelfContainedPartOfTheFullDump) {
  TempDir temp;
  const SyntheticLm lm(200, 9);
  const auto tokens = SyntheticTokens(4, 12, 200, 5);
  WriteCorpus(temp.path() / "corpus", tokens, 12, {});
  TeacherDumpOptions options{.teacher = "synthetic",
                             .corpus_dir = temp.path() / "corpus",
                             .out_dir = temp.path() / "full",
                             .top_k = 8,
                             .chunk_size = 4,
                             .forward = lm.Forward(),
                             .quiet = true};
  DumpTeacher(options);
  options.out_dir = temp.path() / "slice";
  options.seq_start = 1;
  options.seq_end = 3;
  DumpTeacher(options);
  const auto slice = ReferenceLogitsDump::Open(temp.path() / "slice");
  EXPECT_EQ(slice.n_seqs(), 2);
  EXPECT_EQ(slice.Tokens(0), ReferenceLogitsDump::Open(temp.path() / "full").Tokens(1));
  EXPECT_EQ(ReadBytes(temp.path() / "slice" / "seq-0.bin"),
            ReadBytes(temp.path() / "full" / "seq-1.bin"));
  EXPECT_EQ(ReadBytes(temp.path() / "slice" / "seq-1.bin"),
            ReadBytes(temp.path() / "full" / "seq-2.bin"));
  EXPECT_EQ(slice.manifest().notes.value_or(""), "sequences [1, 3) of a corpus of 4 sequences");
  options.seq_end = 5;
  options.out_dir = temp.path() / "bad";
  EXPECT_NE(
      testing::ErrorOf([&] { DumpTeacher(options); }).find("[1, 5) is not inside the corpus' 4"),
      std::string::npos);
}

TEST(TeacherDump, ResumeAfterAnInterruptionIsByteIdentical) {
  TempDir temp;
  const SyntheticLm lm(150, 11);
  const auto tokens = SyntheticTokens(4, 10, 150, 6);
  WriteCorpus(temp.path() / "corpus", tokens, 10, {});
  TeacherDumpOptions options{.teacher = "synthetic",
                             .corpus_dir = temp.path() / "corpus",
                             .out_dir = temp.path() / "whole",
                             .top_k = 6,
                             .chunk_size = 3,
                             .forward = lm.Forward(),
                             .quiet = true};
  DumpTeacher(options);
  // The interrupted run: the forward fails on the third sequence.
  int calls = 0;
  const TeacherForcedLogits good = lm.Forward();
  options.out_dir = temp.path() / "resumed";
  options.forward = [&](int64_t max_positions) {
    if (++calls == 3) throw Error("test", "interrupted");
    return good(max_positions);
  };
  EXPECT_NE(testing::ErrorOf([&] { DumpTeacher(options); }).find("interrupted"), std::string::npos);
  EXPECT_FALSE(fs::exists(options.out_dir / "manifest.json"));
  EXPECT_NE(testing::ErrorOf([&] { DumpTeacher(options); }).find("pass --resume"),
            std::string::npos);
  options.resume = true;
  // #18 class 9: a resume with another compute mode or KV scheme would mix two runs' records.
  options.runtime.compute = ops::ComputeMode::kBF16;
  EXPECT_NE(testing::ErrorOf([&] { DumpTeacher(options); }).find("other parameters"),
            std::string::npos);
  options.runtime.compute = ops::ComputeMode::kF32;
  options.runtime.kv = ParseKvScheme("affine:4");
  EXPECT_NE(testing::ErrorOf([&] { DumpTeacher(options); }).find("\"kv\": \"affine:4"),
            std::string::npos);
  options.runtime.kv = KvScheme{};
  const auto result = DumpTeacher(options);
  EXPECT_EQ(result.sequences_resumed, 2);
  EXPECT_EQ(result.positions_written, 2 * 9);
  for (const char* name : {"tokens.bin", "seq-0.bin", "seq-1.bin", "seq-2.bin", "seq-3.bin"}) {
    EXPECT_EQ(ReadBytes(temp.path() / "whole" / name), ReadBytes(options.out_dir / name)) << name;
  }
  // The floor of the kept sequences comes from their records read back: the same numbers.
  std::string why;
  const std::optional<KlEvalResult> whole = ReadDumpFloor(temp.path() / "whole", &why);
  const std::optional<KlEvalResult> resumed = ReadDumpFloor(options.out_dir, &why);
  ASSERT_TRUE(whole && resumed) << why;
  EXPECT_EQ(whole->sequence_mean_kl, resumed->sequence_mean_kl);
  EXPECT_EQ(whole->stats.kl.max, resumed->stats.kl.max);
  EXPECT_EQ(whole->stats.top1_agreement, resumed->stats.top1_agreement);
}

// The floor kept with the dump is the teacher scored against its dump by `kl`, number for number
// (the same forward, the same records, the same scorer), and it goes with its manifest only.
TEST(TeacherDump, TheFloorIsTheTeachersOwnKlAgainstTheDump) {
  TempDir temp;
  const SyntheticLm lm(150, 11);
  WriteCorpus(temp.path() / "corpus", SyntheticTokens(5, 12, 150, 6), 12, {});
  const TeacherDumpResult dumped = DumpTeacher({.teacher = "synthetic",
                                                .corpus_dir = temp.path() / "corpus",
                                                .out_dir = temp.path() / "dump",
                                                .top_k = 8,
                                                .chunk_size = 5,
                                                .forward = lm.Forward(),
                                                .quiet = true});
  ASSERT_TRUE(dumped.floor);
  std::string why;
  const std::optional<KlEvalResult> floor = ReadDumpFloor(temp.path() / "dump", &why);
  ASSERT_TRUE(floor) << why;
  const KlEvalResult kl = EvaluateKlVsReferenceLogits({.reference_dir = temp.path() / "dump",
                                                       .candidate = "synthetic",
                                                       .chunk_size = 5,
                                                       .forward = lm.Forward(),
                                                       .quiet = true});
  EXPECT_EQ(floor->sequence_mean_kl, kl.sequence_mean_kl);
  EXPECT_EQ(floor->sequence_top1, kl.sequence_top1);
  EXPECT_EQ(floor->stats.kl.mean, kl.stats.kl.mean);
  EXPECT_EQ(floor->stats.kl.standard_error, kl.stats.kl.standard_error);
  EXPECT_EQ(floor->stats.kl.p95, kl.stats.kl.p95);
  EXPECT_EQ(floor->stats.kl.max, kl.stats.kl.max);
  EXPECT_EQ(floor->stats.tail_kl.mean, kl.stats.tail_kl.mean);
  EXPECT_EQ(floor->stats.mean_mass, kl.stats.mean_mass);
  EXPECT_EQ(floor->stats.positions, 5 * 11);
  EXPECT_EQ(floor->label, kl.label);
  EXPECT_GT(floor->stats.kl.max, 0.0);  // fp16 storage costs something
  // The teacher against its floor is "at floor" (identical per-sequence values).
  const RowAgainstAbove vs = CompareWithFloor(*floor, kl);
  EXPECT_EQ(vs.verdict, "at floor");
  EXPECT_EQ(vs.difference, 0.0);
  const std::string table = FormatKlTable({kl}, &*floor);
  EXPECT_NE(table.find("floor (teacher vs its dump)"), std::string::npos) << table;
  EXPECT_NE(table.find("at floor"), std::string::npos) << table;
  // A rewritten manifest orphans the floor; a damaged floor file is an error naming it.
  {
    std::ofstream manifest(temp.path() / "dump" / "manifest.json", std::ios::app);
    manifest << " ";
  }
  EXPECT_FALSE(ReadDumpFloor(temp.path() / "dump", &why));
  EXPECT_NE(why.find("another manifest"), std::string::npos) << why;
  std::ofstream(temp.path() / "dump" / "floor.json") << "{\"something\": 1}";
  EXPECT_NE(testing::ErrorOf([&] {
              ReadDumpFloor(temp.path() / "dump", &why);
            }).find("not a dump floor file"),
            std::string::npos);
  fs::remove(temp.path() / "dump" / "floor.json");
  EXPECT_FALSE(ReadDumpFloor(temp.path() / "dump", &why));
  EXPECT_NE(why.find("has no floor.json"), std::string::npos) << why;
  // --no-floor writes none.
  DumpTeacher({.teacher = "synthetic",
               .corpus_dir = temp.path() / "corpus",
               .out_dir = temp.path() / "bare",
               .top_k = 8,
               .chunk_size = 5,
               .forward = lm.Forward(),
               .quiet = true,
               .floor = false});
  EXPECT_FALSE(fs::exists(temp.path() / "bare" / "floor.json"));
}

TEST(TeacherDump, TopKAboveTheVocabularyAndAVocabularyMismatchAreErrors) {
  TempDir temp;
  const SyntheticLm lm(50, 1);
  WriteCorpus(temp.path() / "corpus", SyntheticTokens(1, 6, 40, 1), 6, {{"vocab_size", 40}});
  TeacherDumpOptions options{.teacher = "synthetic",
                             .corpus_dir = temp.path() / "corpus",
                             .out_dir = temp.path() / "a",
                             .top_k = 8,
                             .forward = lm.Forward(),
                             .quiet = true};
  EXPECT_NE(testing::ErrorOf([&] { DumpTeacher(options); }).find("vocabulary of 40 but teacher"),
            std::string::npos);
  WriteCorpus(temp.path() / "corpus", SyntheticTokens(1, 6, 40, 1), 6, {});
  options.out_dir = temp.path() / "b";
  options.top_k = 60;
  EXPECT_NE(testing::ErrorOf([&] { DumpTeacher(options); }).find("--top-k 60 exceeds"),
            std::string::npos);
}

fs::path Stories260K() {
  const char* env = std::getenv("PROCTOR_FIXTURES");
  return fs::path(env ? env : PROCTOR_FIXTURES_DEFAULT) / "stories260K" / "stories260K.gguf";
}

// A model on disk is opened before anything is written: a --top-k above its vocabulary becomes
// the whole vocabulary, with a note; the dump then holds every logit, so scoring the teacher
// against it gives a tail-aware KL equal to the KL and a captured mass of 1 (to fp16 rounding).
// A teacher that does not open leaves no output directory behind.
TEST(TeacherDump, TopKAboveARealModelsVocabularyKeepsTheWholeDistribution) {
  if (!fs::exists(Stories260K())) GTEST_SKIP() << "fixture absent: " << Stories260K();
  TempDir temp;
  WriteCorpus(temp.path() / "corpus", RandomTokens(2 * 32, 512, 5), 32, {{"vocab_size", 512}});
  const TeacherDumpResult r = DumpTeacher({.teacher = Stories260K().string(),
                                           .corpus_dir = temp.path() / "corpus",
                                           .out_dir = temp.path() / "dump",
                                           .top_k = 5000,
                                           .quiet = true});
  EXPECT_EQ(r.top_k, 512);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("--top-k 5000 is above the teacher's vocabulary of 512"),
            std::string::npos)
      << r.notes[0];
  EXPECT_EQ(ReferenceLogitsDump::Open(temp.path() / "dump").top_k(), 512);
  const KlEvalResult self = EvaluateKlVsReferenceLogits(
      {.reference_dir = temp.path() / "dump", .candidate = Stories260K().string(), .quiet = true});
  EXPECT_EQ(self.stats.tail_kl.mean, self.stats.kl.mean);
  EXPECT_NEAR(self.stats.mean_mass, 1.0, 1e-3);
  EXPECT_ANY_THROW(DumpTeacher({.teacher = (temp.path() / "missing").string(),
                                .corpus_dir = temp.path() / "corpus",
                                .out_dir = temp.path() / "never",
                                .quiet = true}));
  EXPECT_FALSE(fs::exists(temp.path() / "never"));
}

// Self-scoring: the engine's dump of stories260K scored with the same engine at the same chunk
// size gives top-1 agreement exactly 1 and KL at the fp16 storage floor.
TEST(TeacherDump, Stories260KSelfScoringIsAtTheFp16Floor) {
  if (!fs::exists(Stories260K())) GTEST_SKIP() << "fixture absent: " << Stories260K();
  TempDir temp;
  WriteCorpus(temp.path() / "corpus", RandomTokens(3 * 64, 512, 4), 64, {{"vocab_size", 512}});
  DumpTeacher({.teacher = Stories260K().string(),
               .corpus_dir = temp.path() / "corpus",
               .out_dir = temp.path() / "dump",
               .top_k = 64,
               .chunk_size = 16,
               .quiet = true});
  KlEvalOptions kl{.reference_dir = temp.path() / "dump",
                   .candidate = Stories260K().string(),
                   .chunk_size = 16,
                   .quiet = true};
  const KlEvalResult same = EvaluateKlVsReferenceLogits(kl);
  EXPECT_EQ(same.stats.top1_agreement, 1.0);
  EXPECT_EQ(same.stats.positions, 3 * 63);
  // The floor: each stored logit is off by at most half its fp16 spacing, so a position's KL is
  // at most sum_j p_j * spacing_j / 2 (to first order; 1.01 covers the second).
  const auto dump = ReferenceLogitsDump::Open(temp.path() / "dump");
  ReferenceRecords records;
  double bound_sum = 0, bound_max = 0;
  for (int64_t s = 0; s < 3; ++s) {
    dump.ReadRecords(s, 0, 63, &records);
    for (int64_t p = 0; p < 63; ++p) {
      double bound = 0;
      for (int64_t j = 0; j < 64; ++j) {
        bound += std::exp(double{records.Logits(p)[j]} - records.logsumexp[p]) *
                 HalfF16Spacing(records.Logits(p)[j]);
      }
      bound_sum += bound;
      bound_max = std::max(bound_max, bound);
    }
  }
  EXPECT_LE(std::abs(same.stats.kl.mean), 1.01 * bound_sum / (3 * 63));
  EXPECT_LE(same.stats.kl.max, 1.01 * bound_max);
  kl.chunk_size = 7;
  const KlEvalResult other = EvaluateKlVsReferenceLogits(kl);
  EXPECT_EQ(other.stats.top1_agreement, 1.0);
  EXPECT_LE(other.stats.kl.max, 1.01 * bound_max + 1e-6);
  fmt::print(
      "stories260K self-scoring, top-64, chunk 16: mean KL {:.3e} max {:.3e} top1 {}; "
      "scored at chunk 7: mean KL {:.3e} max {:.3e} top1 {}; fp16 bound mean {:.3e} max {:.3e}\n",
      same.stats.kl.mean, same.stats.kl.max, same.stats.top1_agreement, other.stats.kl.mean,
      other.stats.kl.max, other.stats.top1_agreement, bound_sum / (3 * 63), bound_max);
}

int RunProctor(const std::vector<std::string>& args) {
  std::string command = PROCTOR_BIN;
  for (const auto& a : args) command += " " + a;
  return std::system((command + " >/dev/null 2>&1").c_str());
}

// A real interruption: `proctor dump` is SIGKILLed once its first sequence file is committed,
// resumed with --resume, and compared byte for byte with an uninterrupted dump.
TEST(TeacherDump, SigkilledDumpResumesToTheSameBytes) {
  if (!fs::exists(PROCTOR_BIN)) GTEST_SKIP() << PROCTOR_BIN << " is not built";
  if (!fs::exists(Stories260K())) GTEST_SKIP() << "fixture absent: " << Stories260K();
  TempDir temp;
  const int64_t n_seqs = 300, ctx = 128;
  WriteCorpus(temp.path() / "corpus", RandomTokens(n_seqs * ctx, 512, 8), ctx, {});
  const std::vector<std::string> common = {"--quiet",   "--threads",
                                           "1",         "dump",
                                           "--teacher", Stories260K().string(),
                                           "--corpus",  (temp.path() / "corpus").string(),
                                           "--top-k",   "32",
                                           "--chunk",   "48",
                                           "--out"};
  auto with_out = [&](const fs::path& out) {
    auto args = common;
    args.push_back(out.string());
    return args;
  };
  const fs::path killed = temp.path() / "killed";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::vector<std::string> args = with_out(killed);
    std::vector<char*> argv = {const_cast<char*>(PROCTOR_BIN)};
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(PROCTOR_BIN, argv.data());
    ::_exit(127);
  }
  while (!fs::exists(killed / "seq-0.bin")) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) FAIL() << "proctor dump exited early";
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  ASSERT_FALSE(fs::exists(killed / "manifest.json")) << "the dump finished before the kill";
  ASSERT_FALSE(fs::exists(killed / fmt::format("seq-{}.bin", n_seqs - 1)));
  EXPECT_NE(RunProctor(with_out(killed)), 0);  // without --resume: refused
  auto resume = with_out(killed);
  resume.push_back("--resume");
  ASSERT_EQ(RunProctor(resume), 0);
  ASSERT_EQ(RunProctor(with_out(temp.path() / "whole")), 0);
  EXPECT_EQ(ReadBytes(killed / "tokens.bin"), ReadBytes(temp.path() / "whole" / "tokens.bin"));
  for (int64_t s = 0; s < n_seqs; ++s) {
    const auto name = fmt::format("seq-{}.bin", s);
    ASSERT_EQ(ReadBytes(killed / name), ReadBytes(temp.path() / "whole" / name)) << name;
  }
  // The manifests differ only in "created" (kept from the interrupted run).
  auto a = nlohmann::json::parse(ReadBytes(killed / "manifest.json"));
  auto b = nlohmann::json::parse(ReadBytes(temp.path() / "whole" / "manifest.json"));
  a.erase("created");
  b.erase("created");
  EXPECT_EQ(a, b);
  // The floors too, each belonging to its own manifest (whose "created" can differ).
  std::string why;
  EXPECT_TRUE(ReadDumpFloor(killed, &why)) << why;
  auto floor_a = nlohmann::json::parse(ReadBytes(killed / "floor.json"));
  auto floor_b = nlohmann::json::parse(ReadBytes(temp.path() / "whole" / "floor.json"));
  for (const char* key : {"sequence_mean_kl", "sequence_top1", "kl", "tail_kl", "positions"}) {
    EXPECT_EQ(floor_a["floor"][key], floor_b["floor"][key]) << key;
  }
  // tokens.bin, manifest.json, floor.json and the sequence files: nothing else.
  EXPECT_EQ(std::distance(fs::directory_iterator(killed), fs::directory_iterator()), n_seqs + 3);
}

}  // namespace
}  // namespace proctor
