// Task evals in shards (`proctor eval TASKS ... --shard I/N --json FILE`) and their merge
// (`proctor merge OUT PART...`) into the unsharded run's results file (docs/scale-out.md).
//
// Shard I of N runs, of every task, the items [floor(I * n / N), floor((I + 1) * n / N)) of the
// task's n sampled items (eval/runners/shard.h), and writes the results envelope over them with
// results.shard: which shard, and per task its items, its total, the acc_norm count and every
// item's (id, outcome). The merge adds the counts, slices and tallies back up in item order and
// scores them as the unsharded run does: the same accuracies, standard errors, slices, tallies
// and suite scores, the same results file but for the seconds.
#pragma once

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "eval/runners/results_json.h"
#include "eval/runners/shard.h"
#include "eval/tasks/task.h"
#include "eval/tasks/task_eval.h"

namespace proctor {

// results.shard of a shard's run: index, count, and per task (in run order) {task, items
// [first, end), total, correct_norm, show_groups, outcomes [[id, outcome], ...]}.
nlohmann::ordered_json TaskShardToJson(const Shard& shard,
                                       const std::vector<std::unique_ptr<Task>>& tasks,
                                       const std::vector<TaskScore>& scores);

// True when `json_file` already holds this shard of an eval whose settings include every key
// of `settings` with the same value: a rerun keeps it.
bool TaskShardDone(const std::filesystem::path& json_file, const Shard& shard,
                   const nlohmann::json& settings);

struct EvalMerge {
  ResultsEnvelope envelope;  // the unsharded run's results file
  TaskEvalResult result;
};

// Merges the partial results files (any order; every shard 0..N-1 of one run exactly once).
// Refuses, naming the file and the values: not an eval partial, another run (a setting, the
// inputs), another shard count, a shard missing or given twice, a shard that does not hold its
// share of a task's items.
EvalMerge MergeEvalPartials(const std::vector<std::filesystem::path>& partials);

}  // namespace proctor
