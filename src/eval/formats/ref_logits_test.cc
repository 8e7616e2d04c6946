// The reference-logits reader's validations (one test each, every error names the file) and
// the writer: layout, shift, atomicity and resume after a kill.
#include "eval/formats/ref_logits.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <cmath>
#include <cstring>

#include "eval/formats/ref_logits_writer.h"
#include "eval/testing_dumps.h"
#include "util/error.h"

namespace proctor {
namespace {

using testing::ReadBytes;
using testing::TempDir;
using testing::TinyCase;
using testing::WriteBytes;

// Expects Open(dir) (or fn) to throw an Error whose message contains every fragment.
template <typename Fn>
void ExpectErrorContaining(Fn fn, std::vector<std::string> fragments) {
  try {
    fn();
    FAIL() << "expected an error containing " << fragments.front();
  } catch (const Error& e) {
    for (const auto& f : fragments)
      EXPECT_NE(std::string(e.what()).find(f), std::string::npos)
          << "message: " << e.what() << "\nmissing: " << f;
  }
}

void ExpectOpenError(const std::filesystem::path& dir, std::vector<std::string> fragments) {
  ExpectErrorContaining([&] { ReferenceLogitsDump::Open(dir); }, std::move(fragments));
}

class Reader : public ::testing::Test {
 protected:
  void SetUp() override { TinyCase().WriteDump(dir()); }
  const std::filesystem::path& dir() const { return temp_.path(); }
  std::filesystem::path File(const std::string& name) const { return dir() / name; }
  void EditManifest(const std::string& from, const std::string& to) {
    std::string text = ReadBytes(File("manifest.json"));
    const auto at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    WriteBytes(File("manifest.json"), text);
  }
  TempDir temp_;
};

TEST_F(Reader, OpensAValidDump) {
  const auto dump = ReferenceLogitsDump::Open(dir());
  EXPECT_EQ(dump.positions(), 5);
  EXPECT_EQ(dump.top_k(), 4);
  EXPECT_EQ(dump.record_bytes(), 28u);
  EXPECT_TRUE(dump.warnings().empty());
  EXPECT_EQ(dump.Label(), fmt::format("ref-logits:tiny-teacher top4 ({})", dir().string()));
  const TinyCase c;
  EXPECT_EQ(dump.Tokens(1), std::vector<int32_t>(c.tokens.begin() + 6, c.tokens.end()));
}

TEST_F(Reader, MissingManifest) {
  std::filesystem::remove(File("manifest.json"));
  ExpectOpenError(dir(), {File("manifest.json").string(), "not a complete"});
}

TEST_F(Reader, WrongFormatVersion) {
  EditManifest("\"format_version\": 1", "\"format_version\": 2");
  ExpectOpenError(
      dir(), {File("manifest.json").string(), "format_version 2", "implements format_version 1"});
}

TEST_F(Reader, NonPositiveFields) {
  for (const std::string field : {"ctx_len", "n_seqs", "top_k"}) {
    TempDir other;
    TinyCase().WriteDump(other.path());
    auto path = other.path() / "manifest.json";
    std::string text = ReadBytes(path);
    const auto at = text.find("\"" + field + "\": ");
    const auto end = text.find(',', at);
    text.replace(at, end - at, "\"" + field + "\": " + (field == "n_seqs" ? "-1" : "0"));
    WriteBytes(path, text);
    ExpectOpenError(other.path(), {path.string(), field, "positive integer"});
  }
  EditManifest("\"top_k\": 4", "\"top_k\": \"4\"");
  ExpectOpenError(dir(), {File("manifest.json").string(), "top_k", "\"4\""});
}

TEST_F(Reader, WrongTokensSize) {
  WriteBytes(File("tokens.bin"), ReadBytes(File("tokens.bin")) + "xx");
  ExpectOpenError(dir(),
                  {File("tokens.bin").string(), "50 bytes", "n_seqs 2 x ctx_len 6", "exactly 48"});
}

TEST_F(Reader, SequenceFileNotAMultipleOfTheRecordSize) {
  WriteBytes(File("seq-0.bin"), ReadBytes(File("seq-0.bin")).substr(0, 5 * 28 - 3));
  ExpectOpenError(dir(), {File("seq-0.bin").string(), "137 bytes", "record size 28"});
}

TEST_F(Reader, TooManyRecords) {
  const std::string bytes = ReadBytes(File("seq-0.bin"));
  WriteBytes(File("seq-0.bin"), bytes + bytes.substr(0, 28));
  ExpectOpenError(dir(), {File("seq-0.bin").string(), "6 records", "ctx_len 6", "at most 5"});
}

// #18 class 6: a dump whose sequence files hold no record was scored into a table of zeros.
TEST_F(Reader, ADumpWithoutRecordsIsRefused) {
  WriteBytes(File("seq-0.bin"), "");
  WriteBytes(File("seq-1.bin"), "");
  ExpectOpenError(dir(), {File("seq-0.bin").string(), "holds no records"});
}

TEST_F(Reader, ShortLaterSequenceFile) {
  WriteBytes(File("seq-1.bin"), ReadBytes(File("seq-1.bin")).substr(0, 4 * 28));
  ExpectOpenError(dir(), {File("seq-1.bin").string(), "4 records", "holds 5 records"});
  std::filesystem::remove(File("seq-1.bin"));
  ExpectOpenError(dir(), {File("seq-1.bin").string(), "missing"});
}

TEST_F(Reader, PositionsPerSeqDisagreementIsAWarning) {
  EditManifest("\"positions_per_seq\": 5", "\"positions_per_seq\": 7");
  const auto dump = ReferenceLogitsDump::Open(dir());
  ASSERT_EQ(dump.warnings().size(), 1u);
  EXPECT_NE(dump.warnings()[0].find("positions_per_seq 7"), std::string::npos);
  EXPECT_EQ(dump.positions(), 5);
}

TEST_F(Reader, OutOfRangeSequenceAndRecords) {
  const auto dump = ReferenceLogitsDump::Open(dir());
  ReferenceRecords records;
  ExpectErrorContaining([&] { dump.ReadRecords(2, 0, 1, &records); },
                        {dir().string(), "sequence 2", "n_seqs 2"});
  ExpectErrorContaining([&] { dump.ReadRecords(-1, 0, 1, &records); }, {dir().string()});
  ExpectErrorContaining([&] { dump.ReadRecords(0, 3, 6, &records); },
                        {File("seq-0.bin").string(), "[3, 6)", "5 records"});
  ExpectErrorContaining([&] { dump.Tokens(7); }, {dir().string(), "sequence 7"});
}

TEST_F(Reader, ShortReadAfterOpen) {
  const auto dump = ReferenceLogitsDump::Open(dir());
  WriteBytes(File("seq-1.bin"), ReadBytes(File("seq-1.bin")).substr(0, 2 * 28));
  ReferenceRecords records;
  ExpectErrorContaining([&] { dump.ReadRecords(1, 1, 5, &records); },
                        {File("seq-1.bin").string(), "short read"});
}

TEST_F(Reader, RecordsHoldTheShiftedTopKAndLogsumexp) {
  const TinyCase c;
  const auto dump = ReferenceLogitsDump::Open(dir());
  ReferenceRecords records;
  dump.ReadRecords(1, 1, 4, &records);  // one positioned read of three records
  ASSERT_EQ(records.count, 3);
  for (int64_t r = 0; r < 3; ++r) {
    const float* row = c.TeacherRow(1, 1 + r);
    std::vector<int32_t> order(12);
    for (int i = 0; i < 12; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return row[a] > row[b]; });
    const float max = row[order[0]];
    double sum = 0;
    for (int i = 0; i < 12; ++i) sum += std::exp(static_cast<double>(row[i]) - max);
    for (int j = 0; j < 4; ++j) {
      EXPECT_EQ(records.Indices(r)[j], order[j]);
      EXPECT_EQ(records.Logits(r)[j], RoundToF16(row[order[j]] - max));
    }
    EXPECT_EQ(records.Logits(r)[0], 0.0f) << "the top logit is stored as 0";
    EXPECT_NEAR(records.logsumexp[r], std::log(sum), 1e-6);
  }
}

TEST(Writer, AppendTopKStoresShiftedValuesAndValidates) {
  TempDir temp;
  const std::vector<int32_t> tokens = {1, 2, 3};
  ReferenceLogitsWriter writer({.dir = temp.path(),
                                .model = "m",
                                .corpus_sha256 = "c",
                                .ctx_len = 3,
                                .n_seqs = 1,
                                .top_k = 2,
                                .created = "t"},
                               tokens);
  writer.BeginSequence(0);
  writer.AppendTopK(std::vector<int32_t>{7, 3}, std::vector<float>{20.0f, 18.5f}, 21.0f);
  EXPECT_THROW(writer.AppendTopK(std::vector<int32_t>{7, 7}, std::vector<float>{2, 1}, 3), Error);
  EXPECT_THROW(writer.AppendTopK(std::vector<int32_t>{1, 2}, std::vector<float>{1, 2}, 3), Error);
  EXPECT_THROW(writer.AppendTopK(std::vector<int32_t>{1, 2}, std::vector<float>{2, 1}, 1), Error);
  writer.AppendTopK(std::vector<int32_t>{0, 5}, std::vector<float>{-1.0f, -1.0f}, 0.0f);
  writer.EndSequence();
  writer.Finish();
  EXPECT_FALSE(std::filesystem::exists(temp.path() / ".in-progress.json"));
  const auto dump = ReferenceLogitsDump::Open(temp.path());
  ReferenceRecords records;
  dump.ReadRecords(0, 0, 2, &records);
  EXPECT_EQ(records.Indices(0)[0], 7);
  EXPECT_EQ(records.Logits(0)[0], 0.0f);
  EXPECT_EQ(records.Logits(0)[1], -1.5f);
  EXPECT_EQ(records.logsumexp[0], 1.0f);
  EXPECT_EQ(records.logsumexp[1], 1.0f);
}

TEST(Writer, RefusesANonEmptyDirectoryAndOtherParametersOnResume) {
  TempDir temp;
  WriteBytes(temp.path() / "other.txt", "x");
  const std::vector<int32_t> tokens = {1, 2, 3};
  ReferenceLogitsWriterOptions options{.dir = temp.path(),
                                       .model = "m",
                                       .corpus_sha256 = "c",
                                       .ctx_len = 3,
                                       .n_seqs = 1,
                                       .top_k = 2};
  ExpectErrorContaining([&] { ReferenceLogitsWriter w(options, tokens); },
                        {temp.path().string(), "not empty"});
  std::filesystem::remove(temp.path() / "other.txt");
  { ReferenceLogitsWriter started(options, tokens); }  // interrupted before any sequence
  options.top_k = 3;
  ExpectErrorContaining([&] { ReferenceLogitsWriter w(options, tokens); },
                        {temp.path().string(), "other parameters"});
}

std::map<std::string, std::string> DirectoryBytes(const std::filesystem::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    files[e.path().filename().string()] = ReadBytes(e.path());
  }
  return files;
}

