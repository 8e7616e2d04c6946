// The batch scripts of a sharded run under Slurm (`proctor slurm`, docs/scale-out.md): a job
// array whose task I runs the command with `--shard I/N` into its own partial, and a merge job
// that runs `proctor merge` over the N partials once every task ended well
// (`--dependency=afterok`). proctor runs as ordinary batch jobs: no daemon, no coordinator.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace proctor {

// A command that shards: `dump` (its --out is a dump directory), `kl` and `ppl` (their --json is
// the results file), with its arguments as given.
struct ShardableCommand {
  std::string verb{};
  std::vector<std::string> args{};
  std::string output{};        // the value of --out (dump) or --json (kl, ppl)
  size_t output_index = 0;     // args[output_index] is that value
  bool output_is_dir = false;  // dump: the partials are directories
};

// Errors ("[slurm] ..."): another verb, no output flag, a --shard of its own.
ShardableCommand ParseShardableCommand(const std::vector<std::string>& command);

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

// `text` as one word for sh: as it is when it holds only letters, digits and _-+=.,/:@%, else in
// single quotes (a quote in it as '\'').
std::string ShellQuote(std::string_view text);

}  // namespace proctor
