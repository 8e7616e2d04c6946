#include "eval/report/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "eval/compare/compare_table.h"
#include "eval/formats/per_position.h"
#include "eval/report/gnuplot.h"
#include "util/error.h"
#include "util/file.h"
#include "util/html_escape.h"
#include "util/timing.h"

namespace proctor {
namespace fs = std::filesystem;
namespace {

constexpr const char* kComponent = "report";
// Log scales cannot show 0: smaller KLs are drawn at this value (the captions say so).
constexpr double kLogFloor = 1e-9;
constexpr size_t kCdfPoints = 400;  // per model

struct Plot {
  std::string name;     // file stem: "kl-vs-bits"
  std::string title;    // the figure's heading
  std::string caption;  // what it shows and how to read it
};

std::string GnuplotData(const std::vector<std::vector<std::string>>& rows) {
  std::string out;
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) out += (i ? " " : "") + row[i];
    out += "\n";
  }
  return out;
}

std::string DataString(const std::string& text) {
  std::string quoted = "\"";
  for (const char c : text) quoted += c == '"' ? '\'' : c;
  return quoted + "\"";
}

// The script lines that write `stem`.svg, then `stem`.png, from the plot commands `plot`.
std::string Render(const std::string& stem, const std::string& setup, const std::string& plot) {
  return fmt::format(
      "set terminal svg size 800,480 font 'sans,12' background rgb 'white'\n"
      "set output '{0}.svg'\n{1}\n{2}\n"
      "set terminal pngcairo size 1600,960 font 'sans,22' background rgb 'white'\n"
      "set output '{0}.png'\nreplot\nunset output\n",
      stem, setup, plot);
}

struct Per {
  std::vector<double> sorted_kl;    // every position's KL, ascending
  std::vector<double> mean_by_pos;  // mean over sequences at each position
};

std::optional<Per> ReadPositions(const ReportStudy& study, const CompareRow& row) {
  if (row.per_position.empty()) return std::nullopt;
  fs::path path = study.study_dir / row.per_position;
  if (!fs::exists(path)) return std::nullopt;
  const PerPositionFile file = ReadPerPositionFile(path);
  Per per;
  const size_t positions = file.header.positions_per_seq;
  std::vector<double> sum(positions, 0.0);
  std::vector<int64_t> count(positions, 0);
  for (const PerPositionRecord& r : file.records) {
    per.sorted_kl.push_back(r.score.kl);
    if (r.position < positions) {
      sum[r.position] += r.score.kl;
      ++count[r.position];
    }
  }
  std::sort(per.sorted_kl.begin(), per.sorted_kl.end());
  for (size_t p = 0; p < positions; ++p) {
    per.mean_by_pos.push_back(count[p] > 0 ? sum[p] / static_cast<double>(count[p]) : 0.0);
  }
  return per;
}

std::string Num(double v) { return fmt::format("{:.9g}", v); }

// Runs `job` in the scratch folder plot_dir/`work`, moves each plot's SVG and PNG up into
// plot_dir and removes the scratch folder.
void DrawPlots(const GnuplotJob& job, const fs::path& plot_dir, const std::string& work,
               const std::vector<Plot>& plots) {
  RunGnuplot(job, plot_dir / work);
  for (const Plot& p : plots) {
    for (const char* ext : {".svg", ".png"}) {
      fs::rename(plot_dir / work / (p.name + ext), plot_dir / (p.name + ext));
    }
  }
  fs::remove_all(plot_dir / work);
}