TEST(Writer, KilledMidDumpThenResumedGivesAByteIdenticalDump) {
  const TinyCase c(99);
  TempDir whole, resumed;
  c.WriteDump(whole.path(), "fixed");
  const auto write = [&](bool die_midway) {
    ReferenceLogitsWriter writer({.dir = resumed.path(),
                                  .model = "tiny-teacher",
                                  .corpus_sha256 = "00",
                                  .ctx_len = c.ctx_len,
                                  .n_seqs = c.n_seqs,
                                  .top_k = c.top_k,
                                  .created = "fixed"},
                                 c.tokens);
    for (int64_t s = 0; s < c.n_seqs; ++s) {
      if (writer.SequenceDone(s)) continue;
      writer.BeginSequence(s);
      for (int64_t p = 0; p < writer.positions(); ++p) {
        if (die_midway && s == 1 && p == 2) ::kill(::getpid(), SIGKILL);
        writer.AppendLogitsRow(std::span<const float>(c.TeacherRow(s, p), c.vocab));
      }
      writer.EndSequence();
    }
    writer.Finish();
  };
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    write(true);
    ::_exit(0);  // not reached
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  // The killed run left seq-0.bin complete, seq-1's temporary file, and no manifest.
  EXPECT_TRUE(std::filesystem::exists(resumed.path() / "seq-0.bin"));
  EXPECT_FALSE(std::filesystem::exists(resumed.path() / "seq-1.bin"));
  EXPECT_FALSE(std::filesystem::exists(resumed.path() / "manifest.json"));
  EXPECT_THROW(ReferenceLogitsDump::Open(resumed.path()), Error);
  write(false);
  EXPECT_EQ(DirectoryBytes(resumed.path()), DirectoryBytes(whole.path()));
}

}  // namespace
}  // namespace proctor
