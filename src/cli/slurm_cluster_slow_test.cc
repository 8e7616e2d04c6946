// `proctor slurm --submit` on a real Slurm cluster: one node started from Debian's slurmctld,
// slurmd and munge by tools/slurm/local_cluster.sh (as root, in a temporary directory, stopped
// after each test). A sharded dump and a sharded kl of stories260K go through job arrays and their
// merge jobs, and the merged results are the unsharded runs' (the dump byte for byte, every kl
// statistic); a task killed mid-run (scancel) and requeued completes the merge with nothing lost.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli_test_support.h"  // same folder: cli_slow_test has no src/ include path

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using proctor::cli_test::Fixtures;
using proctor::cli_test::Result;
using proctor::cli_test::RunShell;
using proctor::cli_test::TempPath;

fs::path Stories260K() { return Fixtures() / "stories260K" / "stories260K.gguf"; }
fs::path TinyStories() { return Fixtures() / "tinystories" / "tinystories_sample.txt"; }

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

json ReadJson(const fs::path& path) { return json::parse(ReadFile(path)); }

// The value after "key=" on a line of `text` ("" when absent).
std::string Field(const std::string& text, const std::string& key) {
  std::smatch match;
  const std::regex pattern(key + "=([^\\s]+)");
  return std::regex_search(text, match, pattern) ? match[1].str() : "";
}

