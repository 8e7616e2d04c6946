// The Slurm scripts of a sharded run: which commands shard and how their output becomes the
// partials, the array and merge scripts' lines, shell quoting that sh reads back (run through
// sh), and the errors for what cannot be sharded. The scripts running on a real cluster:
// src/cli/slurm_cluster_slow_test.cc.
#include "eval/runners/slurm_jobs.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "util/testing_files.h"

namespace proctor {
namespace {

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(SlurmJobs, ADumpShardsIntoDirectoriesAndMergesIntoItsOut) {
  const ShardableCommand command = ParseShardableCommand(
      {"dump", "--teacher", "m.gguf", "--corpus=c", "--out", "d", "-q"}, "slurm");
  EXPECT_EQ(command.output, "d");
  EXPECT_TRUE(command.output_is_dir);
  EXPECT_EQ(command.args,
            (std::vector<std::string>{"--teacher", "m.gguf", "--corpus", "c", "--out", "d", "-q"}));
  const SlurmJobs jobs = MakeSlurmJobs(command, {.shards = 3,
                                                 .partition = "cpu",
                                                 .time = "2:00:00",
                                                 .mem = "16G",
                                                 .cpus_per_task = 8,
                                                 .proctor = "/opt/proctor/bin/proctor",
                                                 .workdir = "/scratch/run"});
  EXPECT_EQ(jobs.dir, "d.shards");
  ASSERT_EQ(jobs.parts.size(), 3u);
  EXPECT_EQ(jobs.parts[2], "d.shards/part-2");
  for (const char* line :
       {"#SBATCH --array=0-2\n", "#SBATCH --cpus-per-task=8\n", "#SBATCH --requeue\n",
        "#SBATCH --job-name=proctor-dump\n", "#SBATCH --partition=cpu\n",
        "#SBATCH --time=2:00:00\n", "#SBATCH --mem=16G\n", "#SBATCH --chdir=/scratch/run\n",
        "#SBATCH --output=d.shards/slurm-%A_%a.out\n"}) {
    EXPECT_TRUE(Contains(jobs.array_script, line)) << line << "\n" << jobs.array_script;
  }
  const std::string task_line =
      "exec /opt/proctor/bin/proctor -t \"${SLURM_CPUS_PER_TASK:-1}\" dump --teacher m.gguf "
      "--corpus c --out d.shards/part-\"${task}\" -q --shard \"${task}/3\"\n";
  EXPECT_TRUE(Contains(jobs.array_script, task_line)) << jobs.array_script;
  const std::string merge_line =
      "exec /opt/proctor/bin/proctor merge d d.shards/part-0 d.shards/part-1 d.shards/part-2\n";
  for (const std::string& line :
       {std::string("#SBATCH --job-name=proctor-dump-merge\n"),
        std::string("#SBATCH --output=d.shards/slurm-merge-%j.out\n"), merge_line}) {
    EXPECT_TRUE(Contains(jobs.merge_script, line)) << line << "\n" << jobs.merge_script;
  }
}

// The task's command line as sh reads it: every argument comes back as given.
TEST(SlurmJobs, TheTaskCommandIsReadBackBySh) {
  const ShardableCommand command = ParseShardableCommand(
      {"ppl", "my model", "--data", "it's \"quoted\" $HOME `x`", "--json", "runs/p.json"}, "slurm");
  const SlurmJobs jobs = MakeSlurmJobs(command, {.shards = 2, .proctor = "printf", .workdir = "/"});
  // The exec line with printf as the program, run for task 1: one argument per line.
  const size_t exec = jobs.array_script.find("exec ");
  ASSERT_NE(exec, std::string::npos);
  std::string line = jobs.array_script.substr(exec + 5);
  line = line.substr(0, line.find('\n'));
  line.replace(0, line.find(' '), "printf '%s\\n'");
  const testing::TempDir temp;
  const auto script = temp.path() / "task.sh";
  std::ofstream(script) << "task=1\n" << line << "\n";
  const testing::CommandOutput out = testing::RunCommand("sh " + script.string());
  ASSERT_EQ(out.status, 0) << out.output;
  EXPECT_EQ(out.output,
            "-t\n1\nppl\nmy model\n--data\nit's \"quoted\" $HOME `x`\n--json\n"
            "runs/p.json.shards/part-1.json\n--shard\n1/2\n");
}

TEST(SlurmJobs, WhatCannotBeShardedIsAnErrorSayingWhy) {
  const auto error = [](const std::vector<std::string>& command) {
    return testing::ErrorOf([&] { ParseShardableCommand(command, "slurm"); });
  };
  EXPECT_TRUE(Contains(error({}), "no command to shard"));
  EXPECT_TRUE(Contains(error({"generate", "m"}), "`generate` does not shard"));
  EXPECT_TRUE(Contains(error({"dump", "--teacher", "m", "--corpus", "c"}), "needs --out DIR"));
  EXPECT_TRUE(Contains(error({"ppl", "m", "--data", "x"}), "needs --json FILE"));
  EXPECT_TRUE(
      Contains(error({"ppl", "m", "--json", "p.json", "--shard", "0/2"}), "gives --shard itself"));
  EXPECT_TRUE(Contains(error({"dump", "--out", "d", "--resume"}), "does not go with --resume"));
  EXPECT_TRUE(Contains(error({"kl", "--candidate", "m", "--kv-arm", "affine:4"}), "needs --json"));
  const ShardableCommand ppl = ParseShardableCommand({"ppl", "m", "--json", "p.json"}, "slurm");
  EXPECT_TRUE(Contains(testing::ErrorOf([&] { MakeSlurmJobs(ppl, {.shards = 0}); }),
                       "--shards must be at least 1"));
  EXPECT_TRUE(
      Contains(testing::ErrorOf([&] { MakeSlurmJobs(ppl, {.shards = 2, .partition = "a b"}); }),
               "--partition 'a b': a value with spaces"));
}

}  // namespace
}  // namespace proctor
