#include "eval/tasks/task_shards.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>

#include "util/error.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

constexpr const char* kComponent = "merge";

struct EvalPartial {
  fs::path path{};
  nlohmann::json envelope{};
  Shard shard{};
};

EvalPartial ReadEvalPartial(const fs::path& path) {
  EvalPartial p{.path = path, .envelope = ReadPartialEnvelope(path, "eval", kComponent)};
  try {
    const nlohmann::json& shard = p.envelope.at("results").at("shard");
    p.shard = {.index = shard.at("index").get<int64_t>(),
               .count = shard.at("count").get<int64_t>()};
  } catch (const nlohmann::json::exception& e) {
    Fail(kComponent, "'{}' is not a partial eval result: {}", path.string(), e.what());
  }
  return p;
}

// One task's score summed over the shards, in shard order (so in item order).
class TaskScoreSum {
 public:
  explicit TaskScoreSum(std::string task) { score_.task = std::move(task); }

  // Adds `part`'s score of the task (its results.tasks entry and its results.shard entry).
  void Add(const EvalPartial& part, const nlohmann::json& task, const nlohmann::json& shard) {
    const std::string name = task.at("task").get<std::string>();
    if (name != score_.task || shard.at("task").get<std::string>() != score_.task) {
      Fail(kComponent, "'{}' runs task '{}' where the first partial runs '{}'", part.path.string(),
           name, score_.task);
    }
    const ItemRange held = {.first = shard.at("items").at(0).get<int64_t>(),
                            .end = shard.at("items").at(1).get<int64_t>()};
    const int64_t total = shard.at("total").get<int64_t>();
    CheckShardHolds(part.shard, total, held, fmt::format("items of {}", score_.task),
                    part.path.string(), kComponent);
    const int64_t n = task.at("n").get<int64_t>();
    const nlohmann::json& outcomes = shard.at("outcomes");
    if (n != held.size() || static_cast<int64_t>(outcomes.size()) != n) {
      Fail(kComponent, "'{}': task {} scores {} items with {} outcomes; its share is {}",
           part.path.string(), score_.task, n, outcomes.size(), held.size());
    }
    score_.n += n;
    const char* counted[] = {"correct", "wrong", "unscorable", "request_errors"};
    for (size_t k = 0; k < score_.counts.size(); ++k) {
      score_.counts[k] += task.at(counted[k]).get<int64_t>();
    }
    score_.has_norm = score_.has_norm || !task.at("accuracy_norm").is_null();
    score_.correct_norm += shard.at("correct_norm").get<int64_t>();
    score_.resumed += task.at("resumed").get<int64_t>();
    score_.seconds += task.at("seconds").get<double>();
    score_.show_groups = shard.at("show_groups").get<bool>();
    if (first_) {
      score_.note = task.at("note").get<std::string>();
      score_.settings = task.at("settings");
      first_ = false;
    }
    for (const auto& [group, slice] : task.at("groups").items()) {
      auto& sum = score_.groups[group];
      sum[0] += slice.at("n").get<int64_t>();
      sum[1] += slice.at("correct").get<int64_t>();
    }
    // In the order the first item gave them: this shard's order after the names seen before.
    for (const auto& entry : task.at("tallies").items()) {
      const std::string& tally = entry.key();
      const nlohmann::json& counts = entry.value();
      auto it = std::find_if(score_.tallies.begin(), score_.tallies.end(),
                             [&](const auto& summed) { return summed.first == tally; });
      if (it == score_.tallies.end()) it = score_.tallies.insert(score_.tallies.end(), {tally, {}});
      it->second[0] += counts.at("hits").get<int64_t>();
      it->second[1] += counts.at("of").get<int64_t>();
    }
    for (const nlohmann::json& item : outcomes) {
      score_.items.emplace_back(
          item.at(0).get<std::string>(),
          ParseItemOutcome(item.at(1).get<std::string>(), part.path.string()));
    }
  }

  const TaskScore& score() const { return score_; }

 private:
  TaskScore score_;
  bool first_ = true;
};

}  // namespace

