// The Kubernetes manifests of a sharded run: validated against the batch/v1 Job schema by
// kubernetes-validate (the oracle environment; strict: no property the schema does not have),
// the pod command read back by sh for an index, and the errors for what Kubernetes would refuse.
#include "eval/runners/k8s_jobs.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "util/testing_files.h"
#include "util/testing_oracles.h"

namespace proctor {
namespace {

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

K8sJobs Sample() {
  const ShardableCommand command = ParseShardableCommand(
      {"kl", "--reference-logits", "dump", "--candidate", "q4 model.gguf", "--json", "kl.json"},
      "k8s");
  return MakeK8sJobs(command, {.shards = 4,
                               .image = "registry.example/proctor:1",
                               .cpus = 8,
                               .memory = "16Gi",
                               .volume_claim = "data"});
}

TEST(K8sJobs, AnIndexedJobOfTheShardsAndAMergeJob) {
  const K8sJobs jobs = Sample();
  for (const char* line :
       {"apiVersion: \"batch/v1\"\n", "kind: \"Job\"\n", "  name: \"proctor-kl\"\n",
        "  completionMode: \"Indexed\"\n", "  completions: 4\n", "  parallelism: 4\n",
        "  backoffLimitPerIndex: 3\n", "      restartPolicy: \"Never\"\n",
        "        image: \"registry.example/proctor:1\"\n", "        workingDir: \"/work\"\n",
        "            cpu: \"8\"\n", "            memory: \"16Gi\"\n",
        "          claimName: \"data\"\n"}) {
    EXPECT_TRUE(Contains(jobs.indexed_job, line)) << line << "\n" << jobs.indexed_job;
  }
  EXPECT_TRUE(Contains(jobs.indexed_job,
                       "--json kl.json.shards/part-\\\"${JOB_COMPLETION_INDEX}\\\".json --shard "
                       "\\\"${JOB_COMPLETION_INDEX}/4\\\""))
      << jobs.indexed_job;
  EXPECT_TRUE(Contains(jobs.merge_job, "  name: \"proctor-kl-merge\"\n")) << jobs.merge_job;
  EXPECT_TRUE(Contains(jobs.merge_job,
                       "\"exec proctor merge kl.json kl.json.shards/part-0.json "
                       "kl.json.shards/part-1.json kl.json.shards/part-2.json "
                       "kl.json.shards/part-3.json\""))
      << jobs.merge_job;
}

TEST(K8sJobs, BothManifestsAreValidBatchV1JobsForKubernetesValidate) {
  const std::string python = testing::Oracles("python").Path("python");
  if (python.empty()) GTEST_SKIP() << "oracle: " << testing::Oracles("python").problem;
  const std::filesystem::path validate =
      std::filesystem::path(python).parent_path() / "kubernetes-validate";
  const testing::TempDir temp;
  const K8sJobs jobs = Sample();
  for (const auto& [name, yaml] :
       {std::pair{"shards.yaml", jobs.indexed_job}, std::pair{"merge.yaml", jobs.merge_job}}) {
    const auto path = temp.path() / name;
    std::ofstream(path) << yaml;
    const testing::CommandOutput out =
        testing::RunCommand(validate.string() + " --strict " + path.string());
    EXPECT_EQ(out.status, 0) << name << ":\n" << out.output << "\n" << yaml;
    EXPECT_TRUE(Contains(out.output, "passed for resource job/")) << out.output;
  }
  // A manifest the schema refuses is refused: the check can fail.
  const auto broken = temp.path() / "broken.yaml";
  std::string yaml = jobs.indexed_job;
  yaml.replace(yaml.find("completions: 4"), 14, "completions: \"four\"");
  std::ofstream(broken) << yaml;
  EXPECT_NE(testing::RunCommand(validate.string() + " --strict " + broken.string()).status, 0);
}

TEST(K8sJobs, NamesAndCountsKubernetesRefusesAreErrors) {
  const ShardableCommand ppl = ParseShardableCommand({"ppl", "m", "--json", "p.json"}, "k8s");
  const auto error = [&](const K8sOptions& options) {
    return testing::ErrorOf([&] { MakeK8sJobs(ppl, options); });
  };
  EXPECT_TRUE(Contains(error({.shards = 0, .image = "i"}), "--shards must be at least 1"));
  EXPECT_TRUE(Contains(error({.shards = 2}), "--image names the container image"));
  EXPECT_TRUE(Contains(error({.shards = 2, .image = "i", .name = "Big_Name"}),
                       "--name 'Big_Name': a Job name is lowercase"));
}

}  // namespace
}  // namespace proctor
