// Runs task evals through a CompletionClient: every item of every task, each record appended to
// the --outputs file as soon as it is scored (so --resume continues an interrupted run), and one
// score per task (docs/task-evals.md).
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "eval/runners/shard.h"
#include "eval/tasks/task.h"

namespace proctor {

struct TaskScore {
  std::string task;
  int64_t n = 0;
  std::array<int64_t, 4> counts{};  // by ItemOutcome
  bool has_norm = false;            // the task reports acc_norm
  int64_t correct_norm = 0;         // items acc_norm got right
  int64_t resumed = 0;              // items read back from the outputs file, not asked again
  double seconds = 0;               // this run's time on the task
  std::string note;                 // Task::Note()
  nlohmann::ordered_json settings;  // Task::Settings()
  // Per slice (ItemRecord::group): {n, correct}, for tasks that report slices.
  std::map<std::string, std::array<int64_t, 2>> groups;
  bool show_groups = false;  // Task::ShowsGroups()
  // ItemRecord::tallies summed over the items, in the order the first item gave them.
  Tallies tallies;
  // Every item's outcome in task order (resumed ones included), for the run database.
  std::vector<std::pair<std::string, ItemOutcome>> items;

  int64_t count(ItemOutcome outcome) const { return counts[static_cast<size_t>(outcome)]; }
  // correct / n (unscorable items and request errors count as not correct); 0 when n is 0.
  double accuracy() const;
  // The standard error of that mean as lm-evaluation-harness computes it (sample standard
  // deviation / sqrt(n)): sqrt(p (1 - p) / (n - 1)); 0 when n < 2.
  double standard_error() const;
  double accuracy_norm() const;  // correct_norm / n (has_norm tasks)
  double standard_error_norm() const;
};

struct TaskRunOptions {
  std::filesystem::path outputs{};  // JSONL of every item; empty: none
  bool resume = false;              // continue `outputs` (items already scored are not asked again)
  // The run's identity, the first line of `outputs`; a resumed file must carry the same.
  nlohmann::ordered_json run_settings = nlohmann::ordered_json::object();
  bool quiet = false;  // no progress lines
  // Set: each task runs only this shard's share of its items (eval/runners/shard.h), and its
  // score is over them.
  std::optional<Shard> shard{};
};

// Error("[tasks] ...") before anything is asked when `outputs` exists without `resume`, or when
// a resumed file belongs to another run or is not an outputs file.
void CheckOutputsFile(const TaskRunOptions& options);

std::vector<TaskScore> RunTasks(const std::vector<const Task*>& tasks, CompletionClient& client,
                                const TaskRunOptions& options);

// The per-task table for people: task, n, accuracy ± standard error, the outcome counts, and a
// legend.
std::string FormatTaskTable(const std::vector<TaskScore>& scores);

nlohmann::ordered_json TaskScoreToJson(const TaskScore& score);

}  // namespace proctor
