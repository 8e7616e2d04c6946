// The Kubernetes manifests of a sharded run (`proctor k8s`, docs/scale-out.md): an Indexed Job
// (batch/v1, completionMode Indexed) whose pod I runs the command with `--shard I/N`
// ($JOB_COMPLETION_INDEX) into its own partial on a shared volume, and a Job that runs `proctor
// merge` over the N partials, applied once the first has completed (Kubernetes has no
// dependencies between Jobs: `kubectl wait --for=condition=complete job/NAME`).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "eval/runners/sharded_command.h"

namespace proctor {

struct K8sOptions {
  int64_t shards = 0;
  std::string image{};         // the container image with proctor in it
  std::string name{};          // the Job's name; empty: proctor-<verb>
  int64_t cpus = 1;            // each pod's CPU request and limit, and its thread count
  std::string memory{};        // each pod's memory request and limit (e.g. 16Gi); empty: none
  std::string volume_claim{};  // a PersistentVolumeClaim mounted at `workdir`; empty: none
  std::filesystem::path workdir{"/work"};  // the pods' working directory
  std::filesystem::path dir{};     // the partials, relative to workdir; empty: <output>.shards
  std::string proctor{"proctor"};  // the executable in the image
  int64_t retries_per_index = 3;   // backoffLimitPerIndex: a failed shard is retried alone
};

struct K8sJobs {
  std::string indexed_job;  // YAML
  std::string merge_job;    // YAML
};

// The two manifests (errors "[k8s] ...": a count below 1, no image, a name Kubernetes refuses).
K8sJobs MakeK8sJobs(const ShardableCommand& command, const K8sOptions& options);

}  // namespace proctor
