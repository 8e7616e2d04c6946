// `proctor report RESULTS.json... --out report.html`: the report page of `proctor compare`, `demo`
// or `kv-curve` results (eval/report/report.h): the table, its legend and the plots,
// self-contained, with the plots also as SVG and PNG files beside it.
#include <fmt/format.h>

#include "cli/verbs.h"
#include "eval/report/gnuplot.h"
#include "eval/report/report.h"
#include "util/error.h"

namespace proctor::cli {

void RegisterReportVerb(CLI::App& app) {
  struct Args {
    std::vector<std::string> results;
    std::string out = "proctor-report.html";
  };
  auto args = std::make_shared<Args>();
  auto* verb = app.add_subcommand(
      "report",
      "Write the report page (HTML: tables, legends, plots) of compare, demo or kv-curve results");
  verb->footer(
      "Example:\n"
      "  proctor compare --teacher model-f16.gguf --data notes.txt --quantize q4_k_m,q8_0 --out "
      "study\n"
      "  proctor report study/compare.json --out study.html\n"
      "The page needs no network (the plots are inline SVG drawn by gnuplot); the plots are also "
      "written as SVG and PNG files in <name>_plots/ beside it.");
  verb->add_option("results", args->results,
                   "compare.json of a study (or the --json of compare, demo or kv-curve); "
                   "several make one page with a section each")
      ->required();
  verb->add_option("-o,--out", args->out, "The HTML file to write (default proctor-report.html)");
  verb->callback([args] {
    const std::filesystem::path out = args->out;
    if (out.extension() != ".html" && out.extension() != ".htm") {
      Fail("report", "--out {}: the report is an HTML file (name it .html)", args->out);
    }
    const std::filesystem::path parent = out.has_parent_path() ? out.parent_path() : ".";
    if (!std::filesystem::is_directory(parent)) {
      Fail("report", "--out {}: the directory {} does not exist", args->out, parent.string());
    }
    RequireGnuplot();
    std::vector<ReportStudy> studies;
    for (const std::string& file : args->results) studies.push_back(ReadReportStudy(file));
    const ReportFiles files = WriteReport(studies, out);
    for (const std::string& note : files.notes) fmt::print("note: {}\n", note);
    fmt::print("wrote {} ({} plot files in {})\n", files.html.string(), files.plots.size(),
               files.plots.empty() ? "-" : files.plots.front().parent_path().string());
  });
}

}  // namespace proctor::cli
