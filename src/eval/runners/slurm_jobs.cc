#include "eval/runners/slurm_jobs.h"

#include <fmt/format.h>

#include "util/error.h"

namespace proctor {
namespace {

constexpr const char* kComponent = "slurm";

// A script line holds the value as one word: no white space, no quotes.
void CheckScriptValue(std::string_view flag, const std::string& value) {
  if (value.find_first_of(" \t\n\r'\"\\") != std::string::npos) {
    Fail(kComponent,
         "{} '{}': a value with spaces, quotes or backslashes cannot go in a #SBATCH "
         "line",
         flag, value);
  }
}

}  // namespace

SlurmJobs MakeSlurmJobs(const ShardableCommand& command, const SlurmOptions& options) {
  if (options.shards < 1) Fail(kComponent, "--shards must be at least 1, got {}", options.shards);
  if (options.cpus_per_task < 1) {
    Fail(kComponent, "--cpus-per-task must be at least 1, got {}", options.cpus_per_task);
  }
  const std::string name =
      options.job_name.empty() ? fmt::format("proctor-{}", command.verb) : options.job_name;
  CheckScriptValue("--job-name", name);
  CheckScriptValue("--partition", options.partition);
  CheckScriptValue("--time", options.time);
  CheckScriptValue("--mem", options.mem);
  SlurmJobs jobs;
  jobs.dir = ShardsDir(command, options.dir);
  CheckScriptValue("the shards' directory", jobs.dir.string());
  CheckScriptValue("the working directory", options.workdir.string());
  jobs.parts = ShardParts(command, jobs.dir, options.shards);
  const std::string suffix = command.output_is_dir ? "" : ".json";
  const auto header = [&](const std::string& job, const std::string& output) {
    std::string lines = fmt::format("#SBATCH --job-name={}\n", job);
    if (!options.partition.empty()) {
      lines += fmt::format("#SBATCH --partition={}\n", options.partition);
    }
    if (!options.time.empty()) lines += fmt::format("#SBATCH --time={}\n", options.time);
    if (!options.mem.empty()) lines += fmt::format("#SBATCH --mem={}\n", options.mem);
    lines += fmt::format("#SBATCH --chdir={}\n", options.workdir.string());
    lines += fmt::format("#SBATCH --output={}\n", (jobs.dir / output).string());
    return lines;
  };
  std::string command_text = fmt::format("proctor {}", command.verb);
  for (const std::string& arg : command.args) command_text.append(" ").append(ShellQuote(arg));
  // Task I: the command with its output replaced by partial I, and --shard I/N.
  const std::string task_command = ShardTaskCommand(
      command, options.proctor, jobs.dir, "\"${SLURM_CPUS_PER_TASK:-1}\"", "task", options.shards);
  jobs.array_script = fmt::format(
      "#!/bin/bash\n"
      "# Written by `proctor slurm`: task I of this job array runs shard I of {0} of\n"
      "#   {1}\n"
      "# into {2}/part-I{3}; merge.sbatch, submitted with --dependency=afterok on this array,\n"
      "# merges the {0} partials into {4}. A task that is rerun (requeued) keeps or resumes\n"
      "# its shard.\n"
      "#SBATCH --array=0-{5}\n"
      "#SBATCH --cpus-per-task={6}\n"
      "#SBATCH --requeue\n"
      "{7}"
      "set -euo pipefail\n"
      "task=${{SLURM_ARRAY_TASK_ID:?this script runs as a task of a Slurm job array (sbatch)}}\n"
      "exec {8}\n",
      options.shards, command_text, jobs.dir.string(), suffix, command.output, options.shards - 1,
      options.cpus_per_task, header(name, "slurm-%A_%a.out"), task_command);
  const std::string merge_command = MergeCommand(command, options.proctor, jobs.parts);
  jobs.merge_script = fmt::format(
      "#!/bin/bash\n"
      "# Written by `proctor slurm`: merges the {0} partials of shards.sbatch into {1}.\n"
      "#SBATCH --cpus-per-task=1\n"
      "{2}"
      "set -euo pipefail\n"
      "exec {3}\n",
      options.shards, command.output, header(fmt::format("{}-merge", name), "slurm-merge-%j.out"),
      merge_command);
  return jobs;
}

}  // namespace proctor
