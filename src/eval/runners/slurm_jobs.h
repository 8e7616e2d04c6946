// The batch scripts of a sharded run under Slurm (`proctor slurm`, docs/scale-out.md): a job
// array whose task I runs the command with `--shard I/N` into its own partial, and a merge job
// that runs `proctor merge` over the N partials once every task ended well
// (`--dependency=afterok`). proctor runs as ordinary batch jobs: no daemon, no coordinator.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "eval/runners/sharded_command.h"

namespace proctor {

struct SlurmOptions {
  int64_t shards = 0;
  std::string partition{};  // empty: the cluster's default
  std::string time{};       // --time (e.g. 2:00:00); empty: the partition's
  std::string mem{};        // --mem (e.g. 16G); empty: the partition's
  int64_t cpus_per_task = 1;
  std::string job_name{};           // empty: proctor-<verb>
  std::filesystem::path dir{};      // the scripts, partials and logs; empty: <output>.shards
  std::filesystem::path proctor{};  // the executable the jobs run
  std::filesystem::path workdir{};  // the jobs' working directory (relative paths resolve there)
};

struct SlurmJobs {
  std::filesystem::path dir;
  std::string array_script;                  // DIR/shards.sbatch
  std::string merge_script;                  // DIR/merge.sbatch
  std::vector<std::filesystem::path> parts;  // the partials, shard 0 .. N-1
};

// The scripts of `command` in options.shards shards (errors: a count below 1, an option value a
// script line cannot hold).
SlurmJobs MakeSlurmJobs(const ShardableCommand& command, const SlurmOptions& options);

}  // namespace proctor