// The plots of one study: gnuplot writes them into `plot_dir` with file stems prefix + name.
std::vector<Plot> DrawStudy(const ReportStudy& study, const fs::path& plot_dir,
                            const std::string& prefix, std::vector<std::string>* notes) {
  const CompareResult& r = study.result;
  const double teacher_ppl = r.rows.empty() ? 0.0 : r.rows.front().perplexity.ppl;
  std::vector<std::pair<double, double>> kl_points, ppl_points;
  std::vector<std::vector<std::string>> points;
  for (const CompareRow& row : r.rows) {
    const double kl = row.kl.at("kl").at("mean").get<double>();
    const double kl_se = row.kl.at("kl").at("standard_error").get<double>();
    const double dppl = row.perplexity.ppl - teacher_ppl;
    kl_points.emplace_back(row.bits_per_weight, kl);
    ppl_points.emplace_back(row.bits_per_weight, dppl);
    points.push_back({DataString(row.candidate), Num(row.bits_per_weight),
                      Num(std::max(kl, kLogFloor)), Num(kl_se), Num(dppl),
                      Num(row.perplexity.standard_error)});
  }
  auto front_data = [&](const std::vector<std::pair<double, double>>& xy, bool log_floor) {
    std::vector<std::vector<std::string>> rows;
    for (const size_t i : ParetoFront(xy)) {
      rows.push_back(
          {Num(xy[i].first), Num(log_floor ? std::max(xy[i].second, kLogFloor) : xy[i].second)});
    }
    return GnuplotData(rows);
  };
  GnuplotJob job;
  job.data = {{"points.dat", GnuplotData(points)},
              {"kl-front.dat", front_data(kl_points, true)},
              {"ppl-front.dat", front_data(ppl_points, false)}};
  const std::string common =
      "set grid\nset key top right\nset xlabel 'bits per weight (stored bits / teacher "
      "parameter)'\nset offsets graph 0.05, graph 0.3, graph 0.08, graph 0.08\n";
  job.script += Render(
      prefix + "kl-vs-bits",
      common + "set logscale y\nset format y '10^{%T}'\nset ylabel 'KL mean (nats / position)'",
      "plot 'kl-front.dat' using 1:2 with lines lw 2 dt 2 lc rgb '#888888' title 'Pareto front', "
      "'points.dat' using 2:3:4 with yerrorbars pt 7 ps 1.2 lc rgb '#1f77b4' notitle, "
      "'points.dat' using 2:3:1 with labels offset 0.8,0.6 left noenhanced notitle");
  job.script += "unset logscale y\nset format y '%g'\n";
  job.script += Render(
      prefix + "dppl-vs-bits", common + "set ylabel 'perplexity - teacher perplexity'",
      "plot 'ppl-front.dat' using 1:2 with lines lw 2 dt 2 lc rgb '#888888' title 'Pareto "
      "front', 'points.dat' using 2:5:6 with yerrorbars pt 7 ps 1.2 lc rgb '#d62728' notitle, "
      "'points.dat' using 2:5:1 with labels offset 0.8,0.6 left noenhanced notitle");
  std::vector<Plot> plots = {
      {prefix + "kl-vs-bits", "KL against size",
       fmt::format("Mean KL(teacher || candidate) over the teacher's top-{} logits, ± its "
                   "standard error, against bits per weight (log scale; a KL of 0 is drawn at "
                   "{:g}). The dashed line joins the Pareto front: the models no smaller model "
                   "beats.",
                   r.top_k, kLogFloor)},
      {prefix + "dppl-vs-bits", "Perplexity against size",
       "The candidate's perplexity over the corpus minus the teacher's, ± the candidate's "
       "standard error, against bits per weight, with its Pareto front."}};

  std::string cdf_plot, position_plot;
  int drawn = 0;
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const std::optional<Per> per = ReadPositions(study, r.rows[i]);
    if (!per || per->sorted_kl.empty()) continue;
    std::vector<std::vector<std::string>> cdf, by_pos;
    const size_t n = per->sorted_kl.size();
    const size_t step = std::max<size_t>(1, n / kCdfPoints);
    for (size_t k = 0; k < n; k += step) {
      cdf.push_back({Num(std::max(per->sorted_kl[k], kLogFloor)),
                     Num(static_cast<double>(k + 1) / static_cast<double>(n))});
    }
    cdf.push_back({Num(std::max(per->sorted_kl.back(), kLogFloor)), "1"});
    for (size_t p = 0; p < per->mean_by_pos.size(); ++p) {
      by_pos.push_back(
          {Num(static_cast<double>(p)), Num(std::max(per->mean_by_pos[p], kLogFloor))});
    }
    const std::string cdf_file = fmt::format("cdf-{}.dat", i),
                      pos_file = fmt::format("pos-{}.dat", i);
    job.data.emplace_back(cdf_file, GnuplotData(cdf));
    job.data.emplace_back(pos_file, GnuplotData(by_pos));
    const std::string title = GnuplotQuote(r.rows[i].candidate);
    cdf_plot += fmt::format("{}'{}' using 1:2 with steps lw 2 title {} noenhanced",
                            drawn ? ", " : "plot ", cdf_file, title);
    position_plot += fmt::format("{}'{}' using 1:2 with lines lw 1.5 title {} noenhanced",
                                 drawn ? ", " : "plot ", pos_file, title);
    ++drawn;
  }
  if (drawn > 0) {
    job.script += Render(prefix + "kl-cdf",
                         "set offsets 0, 0, 0, 0\nset grid\nset key bottom right\nset "
                         "logscale x\nset format x "
                         "'10^{%T}'\nset yrange [0:1]\nset xlabel 'KL at a position (nats)'\n"
                         "set ylabel 'fraction of positions with KL <= x'",
                         cdf_plot);
    job.script += "unset logscale x\nset format x '%g'\nset autoscale y\n";
    job.script +=
        Render(prefix + "kl-by-position",
               "set grid\nset key top right\nset logscale y\nset format y "
               "'10^{%T}'\nset xrange [0:*]\nset xlabel 'position r in the sequence (the "
               "distribution over token r + 1)'\nset ylabel 'mean KL over the sequences (nats)'",
               position_plot);
    plots.push_back(
        {prefix + "kl-cdf", "Where the KL is: its distribution",
         fmt::format("The fraction of the corpus positions whose KL is at most x, per model (log "
                     "x; KLs below {:g} are drawn there). A curve to the left is closer to the "
                     "teacher; the gap between the curves' tails is where the rare large "
                     "errors are.",
                     kLogFloor)});
    plots.push_back({prefix + "kl-by-position", "Where the KL is: along the context",
                     "Mean KL at each position of the sequences, per model (log scale): "
                     "whether the damage grows with the context."});
  } else {
    notes->push_back(fmt::format(
        "{}: no per-position files (positions/ in the study directory), so no distribution or "
        "per-position plots; rerun the compare command to make them",
        study.source.empty() ? r.out_dir.string() : study.source.string()));
  }
  DrawPlots(job, plot_dir, prefix + "gnuplot", plots);
  return plots;
}

