#include "eval/tasks/task_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "util/error.h"
#include "util/file.h"
#include "util/progress.h"
#include "util/timing.h"

namespace proctor {
namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

namespace {

constexpr const char* kOutputsMagic = "proctor_eval_outputs";
constexpr int kOutputsVersion = 1;

Json RecordToJson(const std::string& task, const ItemRecord& record) {
  Json line = {{"task", task},
               {"id", record.id},
               {"prompt", record.prompt},
               {"completion", record.completion},
               {"extracted", record.extracted},
               {"expected", record.expected},
               {"outcome", ItemOutcomeName(record.outcome)},
               {"correct", record.outcome == ItemOutcome::kCorrect}};
  if (record.correct_norm) line["correct_norm"] = *record.correct_norm;
  if (!record.group.empty()) line["group"] = record.group;
  if (!record.error.empty()) line["error"] = record.error;
  if (!record.tallies.empty()) {
    Json tallies = Json::array();
    for (const auto& [name, counts] : record.tallies) {
      tallies.push_back({name, counts[0], counts[1]});
    }
    line["tallies"] = std::move(tallies);
  }
  return line;
}

struct ResumedItem {
  ItemOutcome outcome = ItemOutcome::kWrong;
  std::optional<bool> correct_norm;
  std::string group;
  Tallies tallies;
};

// An outputs line's "tallies": [[name, hits, of], ...].
Tallies ParseTallies(const Json& value, const std::string& source) {
  Tallies tallies;
  if (!value.is_array()) Fail("tasks", "{}: 'tallies' is not a list", source);
  for (const Json& entry : value) {
    if (!entry.is_array() || entry.size() != 3 || !entry[0].is_string() ||
        !entry[1].is_number_integer() || !entry[2].is_number_integer()) {
      Fail("tasks", "{}: a tally is not [name, hits, of]: {}", source, entry.dump());
    }
    tallies.push_back(
        {entry[0].get<std::string>(), {entry[1].get<int64_t>(), entry[2].get<int64_t>()}});
  }
  return tallies;
}

void AddTallies(const Tallies& item, Tallies* total) {
  for (const auto& tally : item) {
    auto it = std::find_if(total->begin(), total->end(),
                           [&](const auto& entry) { return entry.first == tally.first; });
    if (it == total->end()) it = total->insert(total->end(), {tally.first, {0, 0}});
    it->second[0] += tally.second[0];
    it->second[1] += tally.second[1];
  }
}

struct ResumedFile {
  std::map<std::pair<std::string, std::string>, ResumedItem> outcomes;  // (task, id) -> item
  uint64_t complete_bytes = 0;  // up to the last complete line (a torn last line is dropped)
  bool exists = false;
};

// Reads an outputs file: its header must carry `run_settings`; request errors are not kept (they
// are asked again).
ResumedFile ReadOutputsFile(const fs::path& path, const Json& run_settings) {
  ResumedFile file;
  if (!fs::exists(path)) return file;
  file.exists = true;
  const std::string text = ReadFileToString(path);
  const size_t last_newline = text.rfind('\n');
  file.complete_bytes = last_newline == std::string::npos ? 0 : last_newline + 1;
  size_t begin = 0;
  int64_t line_number = 0;
  while (begin < file.complete_bytes) {
    const size_t end = text.find('\n', begin);
    const std::string_view line(text.data() + begin, end - begin);
    begin = end + 1;
    ++line_number;
    Json row;
    try {
      row = Json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      Fail("tasks", "{}:{}: not JSON ({}); an outputs file of `proctor eval` was expected",
           path.string(), line_number, e.what());
    }
    if (line_number == 1) {
      if (!row.is_object() || !row.contains(kOutputsMagic)) {
        Fail("tasks", "{}: not an outputs file of `proctor eval` (its first line has no '{}')",
             path.string(), kOutputsMagic);
      }
      if (row[kOutputsMagic] != kOutputsVersion) {
        Fail("tasks", "{}: outputs format version {} (this proctor reads {})", path.string(),
             row[kOutputsMagic].dump(), kOutputsVersion);
      }
      if (row.value("run", Json()) != run_settings) {
        Fail("tasks",
             "{}: it belongs to another run, so --resume cannot continue it: it has {}, this run "
             "is {}. Use another --outputs file (or the same settings).",
             path.string(), row.value("run", Json()).dump(), run_settings.dump());
      }
      continue;
    }
    if (!row.is_object() || !row.contains("task") || !row.contains("id") ||
        !row.contains("outcome") || !row["task"].is_string() || !row["id"].is_string() ||
        !row["outcome"].is_string()) {
      Fail("tasks", "{}:{}: expected an item record with task, id and outcome", path.string(),
           line_number);
    }
    const ItemOutcome outcome = ParseItemOutcome(row["outcome"].get<std::string>(),
                                                 fmt::format("{}:{}", path.string(), line_number));
    const auto key = std::make_pair(row["task"].get<std::string>(), row["id"].get<std::string>());
    if (outcome == ItemOutcome::kRequestError) {
      file.outcomes.erase(key);
    } else {
      ResumedItem item{
          .outcome = outcome, .correct_norm = std::nullopt, .group = "", .tallies = {}};
      if (row.contains("correct_norm") && row["correct_norm"].is_boolean()) {
        item.correct_norm = row["correct_norm"].get<bool>();
      }
      if (row.contains("group") && row["group"].is_string()) {
        item.group = row["group"].get<std::string>();
      }
      if (row.contains("tallies")) {
        item.tallies =
            ParseTallies(row["tallies"], fmt::format("{}:{}", path.string(), line_number));
      }
      file.outcomes[key] = item;
    }
  }
  return file;
}

// Appends lines to the outputs file, each flushed as it is written.
class OutputsAppender {
 public:
  OutputsAppender(const fs::path& path, const ResumedFile& resumed, const Json& run_settings)
      : path_(path) {
    if (resumed.exists) fs::resize_file(path, resumed.complete_bytes);
    file_ = std::fopen(path.c_str(), "ab");
    if (file_ == nullptr) Fail("tasks", "cannot write the outputs file '{}'", path.string());
    if (resumed.complete_bytes == 0) {
      Write(Json{{kOutputsMagic, kOutputsVersion}, {"run", run_settings}});
    }
  }
  ~OutputsAppender() {
    if (file_ != nullptr) std::fclose(file_);
  }
  OutputsAppender(const OutputsAppender&) = delete;
  OutputsAppender& operator=(const OutputsAppender&) = delete;

