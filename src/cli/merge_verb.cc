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
#include "util/error.h"
#include "util/json_file.h"

namespace proctor::cli {

void RegisterMergeVerb(CLI::App& app) {
  struct Args {
    std::string out;
    std::vector<std::string> partials;
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
  verb->footer(
      "Example:\n"
      "  proctor merge ppl.json part0.json part1.json part2.json part3.json\n"
      "  proctor merge teacher-dump/ part0/ part1/ part2/ part3/\n"
      "Partials from other data, models or settings, another shard count, a shard missing or\n"
      "given twice are refused, naming the file, and nothing is written. Today: ppl, dump and\n"
      "saved-teacher kl (`proctor ppl|dump|kl --shard I/N`).");
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
           "'{}' is a {} result; merge combines ppl and kl partial results (--shard I/N) and "
           "dump shard directories",
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
