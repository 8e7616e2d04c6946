// `proctor report`: one self-contained HTML page of `proctor compare` (or `demo`) studies, with
// the comparison table, its legend and four plots per study (and of `proctor kv-curve` runs, with
// their table and KV curve), also written as SVG and PNG files for papers:
//   kl-vs-bits      KL mean (+- SE, log scale) against bits per weight, the Pareto front marked
//   dppl-vs-bits    delta perplexity (+- SE) against bits per weight, its Pareto front marked
//   kl-cdf          the distribution of per-position KL (empirical CDF, log scale) per model
//   kl-by-position  mean KL over the sequences at each position of the context, per model
// The last two read the per-position files compare keeps in its study directory (positions/);
// a study without them gets the first two and a note. Plots are drawn by gnuplot
// (eval/report/gnuplot.h) and inlined as SVG: the page needs no network and no script.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "eval/compare/compare_pipeline.h"

namespace proctor {

struct ReportStudy {
  std::filesystem::path source;     // the results file read ("" when built in memory)
  std::filesystem::path study_dir;  // where positions/ lives
  CompareResult result;
  // Set instead of `result` for the results of `proctor kv-curve`: a section with its table and
  // the KV curve (KL mean +- SE against the cache's effective bits, the Pareto front marked).
  std::optional<nlohmann::ordered_json> kv_curve{};
};

// Reads a results file of `proctor compare`, `demo` or `kv-curve` (the envelope, or its
// "results"). Error("[report] ...") naming the file for anything else (saying what command
// wrote it).
ReportStudy ReadReportStudy(const std::filesystem::path& results_file);

struct ReportFiles {
  std::filesystem::path html;
  std::vector<std::filesystem::path> plots;  // SVG and PNG, in <html stem>_plots/
  std::vector<std::string> notes;            // e.g. a study without per-position files
};

// Writes `html` (atomically) and its plot files. Error when there is no study or gnuplot fails.
ReportFiles WriteReport(const std::vector<ReportStudy>& studies, const std::filesystem::path& html);

// Indices of the points on the lower-left Pareto front (no other point has fewer or equal x and a
// lower y), by increasing x; ties in x keep the lowest y.
std::vector<size_t> ParetoFront(const std::vector<std::pair<double, double>>& points);

}  // namespace proctor
