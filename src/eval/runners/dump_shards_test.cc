// Tests of the sharded dump and its merge: for 1, 2, 3 and 7 shards of 5 sequences (more shards
// than sequences too) the merged directory is the unsharded dump's file for file and byte for
// byte, floor.json included; a finished shard is kept on rerun, an interrupted one resumes to the
// same bytes; bad shard sets are refused, naming the directory, and nothing is written.
#include "eval/runners/dump_shards.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "eval/demo/synthetic_lm.h"
#include "eval/formats/corpus.h"
#include "eval/runners/dump_floor.h"
#include "eval/testing_dumps.h"
#include "util/error.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;
using testing::ReadBytes;
using testing::TempDir;

constexpr int64_t kVocab = 150;
constexpr int64_t kSeqs = 5;
constexpr int64_t kCtx = 12;

// Every file of a directory by name, with its bytes.
std::map<std::string, std::string> DirectoryBytes(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    files[entry.path().filename().string()] = ReadBytes(entry.path());
  }
  return files;
}

struct ShardedRun {
  TempDir temp;
  SyntheticLm lm{kVocab, 11};
  TeacherDumpOptions options;

  ShardedRun() {
    WriteCorpus(temp.path() / "corpus", SyntheticTokens(kSeqs, kCtx, kVocab, 6), kCtx, {});
    options = {.teacher = "synthetic",
               .corpus_dir = temp.path() / "corpus",
               .top_k = 8,
               .chunk_size = 5,
               .created = "2026-12-06T00:00:00Z",
               .forward = lm.Forward(),
               .quiet = true};
  }
  // The shards of an N-way run in temp/<name>-<i>.
  std::vector<fs::path> DumpShards(int64_t n, const std::string& name) {
    std::vector<fs::path> dirs;
    for (int64_t i = 0; i < n; ++i) {
      TeacherDumpOptions shard = options;
      shard.out_dir = temp.path() / fmt::format("{}-{}", name, i);
      DumpTeacherShard(shard, {.index = i, .count = n});
      dirs.push_back(shard.out_dir);
    }
    return dirs;
  }
};

TEST(DumpShards, MergedShardsAreTheUnshardedDumpByteForByte) {
  ShardedRun run;
  // The unsharded dump, moved aside: the merge writes to the same path (floor.json names it).
  const fs::path dump = run.temp.path() / "dump";
  TeacherDumpOptions whole = run.options;
  whole.out_dir = dump;
  DumpTeacher(whole);
  const fs::path kept = run.temp.path() / "unsharded";
  fs::rename(dump, kept);
  const auto expected = DirectoryBytes(kept);
  ASSERT_EQ(expected.size(), 3 + kSeqs);  // manifest, tokens, floor and the sequences
  for (int64_t n : {1, 2, 3, 7}) {
    const std::vector<fs::path> shards = run.DumpShards(n, fmt::format("n{}", n));
    // Any order.
    std::vector<fs::path> given(shards.rbegin(), shards.rend());
    const DumpMergeResult merged = MergeDumpShards(dump, given);
    EXPECT_EQ(merged.shards, n);
    EXPECT_EQ(merged.n_seqs, kSeqs);
    EXPECT_EQ(merged.positions, kSeqs * (kCtx - 1));
    ASSERT_TRUE(merged.floor);
    const auto got = DirectoryBytes(dump);
    ASSERT_EQ(got.size(), expected.size()) << n << " shards";
    for (const auto& [name, bytes] : expected) {
      ASSERT_TRUE(got.contains(name)) << name << " missing with " << n << " shards";
      EXPECT_EQ(got.at(name), bytes) << name << " differs with " << n << " shards";
    }
    fs::remove_all(dump);
  }
  // 7 shards of 5 sequences: shards 0 and 3 are empty and hold only their record.
  EXPECT_FALSE(fs::exists(run.temp.path() / "n7-0" / "manifest.json"));
  EXPECT_TRUE(fs::exists(run.temp.path() / "n7-0" / kDumpShardFile));
}

