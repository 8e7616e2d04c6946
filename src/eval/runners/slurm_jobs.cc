#include "eval/runners/slurm_jobs.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "util/error.h"

namespace proctor {
namespace {

constexpr const char* kComponent = "slurm";

struct VerbShape {
  const char* verb;
  const char* output_flag;
  bool output_is_dir;
  std::array<const char*, 3> refused;  // flags the verb's --shard does not go with
};

constexpr std::array<VerbShape, 3> kShardable = {{
    {"dump", "--out", true, {"--seq-start", "--seq-end", "--resume"}},
    {"kl", "--json", false, {"--prompts", "--kv-arm", "--self"}},
    {"ppl", "--json", false, {nullptr, nullptr, nullptr}},
}};

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

std::string ShellQuote(std::string_view text) {
  const bool plain = !text.empty() && text.find_first_not_of(
                                          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                          "0123456789_-+=.,/:@%") == std::string_view::npos;
  if (plain) return std::string(text);
  std::string quoted(1, '\'');
  for (const char c : text) {
    if (c == '\'') {
      quoted.append("'\\''");
    } else {
      quoted.push_back(c);
    }
  }
  quoted.push_back('\'');
  return quoted;
}

ShardableCommand ParseShardableCommand(const std::vector<std::string>& command) {
  if (command.empty()) {
    Fail(kComponent,
         "no command to shard: give the verb and its arguments, e.g. `proctor slurm "
         "--shards 4 -- dump --teacher m.gguf --corpus c/ --out d/`");
  }
  const auto shape = std::find_if(kShardable.begin(), kShardable.end(),
                                  [&](const VerbShape& s) { return command[0] == s.verb; });
  if (shape == kShardable.end()) {
    Fail(kComponent, "`{}` does not shard: the verbs that take --shard I/N are dump, kl and ppl",
         command[0]);
  }
  ShardableCommand parsed{.verb = command[0], .output_is_dir = shape->output_is_dir};
  const std::string flag = shape->output_flag;
  // The arguments, with "--flag=value" split in two.
  for (size_t i = 1; i < command.size(); ++i) {
    const std::string& arg = command[i];
    const size_t equals = arg.find('=');
    if (arg.starts_with("--") && equals != std::string::npos) {
      parsed.args.push_back(arg.substr(0, equals));
      parsed.args.push_back(arg.substr(equals + 1));
    } else {
      parsed.args.push_back(arg);
    }
  }
  for (size_t i = 0; i < parsed.args.size(); ++i) {
    const std::string& arg = parsed.args[i];
    if (arg == "--shard") {
      Fail(kComponent,
           "the command gives --shard itself; `proctor slurm` adds --shard I/N to "
           "each task");
    }
    for (const char* refused : shape->refused) {
      if (refused != nullptr && arg == refused) {
        Fail(kComponent, "`{} --shard` does not go with {}", parsed.verb, refused);
      }
    }
    if (arg == flag) {
      if (i + 1 >= parsed.args.size()) Fail(kComponent, "{} needs a value", flag);
      parsed.output = parsed.args[i + 1];
      parsed.output_index = i + 1;
    }
  }
  if (parsed.output.empty()) {
    Fail(kComponent, "`{}` needs {} {}: where the merge writes the whole run's {}", parsed.verb,
         flag, shape->output_is_dir ? "DIR" : "FILE",
         shape->output_is_dir ? "dump" : "results file");
  }
  if (parsed.verb == "kl" && std::find(parsed.args.begin(), parsed.args.end(),
                                       "--reference-logits") == parsed.args.end()) {
    Fail(kComponent, "`kl --shard` scores against a saved teacher: give --reference-logits DIR");
  }
  return parsed;
}

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
  jobs.dir = options.dir.empty() ? std::filesystem::path(fmt::format("{}.shards", command.output))
                                 : options.dir;
  CheckScriptValue("the shards' directory", jobs.dir.string());
  CheckScriptValue("the working directory", options.workdir.string());
  const std::string suffix = command.output_is_dir ? "" : ".json";
  jobs.parts.reserve(static_cast<size_t>(options.shards));
  for (int64_t i = 0; i < options.shards; ++i) {
    jobs.parts.push_back(jobs.dir / fmt::format("part-{}{}", i, suffix));
  }
  const auto header = [&](const std::string& job, const std::string& output) {
    std::string lines = fmt::format("#SBATCH --job-name={}\n", job);
    if (!options.partition.empty())
      lines += fmt::format("#SBATCH --partition={}\n", options.partition);
    if (!options.time.empty()) lines += fmt::format("#SBATCH --time={}\n", options.time);
    if (!options.mem.empty()) lines += fmt::format("#SBATCH --mem={}\n", options.mem);
    lines += fmt::format("#SBATCH --chdir={}\n", options.workdir.string());
    lines += fmt::format("#SBATCH --output={}\n", (jobs.dir / output).string());
    return lines;
  };
  std::string command_text = fmt::format("proctor {}", command.verb);
  for (const std::string& arg : command.args) command_text.append(" ").append(ShellQuote(arg));
  // Task I: the command with its output replaced by partial I, and --shard I/N.
  std::string task_command =
      fmt::format("{} -t \"${{SLURM_CPUS_PER_TASK:-1}}\" {}", ShellQuote(options.proctor.string()),
                  ShellQuote(command.verb));
  for (size_t i = 0; i < command.args.size(); ++i) {
    task_command.append(" ");
    if (i == command.output_index) {
      task_command.append(ShellQuote((jobs.dir / "part-").string())).append("\"${task}\"");
      if (!suffix.empty()) task_command.append(ShellQuote(suffix));
    } else {
      task_command.append(ShellQuote(command.args[i]));
    }
  }
  task_command.append(fmt::format(" --shard \"${{task}}/{}\"", options.shards));
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
  std::string merge_command =
      fmt::format("{} merge {}", ShellQuote(options.proctor.string()), ShellQuote(command.output));
  for (const auto& part : jobs.parts) merge_command.append(" ").append(ShellQuote(part.string()));
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
