// `proctor merge OUT PARTIAL...`: the partial results of a sharded run (`--shard I/N --json
// FILE`) combined into the results file the unsharded run writes (eval/runners/shard.h), or the
// shard directories of a sharded dump into its dump directory (eval/runners/dump_shards.h).
#include <fmt/format.h>

#include <filesystem>

#include "cli/verbs.h"
#include "eval/runners/dump_floor.h"
#include "eval/runners/dump_shards.h"
#include "eval/runners/kl_shards.h"
#include "eval/runners/ppl.h"
#include "eval/runners/results_json.h"
#include "eval/runs/run_database.h"
#include "eval/tasks/task_runner.h"
#include "eval/tasks/task_shards.h"
#include "util/error.h"
#include "util/json_file.h"

namespace proctor::cli {

void RegisterMergeVerb(CLI::App& app) {
  struct Args {
    std::string out;
    std::vector<std::string> partials;
    std::string db;
    bool no_db = false;
  };
  auto args = std::make_shared<Args>();
  auto* verb = app.add_subcommand(
      "merge",
      "Combine the partial results of a sharded run (--shard I/N) into its results file, or a "
      "sharded dump's directories into its dump");
  verb->add_option("out", args->out,
                   "The results file to write (as the unsharded run's --json), or the dump "
                   "directory (absent or empty) for dump shards")
      ->required();
  verb->add_option("partials", args->partials,
                   "Every shard's partial results file or dump shard directory, in any order "
                   "(shards 0 .. N-1, each once)")
      ->required();
  auto* db = verb->add_option("--db", args->db,
                              "eval: the run database the merged run is recorded in (default: "
                              "~/.cache/proctor/runs.sqlite, as `proctor eval`)");
  verb->add_flag("--no-db", args->no_db, "eval: do not record the merged run")->excludes(db);
  verb->footer(
      "Example:\n"
      "  proctor merge ppl.json part0.json part1.json part2.json part3.json\n"
      "  proctor merge teacher-dump/ part0/ part1/ part2/ part3/\n"
      "Partials from other data, models or settings, another shard count, a shard missing or\n"
      "given twice are refused, naming the file, and nothing is written: ppl, dump, kl (every\n"
      "mode) and eval (`proctor ppl|dump|kl|eval --shard I/N`). A merged eval is recorded in\n"
      "the run database as the unsharded run would be.");
  verb->callback([args] {
    for (const std::string& partial : args->partials) {
      if (partial == args->out) {
        Fail("merge", "the output '{}' is also given as a partial result", args->out);
      }
    }
    if (std::filesystem::is_directory(args->partials.front())) {
      const std::vector<std::filesystem::path> dirs(args->partials.begin(), args->partials.end());
      const DumpMergeResult merged = MergeDumpShards(args->out, dirs);
      fmt::print(
          "Merged {} dump shards: {} sequences, {} positions into {} ({:.1f} MB linked, "
          "{:.1f} MB written)\n",
          merged.shards, merged.n_seqs, merged.positions, args->out,
          static_cast<double>(merged.bytes_linked) / 1e6,
          static_cast<double>(merged.bytes_copied) / 1e6);
      if (merged.floor) fmt::print("{}", FormatDumpFloorLine(*merged.floor));
      return;
    }
    const std::string command =
        ReadJsonFile(args->partials.front(), "merge").value("command", std::string());
    std::vector<std::filesystem::path> partials(args->partials.begin(), args->partials.end());
    if (command == "eval") {
      const EvalMerge merge = MergeEvalPartials(partials);
      WriteResultsJson(args->out, merge.envelope);
      const nlohmann::ordered_json& inputs = merge.envelope.inputs;
      const nlohmann::ordered_json model = !inputs.empty() && inputs[0].value("role", "") == "model"
                                               ? inputs[0]
                                               : nlohmann::ordered_json();
      fmt::print("Merged {} shards\n{}{}", partials.size(), FormatTaskTable(merge.result.scores),
                 FormatSuiteScores(merge.result.suites, ModelIdentity(model).second));
      if (!Globals().quiet) fmt::print(stderr, "wrote {}\n", args->out);
      if (args->no_db) return;
      // Recorded as the unsharded run records itself (its settings without the client's).
      nlohmann::ordered_json settings = merge.envelope.settings;
      settings.erase("client");
      const std::string spec = settings.contains("model") ? settings["model"].get<std::string>()
                                                          : settings.value("endpoint", "");
      RunDatabase database = RunDatabase::Open(args->db.empty() ? DefaultRunDatabasePath()
                                                                : std::filesystem::path(args->db));
      std::vector<int64_t> ids;
      for (const RunRecord& record : TaskEvalRunRecords(merge.result, spec, model, settings)) {
        ids.push_back(database.Insert(record));
      }
      if (!Globals().quiet) {
        fmt::print(stderr, "recorded as run {} in {} (proctor runs list)\n", fmt::join(ids, ", "),
                   database.path().string());
      }
      return;
    }
    if (command == "kl") {
      const KlMerge merge = MergeKlPartials(partials);
      WriteResultsJson(args->out, merge.envelope);
      fmt::print("Merged {} shards of {} sequences\n{}", partials.size(),
                 merge.result.stats.sequences, FormatKlTable({merge.result}, nullptr));
      if (!Globals().quiet) fmt::print(stderr, "wrote {}\n", args->out);
      return;
    }
    if (command != "ppl") {
      Fail("merge",
           "'{}' is a {} result; merge combines ppl, kl and eval partial results (--shard I/N) "
           "and dump shard directories",
           args->partials.front(), command.empty() ? "non-proctor" : "`" + command + "`");
    }
    const PplMerge merge = MergePplPartials(partials);
    WriteResultsJson(args->out, merge.envelope);
    fmt::print("Merged {} shards of {} rows\n{}", partials.size(), merge.result.stats.rows,
               FormatPplSummary(merge.result));
    if (!Globals().quiet) fmt::print(stderr, "wrote {}\n", args->out);
  });
}

}  // namespace proctor::cli
