// `proctor runs list | show ID | compare ID ID`: the run database every `proctor eval` records
// into (eval/runs/run_database.h).
#include <fmt/format.h>

#include "cli/verbs.h"
#include "eval/runs/run_compare.h"
#include "eval/runs/run_database.h"
#include "util/error.h"

namespace proctor::cli {
namespace {

struct RunsFlags {
  std::string db;
  int64_t limit = 20;
  int64_t id = 0;
  int64_t a = 0;
  int64_t b = 0;
  bool json = false;
};

RunDatabase OpenDatabase(const RunsFlags& flags) {
  const std::filesystem::path path =
      flags.db.empty() ? DefaultRunDatabasePath() : std::filesystem::path(flags.db);
  if (!std::filesystem::exists(path)) {
    Fail("runs", "no run database at '{}' yet: `proctor eval` records there (or pass --db FILE)",
         path.string());
  }
  return RunDatabase::Open(path);
}

RunRecord GetRun(const RunDatabase& db, int64_t id) {
  std::optional<RunRecord> run = db.Get(id);
  if (!run) Fail("runs", "{} has no run {} (proctor runs list shows them)", db.path().string(), id);
  return *std::move(run);
}

}  // namespace

void RegisterRunsVerb(CLI::App& app) {
  auto flags = std::make_shared<RunsFlags>();
  auto* verb = app.add_subcommand(
      "runs",
      "The recorded task-eval runs: list them, show one, compare two on the same items.\n"
      "Example: proctor runs list\n"
      "         proctor runs compare 3 7      (B - A with McNemar's exact p-value)");
  verb->require_subcommand(1);
  verb->add_option("--db", flags->db, "Run database (default: ~/.cache/proctor/runs.sqlite)");
  verb->add_flag("--json", flags->json, "Print JSON instead of a table");

  auto* list = verb->add_subcommand("list", "The newest runs, one line each");
  list->add_option("--limit", flags->limit, "How many (default 20; 0: all)")
      ->check(CLI::NonNegativeNumber);
  list->callback([flags] {
    const RunDatabase db = OpenDatabase(*flags);
    const std::vector<RunRecord> runs = db.List(flags->limit);
    if (flags->json) {
      nlohmann::ordered_json out = nlohmann::ordered_json::array();
      for (const RunRecord& r : runs) out.push_back(RunRecordToJson(r, false));
      fmt::print("{}\n", out.dump(2));
      return;
    }
    fmt::print("{}", FormatRunList(runs));
  });

  auto* show = verb->add_subcommand("show", "Everything recorded about one run, with its items");
  show->add_option("id", flags->id, "Run id")->required();
  show->callback([flags] {
    const RunDatabase db = OpenDatabase(*flags);
    fmt::print("{}\n", RunRecordToJson(GetRun(db, flags->id), true).dump(2));
  });

  auto* compare = verb->add_subcommand(
      "compare", "Pair two runs of one task on the items both scored: B - A and McNemar's p");
  compare->add_option("a", flags->a, "Run A (the reference)")->required();
  compare->add_option("b", flags->b, "Run B (the candidate)")->required();
  compare->callback([flags] {
    const RunDatabase db = OpenDatabase(*flags);
    const RunComparison comparison = CompareRuns(GetRun(db, flags->a), GetRun(db, flags->b));
    if (flags->json) {
      fmt::print("{}\n", RunComparisonToJson(comparison).dump(2));
      return;
    }
    fmt::print("{}", FormatRunComparison(comparison));
  });
}

}  // namespace proctor::cli
