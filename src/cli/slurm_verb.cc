// `proctor slurm --shards N [...] [--submit | --dry-run] -- VERB ARGS...`: the job array that runs
// VERB in N shards under Slurm and the merge job after it (eval/runners/slurm_jobs.h).
#include <fmt/format.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>

#include "cli/verbs.h"
#include "eval/runners/slurm_jobs.h"
#include "util/error.h"
#include "util/file.h"
#include "util/find_program.h"

namespace proctor::cli {
namespace {

namespace fs = std::filesystem;

// `sbatch --parsable ARGS SCRIPT`: the job id it prints ("<id>" or "<id>;<cluster>").
std::string Submit(const std::string& args, const fs::path& script) {
  const std::string command =
      fmt::format("sbatch --parsable {} {} 2>&1", args, ShellQuote(script.string()));
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) Fail("slurm", "cannot run `{}`", command);
  std::string out;
  char buffer[512];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.append(buffer, n);
  const int status = ::pclose(pipe);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  const std::string id = out.substr(0, out.find(';'));
  if (status != 0 || id.empty() || id.find_first_not_of("0123456789") != std::string::npos) {
    Fail("slurm", "`{}` failed (exit status {}): {}", command,
         WIFEXITED(status) ? WEXITSTATUS(status) : -1, out);
  }
  return id;
}

}  // namespace

void RegisterSlurmVerb(CLI::App& app) {
  struct Args {
    SlurmOptions slurm;
    std::string dir;
    bool submit = false;
    bool dry_run = false;
    std::vector<std::string> command;
  };
  auto args = std::make_shared<Args>();
  auto* verb = app.add_subcommand(
      "slurm",
      "Run dump, kl or ppl in N shards as a Slurm job array, and merge them in a job after it");
  verb->add_option("--shards", args->slurm.shards, "How many shards (array tasks)")
      ->required()
      ->check(CLI::PositiveNumber);
  verb->add_option("--partition", args->slurm.partition,
                   "#SBATCH --partition (default: the "
                   "cluster's)");
  verb->add_option("--time", args->slurm.time, "#SBATCH --time per task, e.g. 2:00:00");
  verb->add_option("--mem", args->slurm.mem, "#SBATCH --mem per task, e.g. 16G");
  verb->add_option("--cpus-per-task", args->slurm.cpus_per_task,
                   "#SBATCH --cpus-per-task (default 1); each task runs that many threads")
      ->check(CLI::PositiveNumber);
  verb->add_option("--job-name", args->slurm.job_name, "#SBATCH --job-name (default proctor-VERB)");
  verb->add_option("--dir", args->dir,
                   "Where the scripts, the partials and the tasks' logs go (default: the "
                   "command's --out or --json with .shards appended)");
  auto* submit = verb->add_flag("--submit", args->submit,
                                "Submit the array and the merge job (sbatch must be on PATH)");
  verb->add_flag("--dry-run", args->dry_run, "Print the two scripts; write and submit nothing")
      ->excludes(submit);
  verb->add_option(
          "command", args->command,
          "After --: the verb (dump, eval, kl, ppl) and its arguments, as you would run it")
      ->required();
  verb->footer(
      "Examples:\n"
      "  proctor slurm --shards 8 --cpus-per-task 16 --mem 64G --time 4:00:00 --submit -- \\\n"
      "      dump --teacher model.gguf --corpus corpus/ --out teacher-dump/\n"
      "  proctor slurm --shards 8 --cpus-per-task 16 --submit -- \\\n"
      "      kl --reference-logits teacher-dump/ --candidate q4.gguf --json q4.json\n"
      "The command follows `--`. Task I runs it with --shard I/N and its output replaced by\n"
      "DIR/part-I; the merge job (afterok on the array) writes the command's own --out or\n"
      "--json. Threads follow the allocation (-t $SLURM_CPUS_PER_TASK). A task requeued after\n"
      "a failure keeps or resumes its shard. See docs/scale-out.md.");
  verb->callback([args] {
    const ShardableCommand command = ParseShardableCommand(args->command, "slurm");
    args->slurm.dir = args->dir;
    args->slurm.proctor = fs::canonical("/proc/self/exe");
    args->slurm.workdir = fs::current_path();
    const SlurmJobs jobs = MakeSlurmJobs(command, args->slurm);
    if (args->dry_run) {
      fmt::print("# {}\n{}\n# {}\n{}", (jobs.dir / "shards.sbatch").string(), jobs.array_script,
                 (jobs.dir / "merge.sbatch").string(), jobs.merge_script);
      return;
    }
    if (args->submit && FindProgram("sbatch").empty()) {
      Fail("slurm",
           "sbatch is not on PATH: run this on a Slurm login node, or leave out --submit and "
           "submit the scripts there");
    }
    fs::create_directories(jobs.dir);
    const fs::path array_script = jobs.dir / "shards.sbatch";
    const fs::path merge_script = jobs.dir / "merge.sbatch";
    WriteFileAtomic(array_script, jobs.array_script);
    WriteFileAtomic(merge_script, jobs.merge_script);
    fmt::print("wrote {} ({} tasks) and {}\n", array_script.string(), args->slurm.shards,
               merge_script.string());
    if (!args->submit) {
      fmt::print(
          "submit with:\n  id=$(sbatch --parsable {})\n  sbatch --dependency=afterok:$id {}\n",
          ShellQuote(array_script.string()), ShellQuote(merge_script.string()));
      return;
    }
    const std::string array_id = Submit("", array_script);
    const std::string merge_id = Submit("--dependency=afterok:" + array_id, merge_script);
    fmt::print("submitted job array {} ({} tasks) and merge job {} (after the array ends well)\n",
               array_id, args->slurm.shards, merge_id);
    fmt::print("array_job_id={}\nmerge_job_id={}\n", array_id, merge_id);
  });
}

}  // namespace proctor::cli
