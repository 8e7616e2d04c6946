// `proctor eval`: task evals of one model (the local engine) or one OpenAI-compatible server,
// from the task names to the per-task scores and the results file (docs/task-evals.md).
#pragma once

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "eval/clients/completion_client.h"
#include "eval/runners/results_json.h"
#include "eval/runs/run_database.h"
#include "eval/tasks/task.h"
#include "eval/tasks/task_runner.h"

namespace proctor {

// The tasks `proctor eval` knows, in the order they run.
const std::vector<std::string>& KnownTaskNames();

// "mmlu,gsm8k" -> {"mmlu", "gsm8k"} in the order given, duplicates dropped; Error naming an
// unknown task and listing the known ones.
std::vector<std::string> ParseTaskNames(const std::string& list);

struct TaskSetOptions {
  std::filesystem::path data_dir;  // holds mmlu/ (dev/, test/) and gsm8k/test.jsonl
  int64_t n = 0;                   // items per task (0: all)
  uint32_t seed = 42;
  bool chat = true;  // chat tasks use the chat template (false: their raw-text fallback)
};

// The data files (or folder) a task reads under `data_dir`.
std::vector<std::filesystem::path> TaskFiles(const std::string& name,
                                             const std::filesystem::path& data_dir);

// Reads each task's data (Error naming a missing or malformed file) and samples its items.
std::vector<std::unique_ptr<Task>> MakeTasks(const std::vector<std::string>& names,
                                             const TaskSetOptions& options);

// The results-file inputs of the tasks' data: each file with its sha256, a folder by path.
nlohmann::ordered_json DescribeTaskInputs(const std::vector<std::string>& names,
                                          const std::filesystem::path& data_dir);

struct TaskEvalResult {
  std::vector<TaskScore> scores;
  nlohmann::ordered_json client;  // CompletionClient::Describe()
  ResultsTimings timings;
};

TaskEvalResult RunTaskEval(const std::vector<std::unique_ptr<Task>>& tasks,
                           CompletionClient& client, const TaskRunOptions& options);

// The results file: command "eval", inputs = the model (or endpoint) and the task files,
// settings = the run's, results = {"tasks": [TaskScoreToJson...]}.
ResultsEnvelope TaskEvalEnvelope(const TaskEvalResult& result, nlohmann::ordered_json inputs,
                                 nlohmann::ordered_json settings);

// One run-database row per task: `model` is the spec or endpoint, `model_description` what
// EvalModel::Describe gave (null for a server: no sha256, no disk size).
std::vector<RunRecord> TaskEvalRunRecords(const TaskEvalResult& result, const std::string& model,
                                          const nlohmann::ordered_json& model_description,
                                          const nlohmann::ordered_json& settings);

}  // namespace proctor