TEST(DumpShards, AFinishedShardIsKeptAndAnInterruptedOneResumes) {
  ShardedRun run;
  const std::vector<fs::path> clean = run.DumpShards(2, "clean");
  // Rerun: nothing is dumped again, nothing changes.
  const auto before = DirectoryBytes(clean[1]);
  TeacherDumpOptions again = run.options;
  again.out_dir = clean[1];
  const DumpShardResult rerun = DumpTeacherShard(again, {.index = 1, .count = 2});
  EXPECT_TRUE(rerun.already_done);
  EXPECT_FALSE(rerun.dump);
  EXPECT_EQ(DirectoryBytes(clean[1]), before);
  // The same directory for another shard or another run is refused.
  EXPECT_NE(testing::ErrorOf([&] {
              DumpTeacherShard(again, {.index = 0, .count = 2});
            }).find("holds shard 1/2 of another run (shard 1/2 vs 0/2)"),
            std::string::npos);
  again.top_k = 9;
  EXPECT_NE(testing::ErrorOf([&] {
              DumpTeacherShard(again, {.index = 1, .count = 2});
            }).find("top_k: 8 vs 9"),
            std::string::npos);
  // An interrupted shard: the forward fails on its second sequence; the rerun continues it.
  int calls = 0;
  const TeacherForcedLogits good = run.lm.Forward();
  TeacherDumpOptions interrupted = run.options;
  interrupted.out_dir = run.temp.path() / "interrupted-1";
  interrupted.floor = true;
  interrupted.forward = [&](int64_t max_positions) {
    if (++calls == 2) throw Error("test", "interrupted");
    return good(max_positions);
  };
  EXPECT_NE(testing::ErrorOf([&] {
              DumpTeacherShard(interrupted, {.index = 1, .count = 2});
            }).find("interrupted"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(interrupted.out_dir / kDumpShardFile));
  const DumpShardResult resumed = DumpTeacherShard(interrupted, {.index = 1, .count = 2});
  ASSERT_TRUE(resumed.dump);
  EXPECT_EQ(resumed.dump->sequences_resumed, 1);
  // The same files and bytes; floor.json names its directory, so its numbers are compared.
  auto resumed_bytes = DirectoryBytes(interrupted.out_dir);
  auto clean_bytes = before;
  EXPECT_EQ(resumed_bytes.extract("floor.json").empty(), false);
  clean_bytes.erase("floor.json");
  EXPECT_EQ(resumed_bytes, clean_bytes);
  std::string why;
  EXPECT_EQ(ReadDumpFloor(interrupted.out_dir, &why)->sequence_mean_kl,
            ReadDumpFloor(clean[1], &why)->sequence_mean_kl);
  // --seq-start/--seq-end do not go with a shard.
  TeacherDumpOptions sliced = run.options;
  sliced.out_dir = run.temp.path() / "sliced";
  sliced.seq_end = 3;
  EXPECT_NE(testing::ErrorOf([&] {
              DumpTeacherShard(sliced, {.index = 0, .count = 2});
            }).find("cannot be combined with --seq-start 0 / --seq-end 3"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(sliced.out_dir));
}

TEST(DumpShards, MergeRefusesShardsThatAreNotOneRunAndWritesNothing) {
  ShardedRun run;
  const std::vector<fs::path> three = run.DumpShards(3, "three");
  const fs::path out = run.temp.path() / "merged";
  auto refusal = [&](const std::vector<fs::path>& dirs) {
    std::string error = testing::ErrorOf([&] { MergeDumpShards(out, dirs); });
    EXPECT_FALSE(fs::exists(out)) << error;
    return error;
  };
  EXPECT_NE(refusal({three[0], three[2]}).find("shard(s) 1/3 missing: 2 of 3 given"),
            std::string::npos);
  EXPECT_NE(refusal({three[0], three[1], three[1], three[2]}).find("shard 1/3 is given twice"),
            std::string::npos);
  const std::vector<fs::path> two = run.DumpShards(2, "two");
  EXPECT_NE(refusal({three[0], three[1], two[1]}).find("one run has one shard count"),
            std::string::npos);
  run.options.chunk_size = 4;
  const std::vector<fs::path> other = run.DumpShards(3, "other");
  EXPECT_NE(refusal({three[0], other[1], three[2]}).find("chunk_size: 4 vs 5"), std::string::npos);
  EXPECT_NE(refusal({three[0], run.temp.path() / "corpus", three[2]}).find("has no shard.json"),
            std::string::npos);
  // A shard whose dump changed after it finished.
  const fs::path manifest = three[1] / "manifest.json";
  const std::string text = ReadBytes(manifest);
  testing::WriteBytes(manifest, text + " ");
  EXPECT_NE(refusal(three).find("changed after shard 1/3 finished"), std::string::npos);
  testing::WriteBytes(manifest, text);
  // The output must be new or empty.
  fs::create_directories(out);
  testing::WriteBytes(out / "something", "x");
  EXPECT_NE(
      testing::ErrorOf([&] { MergeDumpShards(out, three); }).find("is not an empty directory"),
      std::string::npos);
  fs::remove_all(out);
  EXPECT_EQ(MergeDumpShards(out, three).n_seqs, kSeqs);
}

}  // namespace
}  // namespace proctor
