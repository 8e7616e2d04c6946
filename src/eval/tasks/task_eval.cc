#include "eval/tasks/task_eval.h"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <limits>

#include "eval/tasks/bfcl.h"
#include "eval/tasks/gsm8k.h"
#include "eval/tasks/hashhop.h"
#include "eval/tasks/humaneval.h"
#include "eval/tasks/ifeval.h"
#include "eval/tasks/mmlu.h"
#include "eval/tasks/multiple_choice.h"
#include "eval/tasks/task_data.h"
#include "util/error.h"
#include "util/machine.h"
#include "util/timing.h"

namespace proctor {

const std::vector<std::string>& KnownTaskNames() {
  static const std::vector<std::string> names = {
      "gsm8k",     "mmlu",     "ifeval",        "hashhop", "bfcl",      "humaneval",
      "hellaswag", "arc-easy", "arc-challenge", "piqa",    "winogrande"};
  return names;
}

const std::vector<TaskSuite>& KnownSuites() {
  static const std::vector<TaskSuite> suites = {
      {.name = "capability",
       .tasks = {"gsm8k", "mmlu", "ifeval", "bfcl", "humaneval", "hashhop"},
       .not_run = {}},
      {.name = "smoketest", .tasks = {"gsm8k"}, .not_run = {}},
  };
  return suites;
}

TaskSelection ParseTaskSelection(const std::string& list) {
  TaskSelection selection;
  auto add = [&](const std::string& name) {
    if (std::find(selection.tasks.begin(), selection.tasks.end(), name) == selection.tasks.end()) {
      selection.tasks.push_back(name);
    }
  };
  size_t begin = 0;
  while (begin <= list.size()) {
    const size_t comma = std::min(list.find(',', begin), list.size());
    const std::string name = list.substr(begin, comma - begin);
    begin = comma + 1;
    if (name.empty()) continue;
    const auto& known = KnownTaskNames();
    const auto suite = std::find_if(KnownSuites().begin(), KnownSuites().end(),
                                    [&](const TaskSuite& s) { return s.name == name; });
    if (suite != KnownSuites().end()) {
      selection.suites.push_back(*suite);
      for (const std::string& task : suite->tasks) add(task);
    } else if (std::find(known.begin(), known.end(), name) != known.end()) {
      add(name);
    } else {
      std::vector<std::string> suites;
      for (const TaskSuite& s : KnownSuites()) suites.push_back(s.name);
      Fail("tasks", "unknown task '{}' (known: {}; suites: {})", name, fmt::join(known, ", "),
           fmt::join(suites, ", "));
    }
  }
  if (selection.tasks.empty()) Fail("tasks", "no task named (e.g. mmlu,gsm8k)");
  return selection;
}

std::vector<std::string> ParseTaskNames(const std::string& list) {
  return ParseTaskSelection(list).tasks;
}

std::vector<SuiteScore> ScoreSuites(const std::vector<TaskSuite>& suites,
                                    const std::vector<TaskScore>& scores) {
  std::vector<SuiteScore> out;
  for (const TaskSuite& suite : suites) {
    SuiteScore score;
    score.suite = suite.name;
    score.not_run = suite.not_run;
    if (suite.name != "capability") {
      score.score = std::numeric_limits<double>::quiet_NaN();
      out.push_back(std::move(score));
      continue;
    }
    double sum = 0;
    for (const std::string& task : suite.tasks) {
      const auto found = std::find_if(scores.begin(), scores.end(),
                                      [&](const TaskScore& s) { return s.task == task; });
      if (found == scores.end() || found->n == 0) {
        score.not_run.push_back(task);
        continue;
      }
      score.tasks_run.push_back(task);
      sum += 100.0 * found->accuracy();
    }
    score.score = score.tasks_run.empty() ? std::numeric_limits<double>::quiet_NaN()
                                          : sum / static_cast<double>(score.tasks_run.size());
    out.push_back(std::move(score));
  }
  return out;
}

std::string FormatSuiteScores(const std::vector<SuiteScore>& suites,
                              std::optional<int64_t> disk_bytes) {
  std::string out;
  for (const SuiteScore& s : suites) {
    if (std::isnan(s.score)) continue;
    out += fmt::format("{}: {:.2f} (the unweighted mean of {}", s.suite, s.score,
                       fmt::join(s.tasks_run, ", "));
    if (!s.not_run.empty()) out += fmt::format("; not run: {}", fmt::join(s.not_run, ", "));
    out += ")";
    if (disk_bytes) out += fmt::format(" · weights on disk {:.1f} MB", *disk_bytes / 1e6);
    out += "\n";
  }
  return out;
}

std::vector<std::filesystem::path> TaskFiles(const std::string& name,
                                             const std::filesystem::path& data_dir) {
  if (name == "mmlu") return {data_dir / "mmlu"};
  if (name == "gsm8k") return {data_dir / "gsm8k" / "test.jsonl"};
  if (name == "ifeval") return {data_dir / "ifeval" / "input_data.jsonl"};
  if (name == "hellaswag") return {data_dir / "hellaswag" / "hellaswag_val_1000.jsonl"};
  if (name == "arc-easy") return {data_dir / "arc" / "ARC-Easy-Test.jsonl"};
  if (name == "arc-challenge") return {data_dir / "arc" / "ARC-Challenge-Test.jsonl"};
  if (name == "piqa")
    return {data_dir / "piqa" / "dev.jsonl", data_dir / "piqa" / "dev-labels.lst"};
  if (name == "winogrande") return {data_dir / "winogrande" / "dev.jsonl"};
  if (name == "hashhop") return {};  // generated
  if (name == "humaneval") return {data_dir / "humaneval" / "HumanEval.jsonl"};
  if (name == "bfcl") {
    return {data_dir / "bfcl" / "BFCL_v3_simple.json",
            data_dir / "bfcl" / "possible_answer" / "BFCL_v3_simple.json"};
  }
  Fail("tasks", "unknown task '{}'", name);
}

std::vector<std::unique_ptr<Task>> MakeTasks(const std::vector<std::string>& names,
                                             const TaskSetOptions& base) {
  std::vector<std::unique_ptr<Task>> tasks;
  for (const std::string& name : names) {
    TaskSetOptions options = base;
    if (options.n == 0 && name == "gsm8k" && options.smoketest) options.n = kSmoketestItems;
    const std::vector<std::filesystem::path> files = TaskFiles(name, options.data_dir);
    if (name == "mmlu") {
      tasks.push_back(MakeMmluTask(ReadMmlu(files[0]), options.n, options.seed));
    } else if (name == "gsm8k") {
      tasks.push_back(MakeGsm8kTask(ReadGsm8k(files[0]), options.n, options.seed, options.chat));
    } else if (name == "ifeval") {
      tasks.push_back(
          MakeIfevalTask(ReadIfeval(files[0]), options.n, options.seed, options.chat,
                         LoadIfevalResources(options.punkt_dir, options.langdetect_dir)));
    } else if (name == "bfcl") {
      const std::string mode = !options.chat ? "raw" : options.tools ? "tools" : "text";
      tasks.push_back(
          MakeBfclTask(ReadBfcl(files[0].parent_path()), options.n, options.seed, mode));
    } else if (name == "humaneval") {
      tasks.push_back(MakeHumanEvalTask(ReadHumanEval(files[0]), options.n, options.seed,
                                        options.chat, options.unsafe_exec));
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
  for (const SuiteScore& suite : result.suites) {
    env.results[suite.suite] = {
        {"score",
         std::isnan(suite.score) ? nlohmann::ordered_json() : nlohmann::ordered_json(suite.score)},
        {"tasks_run", suite.tasks_run},
        {"not_run", suite.not_run}};
  }
  if (!result.kl.is_null()) env.results["kl"] = result.kl;
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
    r.kl = result.kl;
    for (const SuiteScore& suite : result.suites) {
      if (!std::isnan(suite.score) && std::find(suite.tasks_run.begin(), suite.tasks_run.end(),
                                                score.task) != suite.tasks_run.end()) {
        r.capability = suite.score;
      }
    }
    r.machine = machine;
    r.items.reserve(score.items.size());
    for (const auto& [id, outcome] : score.items)
      r.items.emplace_back(id, ItemOutcomeName(outcome));
    records.push_back(std::move(r));
  }
  return records;
}

}  // namespace proctor
