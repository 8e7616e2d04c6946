// A command run in N shards by a batch system (`proctor slurm`, `proctor k8s`): which verbs
// shard and what their output flag is, where the shards' partials go (DIR/part-I, for `proctor
// merge`), and the shell command lines of task I and of the merge (docs/scale-out.md).
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

// The command as given after `--` ("--flag=value" split in two). Errors ("[component] ...",
// the verb that generates the jobs): another verb, no output flag, a --shard of its own, a
// flag its --shard does not go with (dump: --seq-start, --seq-end, --resume; kl: a teacher that
// is not a saved one).
ShardableCommand ParseShardableCommand(const std::vector<std::string>& command,
                                       const char* component);

// Where the partials go: `dir`, or the command's output with ".shards" appended.
std::filesystem::path ShardsDir(const ShardableCommand& command, const std::filesystem::path& dir);

// The partials DIR/part-0 .. part-(N-1) (directories for dump, .json files for kl and ppl).
std::vector<std::filesystem::path> ShardParts(const ShardableCommand& command,
                                              const std::filesystem::path& dir, int64_t shards);

// Task I's command line for sh: `proctor -t THREADS VERB ARGS...` with the output replaced by
// DIR/part-"${INDEX}" and `--shard "${INDEX}/N"` added; THREADS is put in as given (a number or a
// quoted expansion), INDEX is the shell variable holding the task's index.
std::string ShardTaskCommand(const ShardableCommand& command, const std::filesystem::path& proctor,
                             const std::filesystem::path& dir, std::string_view threads,
                             std::string_view index_variable, int64_t shards);

// `proctor merge OUTPUT PART...` for sh.
std::string MergeCommand(const ShardableCommand& command, const std::filesystem::path& proctor,
                         const std::vector<std::filesystem::path>& parts);

// `text` as one word for sh: as it is when it holds only letters, digits and _-+=.,/:@%, else in
// single quotes (a quote in it as '\'').
std::string ShellQuote(std::string_view text);

}  // namespace proctor