// The KV curve of a kv-curve run: KL (log) against the cache's effective bits per scheme.
std::vector<Plot> DrawKvCurve(const nlohmann::ordered_json& results, const fs::path& plot_dir,
                              const std::string& prefix) {
  std::vector<std::pair<double, double>> xy;
  std::vector<std::vector<std::string>> points;
  for (const auto& row : results.at("rows")) {
    const double bits = row.at("effective_bits").get<double>();
    const double kl = row.at("kl").at("mean").get<double>();
    xy.emplace_back(bits, kl);
    points.push_back({DataString(row.at("kv").get<std::string>()), Num(bits),
                      Num(std::max(kl, kLogFloor)),
                      Num(row.at("kl").at("standard_error").get<double>())});
  }
  std::vector<std::vector<std::string>> front;
  for (const size_t i : ParetoFront(xy)) {
    front.push_back({Num(xy[i].first), Num(std::max(xy[i].second, kLogFloor))});
  }
  GnuplotJob job;
  job.data = {{"kv.dat", GnuplotData(points)}, {"kv-front.dat", GnuplotData(front)}};
  job.script = Render(
      prefix + "kv-curve",
      "set grid\nset key top right\nset offsets graph 0.05, graph 0.3, graph 0.08, graph 0.08\n"
      "set logscale y\nset format y '10^{%T}'\nset xlabel 'KV cache bits per element "
      "(scales and biases included)'\nset ylabel 'KL mean on the decode path (nats)'",
      "plot 'kv-front.dat' using 1:2 with lines lw 2 dt 2 lc rgb '#888888' title 'Pareto front', "
      "'kv.dat' using 2:3:4 with yerrorbars pt 7 ps 1.2 lc rgb '#2ca02c' notitle, "
      "'kv.dat' using 2:3:1 with labels offset 0.8,0.6 left noenhanced notitle");
  std::vector<Plot> plots = {
      {prefix + "kv-curve", "The KV curve",
       fmt::format("Mean KL of the full-precision cache's next-token distribution to each "
                   "scheme's, over the decode steps, ± its standard error, against the "
                   "cache's bits per element (log scale; a KL of 0 is drawn at {:g}). The "
                   "dashed line joins the Pareto front.",
                   kLogFloor)}};
  DrawPlots(job, plot_dir, prefix + "kv-gnuplot", plots);
  return plots;
}

