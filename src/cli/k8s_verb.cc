// `proctor k8s --shards N --image IMAGE [...] [--merge] -- VERB ARGS...`: the Kubernetes Indexed
// Job that runs VERB in N shards, or (--merge) the Job that merges them
// (eval/runners/k8s_jobs.h), printed as YAML for `kubectl apply -f -`.
#include <fmt/format.h>

#include "cli/verbs.h"
#include "eval/runners/k8s_jobs.h"

namespace proctor::cli {

void RegisterK8sVerb(CLI::App& app) {
  struct Args {
    K8sOptions k8s;
    std::string workdir = "/work";
    std::string dir;
    bool merge = false;
    std::vector<std::string> command;
  };
  auto args = std::make_shared<Args>();
  auto* verb = app.add_subcommand(
      "k8s",
      "Print the Kubernetes Indexed Job that runs dump, kl or ppl in N shards (or, with --merge, "
      "the Job that merges them)");
  verb->add_option("--shards", args->k8s.shards, "How many shards (the Job's completions)")
      ->required()
      ->check(CLI::PositiveNumber);
  verb->add_option("--image", args->k8s.image, "The container image with proctor in it")
      ->required();
  verb->add_option("--name", args->k8s.name, "The Job's name (default proctor-VERB)");
  verb->add_option("--cpus", args->k8s.cpus,
                   "Each pod's CPU request and limit, and its thread count (default 1)")
      ->check(CLI::PositiveNumber);
  verb->add_option("--memory", args->k8s.memory, "Each pod's memory request and limit, e.g. 16Gi");
  verb->add_option("--volume-claim", args->k8s.volume_claim,
                   "A PersistentVolumeClaim holding the inputs and outputs, mounted at --workdir");
  verb->add_option("--workdir", args->workdir,
                   "The pods' working directory: the command's relative paths resolve there "
                   "(default /work)");
  verb->add_option("--dir", args->dir,
                   "Where the partials go, under --workdir (default: the command's --out or "
                   "--json with .shards appended)");
  verb->add_option("--proctor", args->k8s.proctor,
                   "The proctor executable in the image (default: proctor, on its PATH)");
  verb->add_option("--retries", args->k8s.retries_per_index,
                   "How often a failed shard is retried on its own (backoffLimitPerIndex, "
                   "default 3); a retried shard keeps or resumes its work")
      ->check(CLI::NonNegativeNumber);
  verb->add_flag("--merge", args->merge,
                 "Print the Job that merges the N partials into the command's --out or --json "
                 "instead; apply it once the Indexed Job completed");
  verb->add_option(
          "command", args->command,
          "After --: the verb (dump, eval, kl, ppl) and its arguments, as you would run it")
      ->required();
  verb->footer(
      "Example:\n"
      "  proctor k8s --shards 8 --image registry/proctor:1 --cpus 16 --memory 64Gi \\\n"
      "      --volume-claim data -- dump --teacher model.gguf --corpus corpus/ --out dump/ \\\n"
      "      | kubectl apply -f -\n"
      "  kubectl wait --for=condition=complete --timeout=24h job/proctor-dump\n"
      "  proctor k8s --merge --shards 8 --image registry/proctor:1 --volume-claim data -- \\\n"
      "      dump --teacher model.gguf --corpus corpus/ --out dump/ | kubectl apply -f -\n"
      "Pod I runs the command with --shard I/N ($JOB_COMPLETION_INDEX) and its output replaced\n"
      "by DIR/part-I. See docs/scale-out.md.");
  verb->callback([args] {
    const ShardableCommand command = ParseShardableCommand(args->command, "k8s");
    args->k8s.workdir = args->workdir;
    args->k8s.dir = args->dir;
    const K8sJobs jobs = MakeK8sJobs(command, args->k8s);
    fmt::print("{}", args->merge ? jobs.merge_job : jobs.indexed_job);
  });
}

}  // namespace proctor::cli
