// `proctor merge OUT PARTIAL...`: the partial results of a sharded run (`--shard I/N --json
// FILE`) combined into the results file the unsharded run writes (eval/runners/shard.h).
#include <fmt/format.h>

#include "cli/verbs.h"
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
      "merge", "Combine the partial results of a sharded run (--shard I/N) into its results file");
  verb->add_option("out", args->out, "The results file to write (as the unsharded run's --json)")
      ->required();
  verb->add_option("partials", args->partials,
                   "Every shard's partial results file, in any order (shards 0 .. N-1, each once)")
      ->required();
  verb->footer(
      "Example:\n"
      "  proctor merge ppl.json part0.json part1.json part2.json part3.json\n"
      "Partials from other data, models or settings, another shard count, a shard missing or\n"
      "given twice are refused, naming the file. Today: ppl (`proctor ppl --shard I/N`).");
  verb->callback([args] {
    for (const std::string& partial : args->partials) {
      if (partial == args->out) {
        Fail("merge", "the output '{}' is also given as a partial result", args->out);
      }
    }
    const std::string command =
        ReadJsonFile(args->partials.front(), "merge").value("command", std::string());
    if (command != "ppl") {
      Fail("merge", "'{}' is a {} result; merge combines ppl partial results (ppl --shard I/N)",
           args->partials.front(), command.empty() ? "non-proctor" : "`" + command + "`");
    }
    std::vector<std::filesystem::path> partials(args->partials.begin(), args->partials.end());
    const PplMerge merge = MergePplPartials(partials);
    WriteResultsJson(args->out, merge.envelope);
    fmt::print("Merged {} shards of {} rows\n{}", partials.size(), merge.result.stats.rows,
               FormatPplSummary(merge.result));
    if (!Globals().quiet) fmt::print(stderr, "wrote {}\n", args->out);
  });
}

}  // namespace proctor::cli