Json TaskShardToJson(const Shard& shard, const std::vector<std::unique_ptr<Task>>& tasks,
                     const std::vector<TaskScore>& scores) {
  CHECK_MSG(tasks.size() == scores.size(), "a score per task");
  Json per_task = Json::array();
  for (size_t t = 0; t < tasks.size(); ++t) {
    const TaskScore& score = scores[t];
    const ItemRange items = ShardItems(shard, tasks[t]->size());
    Json outcomes = Json::array();
    for (const auto& [id, outcome] : score.items)
      outcomes.push_back({id, ItemOutcomeName(outcome)});
    per_task.push_back({{"task", score.task},
                        {"items", {items.first, items.end}},
                        {"total", tasks[t]->size()},
                        {"correct_norm", score.correct_norm},
                        {"show_groups", score.show_groups},
                        {"outcomes", std::move(outcomes)}});
  }
  return {{"index", shard.index}, {"count", shard.count}, {"tasks", std::move(per_task)}};
}

bool TaskShardDone(const fs::path& json_file, const Shard& shard, const nlohmann::json& settings) {
  if (!fs::exists(json_file)) return false;
  // Anything that is not a sound partial of this shard is not done: it is run again.
  try {
    const EvalPartial p = ReadEvalPartial(json_file);
    return p.shard == shard && SettingsHold(p.envelope.at("settings"), settings);
  } catch (const Error&) {
    return false;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

EvalMerge MergeEvalPartials(const std::vector<fs::path>& partials) {
  if (partials.empty()) Fail(kComponent, "no partial results given");
  std::vector<EvalPartial> parts;
  std::vector<ShardPart> shards;
  parts.reserve(partials.size());
  shards.reserve(partials.size());
  for (const fs::path& path : partials) {
    parts.push_back(ReadEvalPartial(path));
    const EvalPartial& p = parts.back();
    const EvalPartial& first = parts.front();
    CheckSameRun(p.envelope, p.path.string(), first.envelope, first.path.string());
    shards.push_back({.shard = p.shard, .name = path.string()});
  }
  std::vector<const EvalPartial*> by_index;
  by_index.reserve(parts.size());
  for (const size_t i : OrderShardParts(shards)) by_index.push_back(&parts[i]);

  const EvalPartial& first = *by_index.front();
  EvalMerge merge;
  TaskEvalResult& result = merge.result;
  // The run's settings in the file's order (the client's too), as the merged file keeps them.
  const InputsAndSettings in_file_order = ReadInFileOrder(first.path);
  try {
    const nlohmann::json& tasks = first.envelope.at("results").at("tasks");
    for (size_t t = 0; t < tasks.size(); ++t) {
      TaskScoreSum sum(tasks.at(t).at("task").get<std::string>());
      for (const EvalPartial* p : by_index) {
        const nlohmann::json& results = p->envelope.at("results");
        if (results.at("tasks").size() != tasks.size()) {
          Fail(kComponent, "'{}' runs {} tasks, '{}' {}", p->path.string(),
               results.at("tasks").size(), first.path.string(), tasks.size());
        }
        sum.Add(*p, results.at("tasks").at(t), results.at("shard").at("tasks").at(t));
      }
      result.scores.push_back(sum.score());
    }
    for (const EvalPartial* p : by_index) {
      result.timings += ResultsTimingsFromJson(p->envelope.at("timings"));
    }
    // The suites the run named are the results' other keys.
    std::vector<TaskSuite> suites;
    for (const auto& [key, value] : first.envelope.at("results").items()) {
      for (const TaskSuite& suite : KnownSuites()) {
        if (suite.name == key) suites.push_back(suite);
      }
    }
    result.suites = ScoreSuites(suites, result.scores);
    result.client = in_file_order.settings.at("client");
  } catch (const nlohmann::json::exception& e) {
    Fail(kComponent, "'{}' is not a partial eval result: {}", first.path.string(), e.what());
  }
  merge.envelope = TaskEvalEnvelope(result, in_file_order.inputs, in_file_order.settings);
  return merge;
}

}  // namespace proctor
