// Plots drawn by gnuplot (Debian's gnuplot-nox, installed by scripts/install-deps.sh): proctor
// writes a script and its data files into a scratch directory and runs `gnuplot script.gp` there
// (no shell); the script writes the SVG and PNG files it names.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace proctor {

// The gnuplot executable on PATH; Error("[report] ...") saying how to install it when there is
// none (callers check before they start long work).
std::filesystem::path RequireGnuplot();

struct GnuplotJob {
  std::string script;                                       // gnuplot commands
  std::vector<std::pair<std::string, std::string>> data{};  // file name -> contents
};

// Runs `job` in `dir` (created if missing). Error("[report] ...") when gnuplot is missing or
// fails (with the end of its output).
void RunGnuplot(const GnuplotJob& job, const std::filesystem::path& dir);

// A string as a gnuplot string literal (single quotes; a quote doubled).
std::string GnuplotQuote(const std::string& text);

}  // namespace proctor
