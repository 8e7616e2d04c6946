// `proctor eval`: task evals of one model (the local engine) or one OpenAI-compatible server,
// from the task names to the per-task scores and the results file (docs/task-evals.md).
#pragma once

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
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

// A name that stands for several tasks. `capability`: gsm8k, mmlu, ifeval, bfcl, humaneval,
// hashhop, scored as the unweighted mean of the percentages of those that ran. `smoketest`:
// gsm8k on 50 items (sampleIndices(1319, 50, 42) unless --n says otherwise), beside the KL of
// --reference-logits when given.
struct TaskSuite {
  std::string name;
  std::vector<std::string> tasks;    // the members proctor runs, in order
  std::vector<std::string> not_run;  // members this proctor does not have
};
const std::vector<TaskSuite>& KnownSuites();

struct TaskSelection {
  std::vector<std::string> tasks;  // suites expanded, in the order given, duplicates dropped
  std::vector<TaskSuite> suites;   // the suites named
};

// "mmlu,gsm8k" -> {"mmlu", "gsm8k"}; "capability" -> its members. Error naming an unknown
// name and listing the known tasks and suites.
TaskSelection ParseTaskSelection(const std::string& list);
// ParseTaskSelection(list).tasks.
std::vector<std::string> ParseTaskNames(const std::string& list);

inline constexpr int64_t kSmoketestItems = 50;

struct TaskSetOptions {
  std::filesystem::path data_dir;  // holds mmlu/ (dev/, test/) and gsm8k/test.jsonl
  int64_t n = 0;                   // items per task (0: all, or the suite's own count)
  uint32_t seed = 42;
  bool chat = true;          // chat tasks use the chat template (false: their raw-text fallback)
  bool smoketest = false;    // gsm8k runs kSmoketestItems items when n is 0
  bool tools = true;         // chat requests may carry tools (CompletionClient::CanUseTools)
  bool unsafe_exec = false;  // humaneval runs programs without the sandbox
  // ifeval: nltk's punkt_tab/english directory and the langdetect package directory (empty:
  // where nltk and Debian keep them; see LoadIfevalResources).
  std::filesystem::path punkt_dir{};
  std::filesystem::path langdetect_dir{};
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

// A suite's score: capability's mean over the members that ran (each task's accuracy in
// percent); NaN for a suite without one (smoketest).
struct SuiteScore {
  std::string suite;
  double score = 0;
  std::vector<std::string> tasks_run;
  std::vector<std::string> not_run;  // members this proctor does not have, or that did not run
};
std::vector<SuiteScore> ScoreSuites(const std::vector<TaskSuite>& suites,
                                    const std::vector<TaskScore>& scores);
// "capability: 23.45 (mean of gsm8k, mmlu, hashhop; not run: ifeval, bfcl, humaneval) · weights
// on disk 1.2 MB" per suite with a score.
std::string FormatSuiteScores(const std::vector<SuiteScore>& suites,
                              std::optional<int64_t> disk_bytes);

struct TaskEvalResult {
  std::vector<TaskScore> scores;
  std::vector<SuiteScore> suites;
  nlohmann::ordered_json kl;      // KlEvalResultToJson of the --reference-logits KL; null: none
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