std::string KvCurveHtml(const nlohmann::ordered_json& results) {
  std::string out =
      "<table>\n<thead><tr><th>KV cache</th><th>bits</th><th>bytes / token</th><th>KL mean ± "
      "SE</th><th>median</th><th>p95</th><th>top-1</th><th>positions</th><th>decode tok/s</th>"
      "</tr></thead>\n<tbody>\n";
  for (const auto& row : results.at("rows")) {
    const auto& kl = row.at("kl");
    out += fmt::format(
        "<tr><td>{}</td><td>{:.2f}</td><td>{}</td><td>{:.3e} ± {:.1e}</td><td>{:.3e}</td>"
        "<td>{:.3e}</td><td>{:.4f}</td><td>{}</td><td>{:.1f}</td></tr>\n",
        HtmlEscape(row.at("kv").get<std::string>()), row.at("effective_bits").get<double>(),
        row.at("bytes_per_token").get<int64_t>(), kl.at("mean").get<double>(),
        kl.at("standard_error").get<double>(), kl.at("median").get<double>(),
        kl.at("p95").get<double>(), row.at("top1_agreement").get<double>(),
        row.at("positions").get<int64_t>(), row.at("decode_tokens_per_second").get<double>());
  }
  return out + "</tbody>\n</table>\n";
}

// An SVG file as inline markup: no XML prolog, its ids prefixed so that several SVGs can share
// one page.
std::string InlineSvg(const fs::path& svg, const std::string& id_prefix) {
  std::string text = ReadFileToString(svg);
  const size_t start = text.find("<svg");
  if (start == std::string::npos) Fail(kComponent, "{}: gnuplot wrote no <svg>", svg.string());
  text = text.substr(start);
  std::string out;
  for (size_t i = 0; i < text.size();) {
    bool replaced = false;
    for (const std::string_view pattern : {"id='", "id=\"", "href='#", "href=\"#"}) {
      if (text.compare(i, pattern.size(), pattern) == 0) {
        out += pattern;
        out += id_prefix;
        i += pattern.size();
        replaced = true;
        break;
      }
    }
    if (!replaced) out += text[i++];
  }
  return out;
}

constexpr const char* kStyle =
    R"(body{font-family:system-ui,sans-serif;margin:2em auto;max-width:70em;color:#222;padding:0 1em}
h1{font-size:1.6em}h2{font-size:1.25em;margin-top:2em}table{border-collapse:collapse;font-size:.9em}
th,td{padding:.3em .7em;border-bottom:1px solid #ddd;text-align:right}th:first-child,td:first-child{text-align:left}
tr.teacher td{color:#666}pre.legend{background:#f6f6f6;padding:.8em;font-size:.85em;white-space:pre-wrap}
figure{margin:1.5em 0}figure svg{max-width:100%;height:auto}figcaption{font-size:.9em;color:#444;max-width:50em}
.meta{color:#555;font-size:.9em}.note{color:#a40}
)";

}  // namespace

std::vector<size_t> ParetoFront(const std::vector<std::pair<double, double>>& points) {
  std::vector<size_t> order(points.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return points[a].first != points[b].first ? points[a].first < points[b].first
                                              : points[a].second < points[b].second;
  });
  std::vector<size_t> front;
  for (const size_t i : order) {
    if (front.empty() || points[i].second < points[front.back()].second) {
      if (!front.empty() && points[front.back()].first == points[i].first) continue;
      front.push_back(i);
    }
  }
  return front;
}

ReportStudy ReadReportStudy(const fs::path& results_file) {
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(ReadFileToString(results_file));
  } catch (const nlohmann::json::exception& e) {
    Fail(kComponent, "{}: not valid JSON: {}", results_file.string(), e.what());
  }
  std::string command = "compare";
  if (j.contains("command")) {
    command = j.at("command").is_string() ? j.at("command").get<std::string>() : "?";
    if (command != "compare" && command != "demo" && command != "kv-curve") {
      Fail(kComponent,
           "{}: results of `proctor {}`; the report reads those of `proctor compare`, `demo` "
           "and `kv-curve`",
           results_file.string(), command);
    }
  }
  const nlohmann::ordered_json& results = j.contains("results") ? j.at("results") : j;
  if (command == "kv-curve") {
    if (!results.contains("rows") || !results.at("rows").is_array()) {
      Fail(kComponent, "{}: kv-curve results without \"rows\"", results_file.string());
    }
    ReportStudy study;
    study.source = results_file;
    study.kv_curve = results;
    if (j.contains("settings")) study.result.teacher = j["settings"].value("model", "");
    return study;
  }
  ReportStudy study{.source = results_file,
                    .study_dir = {},
                    .result = CompareResultFromJson(results, results_file.string())};
  // The study directory as recorded (relative to where compare ran), else the results file's
  // own folder (compare.json lives in it).
  const fs::path recorded = study.result.out_dir;
  study.study_dir = !recorded.empty() && fs::exists(recorded / "positions")
                        ? recorded
                        : results_file.parent_path();
  return study;
}