  void Write(const Json& line) {
    const std::string text = line.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
    if (std::fwrite(text.data(), 1, text.size(), file_) != text.size() || std::fflush(file_) != 0) {
      Fail("tasks", "writing the outputs file '{}' failed (disk full?)", path_.string());
    }
  }

 private:
  fs::path path_;
  FILE* file_ = nullptr;
};

// correct / n, 0 when n is 0.
double Share(int64_t correct, int64_t n) {
  return n == 0 ? 0.0 : static_cast<double>(correct) / static_cast<double>(n);
}

// The standard error of a share of 0/1 outcomes as lm-evaluation-harness computes it:
// sqrt(p (1 - p) / (n - 1)); 0 when n < 2.
double ShareStandardError(int64_t correct, int64_t n) {
  if (n < 2) return 0.0;
  const double p = Share(correct, n);
  return std::sqrt(p * (1.0 - p) / static_cast<double>(n - 1));
}

}  // namespace

double TaskScore::accuracy() const { return Share(count(ItemOutcome::kCorrect), n); }

double TaskScore::standard_error() const {
  return ShareStandardError(count(ItemOutcome::kCorrect), n);
}

double TaskScore::accuracy_norm() const { return Share(correct_norm, n); }

double TaskScore::standard_error_norm() const { return ShareStandardError(correct_norm, n); }

void CheckOutputsFile(const TaskRunOptions& options) {
  if (options.outputs.empty()) return;
  if (fs::exists(options.outputs) && !options.resume) {
    Fail("tasks",
         "the outputs file '{}' exists: pass --resume to continue that run, or choose another "
         "file",
         options.outputs.string());
  }
  if (options.resume) ReadOutputsFile(options.outputs, options.run_settings);
}

std::vector<TaskScore> RunTasks(const std::vector<const Task*>& tasks, CompletionClient& client,
                                const TaskRunOptions& options) {
  CheckOutputsFile(options);
  ResumedFile resumed;
  std::unique_ptr<OutputsAppender> appender;
  if (!options.outputs.empty()) {
    resumed = ReadOutputsFile(options.outputs, options.run_settings);
    appender = std::make_unique<OutputsAppender>(options.outputs, resumed, options.run_settings);
  }
  std::vector<TaskScore> scores;
  for (const Task* task : tasks) {
    TaskScore score;
    score.task = task->name();
    const ItemRange range = ItemsOf(options.shard, task->size());
    score.n = range.size();
    score.note = task->Note();
    score.settings = task->Settings();
    score.show_groups = task->ShowsGroups();
    if (!score.note.empty() && !options.quiet) fmt::print(stderr, "note: {}\n", score.note);
    const double start = MonotonicSeconds();
    score.items.reserve(static_cast<size_t>(score.n));
    Progress progress({.label = task->name(),
                       .unit = "items",
                       .total = static_cast<uint64_t>(score.n),
                       .mode = options.quiet ? Progress::Mode::kQuiet : Progress::Mode::kAuto});
    for (int64_t i = range.first; i < range.end; ++i) {
      const std::string id = task->ItemId(i);
      const auto done = resumed.outcomes.find({task->name(), id});
      ItemOutcome outcome;
      std::optional<bool> correct_norm;
      std::string group;
      if (done != resumed.outcomes.end()) {
        outcome = done->second.outcome;
        correct_norm = done->second.correct_norm;
        group = done->second.group;
        AddTallies(done->second.tallies, &score.tallies);
        ++score.resumed;
      } else {
        const ItemRecord record = task->Run(i, client);
        outcome = record.outcome;
        correct_norm = record.correct_norm;
        group = record.group;
        AddTallies(record.tallies, &score.tallies);
        if (appender) appender->Write(RecordToJson(task->name(), record));
      }
      if (!group.empty()) {
        auto& slice = score.groups[group];
        ++slice[0];
        if (outcome == ItemOutcome::kCorrect) ++slice[1];
      }
      ++score.counts[static_cast<size_t>(outcome)];
      if (correct_norm) {
        score.has_norm = true;
        if (*correct_norm) ++score.correct_norm;
      }
      score.items.emplace_back(id, outcome);
      progress.Advance();
    }
    progress.Finish();
    score.seconds = SecondsSince(start);
    scores.push_back(std::move(score));
  }
  return scores;
}

Json GroupsToJson(const TaskScore& score) {
  Json out = Json::object();
  for (const auto& [name, slice] : score.groups) {
    out[name] = {{"n", slice[0]}, {"correct", slice[1]}, {"accuracy", Share(slice[1], slice[0])}};
  }
  return out;
}

Json TalliesToJson(const TaskScore& score) {
  Json out = Json::object();
  for (const auto& [name, counts] : score.tallies) {
    out[name] = {{"hits", counts[0]}, {"of", counts[1]}, {"share", Share(counts[0], counts[1])}};
  }
  return out;
}

std::string FormatTaskTable(const std::vector<TaskScore>& scores) {
  bool any_norm = false;
  for (const TaskScore& s : scores) any_norm = any_norm || s.has_norm;
  std::string out = fmt::format("{:<13} {:>6} {:>17} {:>8} {:>6} {:>11} {:>9}{}\n", "task", "n",
                                "accuracy", "correct", "wrong", "unscorable", "req.error",
                                any_norm ? fmt::format(" {:>17}", "acc_norm") : "");
  for (const TaskScore& s : scores) {
    std::string norm;
    if (s.has_norm) {
      norm = fmt::format(" {:>8.2f}% ± {:>5.2f}", 100.0 * s.accuracy_norm(),
                         100.0 * s.standard_error_norm());
    } else if (any_norm) {
      norm = fmt::format(" {:>17}", "-");
    }
    out +=
        fmt::format("{:<13} {:>6} {:>8.2f}% ± {:>5.2f} {:>8} {:>6} {:>11} {:>9}{}\n", s.task, s.n,
                    100.0 * s.accuracy(), 100.0 * s.standard_error(),
                    s.count(ItemOutcome::kCorrect), s.count(ItemOutcome::kWrong),
                    s.count(ItemOutcome::kUnscorable), s.count(ItemOutcome::kRequestError), norm);
    for (const auto& [name, counts] : s.tallies) {
      out += fmt::format("  {:<19} {:>6.2f}% {:>8} of {}\n", name,
                         100 * Share(counts[0], counts[1]), counts[0], counts[1]);
    }
    if (s.show_groups) {
      for (const auto& [name, slice] : s.groups) {
        const double p = Share(slice[1], slice[0]);
        const double se = ShareStandardError(slice[1], slice[0]);
        out += fmt::format("  {:<11} {:>6} {:>8.2f}% ± {:>5.2f} {:>8}\n", name, slice[0], 100 * p,
                           100 * se, slice[1]);
      }
    }
  }
  out +=
      "accuracy: correct / n, ± one standard error (sqrt(p(1-p)/(n-1))); unscorable: an answer "
      "with nothing to read out of it; req.error: no answer came (counted as not correct).\n";
  if (any_norm) {
    out += "acc_norm: the choice with the largest log-likelihood per character (lm-eval's).\n";
  }
  bool any_tallies = false;
  for (const TaskScore& s : scores) any_tallies = any_tallies || !s.tallies.empty();
  if (any_tallies) {
    out +=
        "indented: further scores of the task (ifeval: loose = the prompt passes after lm-eval's "
        "clean-ups; instructions = per instruction, strict and loose).\n";
  }
  return out;
}

Json TaskScoreToJson(const TaskScore& score) {
  return {{"task", score.task},
          {"n", score.n},
          {"accuracy", score.accuracy()},
          {"standard_error", score.standard_error()},
          {"correct", score.count(ItemOutcome::kCorrect)},
          {"wrong", score.count(ItemOutcome::kWrong)},
          {"unscorable", score.count(ItemOutcome::kUnscorable)},
          {"request_errors", score.count(ItemOutcome::kRequestError)},
          {"accuracy_norm", score.has_norm ? Json(score.accuracy_norm()) : Json()},
          {"standard_error_norm", score.has_norm ? Json(score.standard_error_norm()) : Json()},
          {"resumed", score.resumed},
          {"groups", GroupsToJson(score)},
          {"tallies", TalliesToJson(score)},
          {"seconds", score.seconds},
          {"note", score.note},
          {"settings", score.settings}};
}

}  // namespace proctor
