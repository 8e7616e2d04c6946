#include "eval/tasks/task_eval.h"

#include <fmt/format.h>
#include <algorithm>

#include "eval/tasks/gsm8k.h"
#include "eval/tasks/hashhop.h"
#include "eval/tasks/mmlu.h"
#include "eval/tasks/multiple_choice.h"
#include "eval/tasks/task_data.h"
#include "util/error.h"
#include "util/machine.h"
#include "util/timing.h"

namespace proctor {

const std::vector<std::string>& KnownTaskNames() {
  static const std::vector<std::string> names = {
      "gsm8k", "mmlu", "hashhop", "hellaswag", "arc-easy", "arc-challenge", "piqa", "winogrande"};
  return names;
}

std::vector<std::string> ParseTaskNames(const std::string& list) {
  std::vector<std::string> names;
  size_t begin = 0;
  while (begin <= list.size()) {
    const size_t comma = std::min(list.find(',', begin), list.size());
    const std::string name = list.substr(begin, comma - begin);
    begin = comma + 1;
    if (name.empty()) continue;
    const auto& known = KnownTaskNames();
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      Fail("tasks", "unknown task '{}' (known: {})", name, fmt::join(known, ", "));
    }
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  if (names.empty()) Fail("tasks", "no task named (e.g. mmlu,gsm8k)");
  return names;
}

std::vector<std::filesystem::path> TaskFiles(const std::string& name,
                                             const std::filesystem::path& data_dir) {
  if (name == "mmlu") return {data_dir / "mmlu"};
  if (name == "gsm8k") return {data_dir / "gsm8k" / "test.jsonl"};
  if (name == "hellaswag") return {data_dir / "hellaswag" / "hellaswag_val_1000.jsonl"};
  if (name == "arc-easy") return {data_dir / "arc" / "ARC-Easy-Test.jsonl"};
  if (name == "arc-challenge") return {data_dir / "arc" / "ARC-Challenge-Test.jsonl"};
  if (name == "piqa")
    return {data_dir / "piqa" / "dev.jsonl", data_dir / "piqa" / "dev-labels.lst"};
  if (name == "winogrande") return {data_dir / "winogrande" / "dev.jsonl"};
  if (name == "hashhop") return {};  // generated
  Fail("tasks", "unknown task '{}'", name);
}

std::vector<std::unique_ptr<Task>> MakeTasks(const std::vector<std::string>& names,
                                             const TaskSetOptions& options) {
  std::vector<std::unique_ptr<Task>> tasks;
  for (const std::string& name : names) {
    const std::vector<std::filesystem::path> files = TaskFiles(name, options.data_dir);
    if (name == "mmlu") {
      tasks.push_back(MakeMmluTask(ReadMmlu(files[0]), options.n, options.seed));
    } else if (name == "gsm8k") {
      tasks.push_back(MakeGsm8kTask(ReadGsm8k(files[0]), options.n, options.seed, options.chat));
    } else if (name == "hashhop") {
      tasks.push_back(MakeHashHopTask(options.n, options.seed, options.chat));
    } else if (name == "hellaswag") {
      tasks.push_back(
          MakeMultipleChoiceTask(name, ReadHellaswag(files[0]), options.n, options.seed, true));
    } else if (name == "arc-easy" || name == "arc-challenge") {
      tasks.push_back(
          MakeMultipleChoiceTask(name, ReadArc(files[0]), options.n, options.seed, true));
    } else if (name == "piqa") {
      tasks.push_back(MakeMultipleChoiceTask(name, ReadPiqa(files[0], files[1]), options.n,
                                             options.seed, true));
    } else if (name == "winogrande") {
      tasks.push_back(
          MakeMultipleChoiceTask(name, ReadWinogrande(files[0]), options.n, options.seed, false));
    }
  }
  return tasks;
}

nlohmann::ordered_json DescribeTaskInputs(const std::vector<std::string>& names,
                                          const std::filesystem::path& data_dir) {
  nlohmann::ordered_json inputs = nlohmann::ordered_json::array();
  for (const std::string& name : names) {
    for (const std::filesystem::path& file : TaskFiles(name, data_dir)) {
      if (std::filesystem::is_directory(file)) {
        inputs.push_back({{"role", name}, {"kind", "folder"}, {"path", file.string()}});
      } else {
        inputs.push_back(DescribeFileInput(name, file));
      }
    }
  }
  return inputs;
}

TaskEvalResult RunTaskEval(const std::vector<std::unique_ptr<Task>>& tasks,
                           CompletionClient& client, const TaskRunOptions& options) {
  const double start = MonotonicSeconds();
  std::vector<const Task*> list;
  list.reserve(tasks.size());
  for (const auto& task : tasks) list.push_back(task.get());
  TaskEvalResult result;
  result.client = client.Describe();
  result.scores = RunTasks(list, client, options);
  result.timings.total_seconds = SecondsSince(start);
  result.timings.forward_seconds = result.timings.total_seconds;  // asking the client is the work
  return result;
}

ResultsEnvelope TaskEvalEnvelope(const TaskEvalResult& result, nlohmann::ordered_json inputs,
                                 nlohmann::ordered_json settings) {
  ResultsEnvelope env{.command = "eval"};
  env.inputs = std::move(inputs);
  env.settings = std::move(settings);
  env.settings["client"] = result.client;
  nlohmann::ordered_json tasks = nlohmann::ordered_json::array();
  for (const TaskScore& score : result.scores) {
    tasks.push_back(TaskScoreToJson(score));
    if (!score.note.empty()) env.warnings.push_back(score.note);
  }
  env.results = {{"tasks", tasks}};
  env.timings = result.timings;
  return env;
}

std::vector<RunRecord> TaskEvalRunRecords(const TaskEvalResult& result, const std::string& model,
                                          const nlohmann::ordered_json& model_description,
                                          const nlohmann::ordered_json& settings) {
  const auto [sha256, disk_bytes] = ModelIdentity(model_description);
  const std::string created = UtcNow();
  const std::string machine = DescribeMachine(ReadMachineFacts());
  std::vector<RunRecord> records;
  records.reserve(result.scores.size());
  for (const TaskScore& score : result.scores) {
    RunRecord r;
    r.created = created;
    r.task = score.task;
    r.model = model;
    r.model_sha256 = sha256;
    r.proctor_version = PROCTOR_VERSION;
    r.settings = settings;
    r.settings["client"] = result.client;
    r.settings["task"] = score.settings;
    r.n = score.n;
    r.correct = score.count(ItemOutcome::kCorrect);
    r.accuracy = score.accuracy();
    r.standard_error = score.standard_error();
    r.disk_bytes = disk_bytes;
    r.machine = machine;
    r.items.reserve(score.items.size());
    for (const auto& [id, outcome] : score.items)
      r.items.emplace_back(id, ItemOutcomeName(outcome));
    records.push_back(std::move(r));
  }
  return records;
}

}  // namespace proctor
