// `proctor kl-diff A.json B.json`: two candidates' `proctor kl --json` results on one dump,
// paired sequence by sequence (eval/runners/kl_diff.h).
#include <fmt/format.h>

#include "cli/verbs.h"
#include "eval/runners/kl_diff.h"
#include "eval/runners/results_json.h"

namespace proctor::cli {

void RegisterKlDiffVerb(CLI::App& app) {
  struct Args {
    std::string a, b, json;
    int bootstrap = kDefaultBootstrapDraws;
    uint32_t seed = kDefaultBootstrapSeed;
  };
  auto args = std::make_shared<Args>();
  auto* verb = app.add_subcommand(
      "kl-diff",
      "Is B really better than A? Two `proctor kl --json` results on the same dump, paired "
      "sequence by sequence: KL, top-1 and NLL differences with paired errors.\n"
      "Example: proctor kl --reference-logits dump/ --model q4.gguf --json a.json\n"
      "         proctor kl --reference-logits dump/ --model q5.gguf --json b.json\n"
      "         proctor kl-diff a.json b.json");
  verb->add_option("a", args->a, "Candidate A's results file (the reference side)")->required();
  verb->add_option("b", args->b, "Candidate B's results file")->required();
  verb->add_option("--bootstrap", args->bootstrap,
                   fmt::format("Bootstrap resamples of the sequences (default {}; 0: none)",
                               kDefaultBootstrapDraws))
      ->check(CLI::Range(0, 1000000));
  verb->add_option("--seed", args->seed,
                   fmt::format("Bootstrap seed (default {})", kDefaultBootstrapSeed));
  verb->add_option("--json", args->json, "Also write the comparison as JSON to this file");
  verb->callback([args] {
    const KlDiffResult result = CompareKlResults(args->a, args->b, args->bootstrap, args->seed);
    fmt::print("{}", FormatKlDiff(result));
    if (args->json.empty()) return;
    ResultsEnvelope env{.command = "kl-diff"};
    env.inputs.push_back(DescribeFileInput("a", args->a));
    env.inputs.push_back(DescribeFileInput("b", args->b));
    env.settings = {{"bootstrap", args->bootstrap}, {"seed", args->seed}};
    env.results = KlDiffToJson(result);
    WriteResultsJson(args->json, env);
  });
}

}  // namespace proctor::cli
