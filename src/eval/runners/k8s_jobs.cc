#include "eval/runners/k8s_jobs.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "util/error.h"
#include "util/yaml_writer.h"

namespace proctor {
namespace {

constexpr const char* kComponent = "k8s";
using Json = nlohmann::ordered_json;

// The pod template of one container running `sh -c COMMAND` in the working directory.
Json PodTemplate(const K8sOptions& options, const std::string& command, int64_t cpus) {
  Json resources = Json::object();
  Json amounts = {{"cpu", std::to_string(cpus)}};
  if (!options.memory.empty()) amounts["memory"] = options.memory;
  resources["requests"] = amounts;
  resources["limits"] = amounts;
  Json container = {{"name", "proctor"},
                    {"image", options.image},
                    {"workingDir", options.workdir.string()},
                    {"command", {"/bin/sh", "-c", command}},
                    {"resources", resources}};
  Json spec = {{"restartPolicy", "Never"}, {"containers", Json::array()}};
  if (!options.volume_claim.empty()) {
    container["volumeMounts"] = {{{"name", "work"}, {"mountPath", options.workdir.string()}}};
    spec["volumes"] = {
        {{"name", "work"}, {"persistentVolumeClaim", {{"claimName", options.volume_claim}}}}};
  }
  spec["containers"].push_back(container);
  return {{"spec", spec}};
}

}  // namespace

K8sJobs MakeK8sJobs(const ShardableCommand& command, const K8sOptions& options) {
  if (options.shards < 1) Fail(kComponent, "--shards must be at least 1, got {}", options.shards);
  if (options.cpus < 1) Fail(kComponent, "--cpus must be at least 1, got {}", options.cpus);
  if (options.image.empty()) Fail(kComponent, "--image names the container image with proctor");
  const std::string name =
      options.name.empty() ? fmt::format("proctor-{}", command.verb) : options.name;
  // A DNS-1123 label with room for "-merge" and the pods' index suffixes.
  static const std::regex label("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
  if (!std::regex_match(name, label) || name.size() > 40) {
    Fail(kComponent,
         "--name '{}': a Job name is lowercase letters, digits and '-', starting and ending with a "
         "letter or digit, at most 40 characters here",
         name);
  }
  const std::filesystem::path dir = ShardsDir(command, options.dir);
  const std::string task =
      fmt::format("mkdir -p {} && exec {}", ShellQuote(dir.string()),
                  ShardTaskCommand(command, options.proctor, dir, std::to_string(options.cpus),
                                   "JOB_COMPLETION_INDEX", options.shards));
  Json indexed = {
      {"apiVersion", "batch/v1"},
      {"kind", "Job"},
      {"metadata", {{"name", name}, {"labels", {{"app.kubernetes.io/name", "proctor"}}}}},
      {"spec",
       {{"completionMode", "Indexed"},
        {"completions", options.shards},
        {"parallelism", options.shards},
        {"backoffLimitPerIndex", options.retries_per_index},
        {"template", PodTemplate(options, task, options.cpus)}}}};
  const std::string merge = fmt::format(
      "exec {}", MergeCommand(command, options.proctor, ShardParts(command, dir, options.shards)));
  Json merge_job = {{"apiVersion", "batch/v1"},
                    {"kind", "Job"},
                    {"metadata",
                     {{"name", fmt::format("{}-merge", name)},
                      {"labels", {{"app.kubernetes.io/name", "proctor"}}}}},
                    {"spec", {{"backoffLimit", 2}, {"template", PodTemplate(options, merge, 1)}}}};
  return {.indexed_job = ToYaml(indexed), .merge_job = ToYaml(merge_job)};
}

}  // namespace proctor
