#include "eval/runs/run_compare.h"

#include <fmt/format.h>

#include <map>

#include "util/error.h"

namespace proctor {
using Json = nlohmann::ordered_json;

namespace {

// "kv affine:4, compute f32" from a run's settings (what usually tells two runs apart).
std::string SettingsSummary(const Json& settings) {
  std::string out;
  for (const char* key : {"kv", "kv_k", "kv_v", "compute", "endpoint_model"}) {
    if (settings.contains(key) && settings[key].is_string()) {
      if (!out.empty()) out += ", ";
      out += fmt::format("{} {}", key, settings[key].get<std::string>());
    }
  }
  return out;
}

std::string Shorten(const std::string& text, size_t width) {
  if (text.size() <= width) return text;
  return "..." + text.substr(text.size() - (width - 3));
}

}  // namespace

RunComparison CompareRuns(const RunRecord& a, const RunRecord& b) {
  if (a.task != b.task) {
    Fail("runs", "run {} is {} and run {} is {}: only runs of the same task pair up", a.id, a.task,
         b.id, b.task);
  }
  std::map<std::string, bool> b_correct;
  for (const auto& [id, outcome] : b.items) b_correct[id] = outcome == "correct";
  RunComparison out;
  std::vector<bool> left, right;
  std::map<std::string, bool> seen_in_a;
  for (const auto& [id, outcome] : a.items) {
    seen_in_a[id] = true;
    const auto found = b_correct.find(id);
    if (found == b_correct.end()) {
      ++out.only_in_a;
      continue;
    }
    left.push_back(outcome == "correct");
    right.push_back(found->second);
  }
  for (const auto& [id, correct] : b_correct) {
    if (seen_in_a.count(id) == 0) ++out.only_in_b;
  }
  if (left.empty()) {
    Fail("runs",
         "runs {} and {} ({}) share no item: nothing to pair (were they sampled with "
         "different --n or --seed?)",
         a.id, b.id, a.task);
  }
  out.paired = ComparePaired(left, right);
  out.a = a;
  out.a.items.clear();
  out.b = b;
  out.b.items.clear();
  return out;
}

std::string FormatRunComparison(const RunComparison& c) {
  const PairedOutcomes& p = c.paired;
  std::string out = fmt::format("task {}: {} items scored by both runs", c.a.task, p.n);
  if (c.only_in_a + c.only_in_b > 0) {
    out += fmt::format(" ({} only in A, {} only in B, left out)", c.only_in_a, c.only_in_b);
  }
  out += "\n";
  out += fmt::format("  A  run {:<5} {:>7.2f}%  {} {}\n", c.a.id, 100 * p.accuracy_a,
                     Shorten(c.a.model, 50), SettingsSummary(c.a.settings));
  out += fmt::format("  B  run {:<5} {:>7.2f}%  {} {}\n", c.b.id, 100 * p.accuracy_b,
                     Shorten(c.b.model, 50), SettingsSummary(c.b.settings));
  out += fmt::format("  B - A: {:+.2f} points ± {:.2f} (paired standard error)\n",
                     100 * p.difference, 100 * p.difference_standard_error);
  out += fmt::format(
      "  both correct {}, only A {}, only B {}, both wrong {}; McNemar exact p = {:.4g}\n",
      p.both_correct, p.only_a, p.only_b, p.both_wrong, p.mcnemar_p);
  out +=
      "p: the chance of a split of the discordant items at least this uneven if the runs were "
      "equally good (small p: a real difference).\n";
  return out;
}

Json RunComparisonToJson(const RunComparison& c) {
  const PairedOutcomes& p = c.paired;
  return {{"task", c.a.task},
          {"a", RunRecordToJson(c.a, false)},
          {"b", RunRecordToJson(c.b, false)},
          {"n", p.n},
          {"only_in_a", c.only_in_a},
          {"only_in_b", c.only_in_b},
          {"accuracy_a", p.accuracy_a},
          {"accuracy_b", p.accuracy_b},
          {"difference", p.difference},
          {"difference_standard_error", p.difference_standard_error},
          {"both_correct", p.both_correct},
          {"only_a_correct", p.only_a},
          {"only_b_correct", p.only_b},
          {"both_wrong", p.both_wrong},
          {"mcnemar_p", p.mcnemar_p}};
}

std::string FormatRunList(const std::vector<RunRecord>& runs) {
  std::string out = fmt::format("{:>5}  {:<20}  {:<8} {:>6} {:>17}  {}\n", "id", "created", "task",
                                "n", "accuracy", "model, settings");
  for (const RunRecord& r : runs) {
    out += fmt::format("{:>5}  {:<20}  {:<8} {:>6} {:>8.2f}% ± {:>5.2f}  {} {}\n", r.id, r.created,
                       r.task, r.n, 100 * r.accuracy, 100 * r.standard_error, Shorten(r.model, 60),
                       SettingsSummary(r.settings));
  }
  return out;
}

Json RunRecordToJson(const RunRecord& r, bool with_items) {
  Json j = {{"id", r.id},
            {"created", r.created},
            {"task", r.task},
            {"model", r.model},
            {"model_sha256", r.model_sha256},
            {"proctor_version", r.proctor_version},
            {"settings", r.settings},
            {"n", r.n},
            {"correct", r.correct},
            {"accuracy", r.accuracy},
            {"standard_error", r.standard_error},
            {"kl", r.kl},
            {"capability", r.capability ? Json(*r.capability) : Json()},
            {"disk_bytes", r.disk_bytes ? Json(*r.disk_bytes) : Json()},
            {"machine", r.machine}};
  if (with_items) {
    Json items = Json::array();
    for (const auto& [id, outcome] : r.items) items.push_back({{"id", id}, {"outcome", outcome}});
    j["items"] = items;
  }
  return j;
}

}  // namespace proctor