class LocalSlurm : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) {
      GTEST_SKIP() << "starting slurmctld and slurmd needs root (CI runs the tests as root)";
    }
    if (!fs::exists(Stories260K())) GTEST_SKIP() << "fixture absent: " << Stories260K();
    dir_ = TempPath("slurm");
    fs::create_directories(dir_);
    cluster_ = dir_ / "cluster";
    const Result r = RunShell(fmt::format("bash {}/tools/slurm/local_cluster.sh start {} 4 2>&1",
                                          PROCTOR_SOURCE_DIR, cluster_.string()));
    ASSERT_EQ(r.status, 0) << r.out;
    started_ = true;
    ::setenv("SLURM_CONF", (cluster_ / "slurm.conf").c_str(), 1);
  }

  void TearDown() override {
    if (started_) {
      if (HasFailure()) {
        std::cerr << RunShell(fmt::format("squeue; tail -n 30 {0}/slurmctld.log {0}/slurmd.log; "
                                          "tail -n 20 {1}/*.shards/slurm-*.out 2>&1",
                                          cluster_.string(), dir_.string()))
                         .out;
      }
      RunShell(fmt::format("bash {}/tools/slurm/local_cluster.sh stop {} 2>&1", PROCTOR_SOURCE_DIR,
                           cluster_.string()));
      ::unsetenv("SLURM_CONF");
    }
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  // proctor ARGS in the test's directory, stderr merged.
  Result Proctor(const std::string& args) {
    return RunShell(fmt::format("cd {} && {} {} 2>&1", dir_.string(), PROCTOR_BIN, args));
  }

  // A job's (or array task's) state as `scontrol show job` says, and its Reason.
  std::pair<std::string, std::string> JobState(const std::string& id) {
    const std::string out = RunShell(fmt::format("scontrol show job -o {} 2>&1", id)).out;
    return {Field(out, "JobState"), Field(out, "Reason")};
  }

  // Waits until the job ends (or can never start), at most `seconds`; its final state.
  std::string WaitForJob(const std::string& id, int seconds = 600) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (std::chrono::steady_clock::now() < deadline) {
      const auto [state, reason] = JobState(id);
      if (state == "COMPLETED" || state == "FAILED" || state == "CANCELLED" || state == "TIMEOUT" ||
          state == "OUT_OF_MEMORY" || state == "NODE_FAIL" ||
          reason == "DependencyNeverSatisfied") {
        return state +
               (reason == "DependencyNeverSatisfied" ? " (dependency never satisfied)" : "");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return "still running after " + std::to_string(seconds) + " s";
  }

  // A dump's files compared with another's: every sequence file and tokens.bin byte for byte,
  // the manifest but for `created`, the floor number for number.
  void ExpectSameDump(const fs::path& got, const fs::path& expected, int64_t n_seqs) {
    EXPECT_TRUE(ReadFile(got / "tokens.bin") == ReadFile(expected / "tokens.bin"));
    for (int64_t s = 0; s < n_seqs; ++s) {
      const std::string name = fmt::format("seq-{}.bin", s);
      EXPECT_TRUE(ReadFile(got / name) == ReadFile(expected / name)) << name;
    }
    json a = ReadJson(got / "manifest.json"), b = ReadJson(expected / "manifest.json");
    a.erase("created");
    b.erase("created");
    EXPECT_EQ(a, b);
    EXPECT_EQ(ReadJson(got / "floor.json")["floor"], ReadJson(expected / "floor.json")["floor"]);
  }

  fs::path dir_, cluster_;
  bool started_ = false;
};

TEST_F(LocalSlurm, ShardedDumpAndKlRunAsJobArraysAndMergeToTheUnshardedRuns) {
  Result r = Proctor(fmt::format("-q corpus --tokenizer {} --out corpus --ctx-len 32 --n-seqs 7 {}",
                                 Stories260K().string(), TinyStories().string()));
  ASSERT_EQ(r.status, 0) << r.out;
  const std::string dump_args = fmt::format(
      "dump --teacher {} --corpus corpus --out dump --top-k 16 "
      "--chunk 8 -q",
      Stories260K().string());
  r = Proctor("-t 2 " + dump_args);  // the tasks' thread count (the floor records it)
  ASSERT_EQ(r.status, 0) << r.out;
  fs::rename(dir_ / "dump", dir_ / "unsharded-dump");  // the merge writes the same path
  r = Proctor("slurm --shards 3 --cpus-per-task 2 --submit -- " + dump_args);
  ASSERT_EQ(r.status, 0) << r.out;
  const std::string array = Field(r.out, "array_job_id"), merge = Field(r.out, "merge_job_id");
  ASSERT_FALSE(array.empty() || merge.empty()) << r.out;
  ASSERT_EQ(WaitForJob(merge), "COMPLETED");
  ExpectSameDump(dir_ / "dump", dir_ / "unsharded-dump", 7);
  // Each task ran its shard with the allocation's threads.
  const json shard = ReadJson(dir_ / "dump.shards" / "part-1" / "shard.json");
  EXPECT_EQ(shard["shard"]["seq_start"], 2);
  EXPECT_EQ(shard["shard"]["seq_end"], 4);

  const std::string kl_args = fmt::format(
      "kl --reference-logits dump --candidate {} --chunk 8 "
      "--compute bf16",
      Stories260K().string());
  r = Proctor(fmt::format("-q -t 2 {} --json unsharded-kl.json", kl_args));
  ASSERT_EQ(r.status, 0) << r.out;
  r = Proctor(
      fmt::format("slurm --shards 3 --cpus-per-task 2 --submit -- {} --json kl.json", kl_args));
  ASSERT_EQ(r.status, 0) << r.out;
  ASSERT_EQ(WaitForJob(Field(r.out, "merge_job_id")), "COMPLETED");
  const json whole = ReadJson(dir_ / "unsharded-kl.json");
  const json merged = ReadJson(dir_ / "kl.json");
  ASSERT_GT(whole["results"]["kl"]["max"].get<double>(), 0.0);  // not a trivial comparison
  for (const char* key :
       {"kl", "tail_kl", "top1_agreement", "mean_captured_mass", "candidate_mean_nll", "positions",
        "sequences", "sequence_mean_kl", "where", "floor"}) {
    EXPECT_EQ(merged["results"][key], whole["results"][key]) << key;
  }
  EXPECT_EQ(ReadJson(dir_ / "kl.json.shards" / "part-2.json")["threads"], 2);
}

// A task killed while it runs leaves the merge waiting on a dependency that can no longer be
// met; requeued, the task resumes its shard (the sequences it finished are kept), and with the
// merge's dependency set again on the array's tasks the merge completes: the dump is the
// unsharded one.
TEST_F(LocalSlurm, AKilledTaskRequeuedCompletesTheMergeWithNothingLost) {
  // A teacher slow enough to be caught mid-run: random weights of Qwen2.5-0.5B's shapes (about
  // 2 s per sequence of 96 tokens on one thread), over 4 sequences of arithmetic token ids.
  const int64_t n_seqs = 4, ctx = 96;
  std::string tokens;
  for (int64_t i = 0; i < n_seqs * ctx; ++i) {
    const auto id = static_cast<int32_t>((i * 7919 + 13) % 30000);
    tokens.append(reinterpret_cast<const char*>(&id), sizeof(id));
  }
  fs::create_directories(dir_ / "corpus");
  std::ofstream(dir_ / "corpus" / "tokens.bin", std::ios::binary) << tokens;
  const std::string sha =
      RunShell(fmt::format("sha256sum {}", (dir_ / "corpus" / "tokens.bin").string()))
          .out.substr(0, 64);
  std::ofstream(dir_ / "corpus" / "manifest.json") << json{
      {"format_version", 1},      {"kind", "kl-eval-corpus"}, {"tokenizer", "none"},
      {"vocab_size", nullptr},    {"ctx_len", ctx},           {"n_seqs", n_seqs},
      {"n_tokens", n_seqs * ctx}, {"seed", nullptr},          {"chat_template", nullptr},
      {"sources", json::array()}, {"tokens_sha256", sha},     {"created", "2026-12-06"},
      {"notes", nullptr}}.dump();
  // Not quiet: the task's log says how many sequences it resumed.
  const std::string dump_args =
      "dump --teacher synthetic:qwen2.5-0.5b:q4_0 --corpus corpus --out dump --top-k 8 --chunk 32";
  Result r = Proctor("-t 1 " + dump_args);
  ASSERT_EQ(r.status, 0) << r.out;
  fs::rename(dir_ / "dump", dir_ / "unsharded-dump");
  r = Proctor("slurm --shards 2 --submit -- " + dump_args);
  ASSERT_EQ(r.status, 0) << r.out;
  const std::string array = Field(r.out, "array_job_id"), merge = Field(r.out, "merge_job_id");
  ASSERT_FALSE(array.empty() || merge.empty()) << r.out;
  // Task 1 is killed once it has finished its first sequence and runs its second.
  const std::string task = array + "_1";
  const fs::path part = dir_ / "dump.shards" / "part-1";
  bool caught = false;
  for (int i = 0; i < 1200 && !caught; ++i) {
    caught = JobState(task).first == "RUNNING" && fs::exists(part / "seq-0.bin") &&
             fs::exists(part / ".in-progress.json");
    if (!caught) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(caught) << "task " << task << " was not seen running its second sequence";
  ASSERT_EQ(RunShell("scancel " + task).status, 0);
  EXPECT_EQ(WaitForJob(task), "CANCELLED");
  EXPECT_EQ(WaitForJob(array + "_0"), "COMPLETED");
  EXPECT_EQ(WaitForJob(merge), "PENDING (dependency never satisfied)");
  EXPECT_FALSE(fs::exists(dir_ / "dump"));
  EXPECT_FALSE(fs::exists(part / "shard.json"));
  // Requeue the task (now, not after Slurm's requeue delay) and set the merge's dependency again.
  ASSERT_EQ(RunShell("scontrol requeue " + task).status, 0);
  ASSERT_EQ(RunShell(fmt::format("scontrol update jobid={} StartTime=now", task)).status, 0);
  ASSERT_EQ(RunShell(fmt::format("scontrol update jobid={} dependency=afterok:{}_0:{}_1", merge,
                                 array, array))
                .status,
            0);
  ASSERT_EQ(WaitForJob(merge), "COMPLETED");
  ExpectSameDump(dir_ / "dump", dir_ / "unsharded-dump", n_seqs);
  // The rerun kept the sequence the killed run had finished.
  const std::string log = ReadFile(dir_ / "dump.shards" / fmt::format("slurm-{}_1.out", array));
  EXPECT_NE(log.find("1 resumed"), std::string::npos) << log;
}

}  // namespace