ReportFiles WriteReport(const std::vector<ReportStudy>& studies, const fs::path& html) {
  if (studies.empty()) Fail(kComponent, "no results to report");
  ReportFiles files{.html = html, .plots = {}, .notes = {}};
  const fs::path plot_dir = (html.has_parent_path() ? html.parent_path() : fs::path(".")) /
                            (html.stem().string() + "_plots");
  fs::create_directories(plot_dir);
  std::string body;
  for (size_t s = 0; s < studies.size(); ++s) {
    const ReportStudy& study = studies[s];
    const CompareResult& r = study.result;
    const std::string prefix = studies.size() > 1 ? fmt::format("study{}-", s + 1) : "";
    std::vector<Plot> plots;
    if (study.kv_curve) {
      const nlohmann::ordered_json& kv = *study.kv_curve;
      plots = DrawKvCurve(kv, plot_dir, prefix);
      body += fmt::format(
          "<h1>KV cache schemes: {}</h1>\n<p class=\"meta\">{} sequences of {} tokens; "
          "results: {}</p>\n<h2>Schemes</h2>\n{}",
          HtmlEscape(r.teacher), kv.value("sequences", int64_t{0}), kv.value("ctx_len", int64_t{0}),
          HtmlEscape(study.source.string()), KvCurveHtml(kv));
    } else {
      plots = DrawStudy(study, plot_dir, prefix, &files.notes);
      if (!r.kv_curve.is_null()) {
        for (Plot& plot : DrawKvCurve(r.kv_curve, plot_dir, prefix)) plots.push_back(plot);
      }
    }
    if (!study.kv_curve) {
      body += fmt::format(
          "<h1>{}</h1>\n<p class=\"meta\">{}<br>corpus: {} ({} sequences × {} "
          "tokens, sha256 {}…)<br>teacher's top-{} logits; compute {}, KV cache "
          "{}, {} threads{}</p>\n",
          HtmlEscape(r.teacher), HtmlEscape(r.teacher_summary), HtmlEscape(r.corpus_description),
          r.n_seqs, r.ctx_len, r.corpus_sha256.substr(0, 12), r.top_k, HtmlEscape(r.compute),
          HtmlEscape(r.kv), r.threads,
          study.source.empty() ? "" : "<br>results: " + HtmlEscape(study.source.string()));
      body += "<h2>Candidates</h2>\n" + FormatCompareHtml(r) + "<pre class=\"legend\">" +
              HtmlEscape(CompareLegend(r)) + "</pre>\n";
      if (!r.kv_curve.is_null()) {
        body += "<h2>The teacher's KV cache schemes</h2>\n" + KvCurveHtml(r.kv_curve);
      }
    }
    for (size_t p = 0; p < plots.size(); ++p) {
      const Plot& plot = plots[p];
      const fs::path svg = plot_dir / (plot.name + ".svg");
      body += fmt::format(
          "<h2>{}</h2>\n<figure id=\"{}\">\n{}\n<figcaption>{} Files: {}.svg, {}.png.</figcaption>"
          "\n</figure>\n",
          HtmlEscape(plot.title), plot.name, InlineSvg(svg, fmt::format("s{}p{}-", s, p)),
          HtmlEscape(plot.caption), HtmlEscape((plot_dir.filename() / plot.name).string()),
          HtmlEscape((plot_dir.filename() / plot.name).string()));
      files.plots.push_back(svg);
      files.plots.push_back(plot_dir / (plot.name + ".png"));
    }
  }
  for (const std::string& note : files.notes) {
    body += "<p class=\"note\">" + HtmlEscape(note) + "</p>\n";
  }
  const std::string page = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>proctor "
      "report: {}</title>\n<style>\n{}</style>\n</head>\n<body>\n{}<p class=\"meta\">Written by "
      "proctor report at {}; the plots by gnuplot.</p>\n</body>\n</html>\n",
      HtmlEscape(studies.front().result.teacher), kStyle, body, UtcNow());
  WriteFileAtomic(html, page);
  return files;
}

}  // namespace proctor
