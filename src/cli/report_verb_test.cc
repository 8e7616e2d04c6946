// `proctor report` and `compare --report` end to end: a study of stories260K with two GGUF
// candidates, its page checked as a file (self-contained: no script, no external resource; the
// table's rows; one point mark per model in the KL-against-size plot, one curve per model in the
// distribution plot; the SVG and PNG files) and in a real browser: Debian's chromium, headless,
// loads it without console errors, and its screenshot shows the plots (tools/png_ink.py: the
// share of coloured pixels). A kv-curve run gets its own section. Bad input: results of another
// verb, a non-HTML --out.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <regex>

#include "cli_test_support.h"  // same folder: cli_test has no src/ include path

namespace proctor::cli_test {
namespace {

namespace fs = std::filesystem;

std::string ReadText(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

size_t Count(const std::string& text, const std::string& pattern) {
  size_t n = 0;
  for (size_t at = text.find(pattern); at != std::string::npos; at = text.find(pattern, at + 1)) {
    ++n;
  }
  return n;
}

// The inline <svg> of the figure with this id.
std::string Figure(const std::string& html, const std::string& id) {
  const size_t start = html.find("<figure id=\"" + id + "\">");
  if (start == std::string::npos) return "";
  return html.substr(start, html.find("</figure>", start) - start);
}

class ReportVerb : public ::testing::Test {
 protected:
  void SetUp() override {
    const fs::path stories = Fixtures() / "stories260K" / "stories260K.gguf";
    const fs::path text = Fixtures() / "tinystories" / "tinystories_sample.txt";
    if (!fs::exists(stories) || !fs::exists(text)) GTEST_SKIP() << "fixtures absent";
    study_ = dir_.path() / "study";
    const Result r = Proctor(fmt::format(
        "compare --teacher {} --data {} --quantize q4_0,q8_0 --kv-curve bf16,f16 --kv-decode-steps "
        "8 "
        "--ctx-len 64 --n-seqs 4 --top-k 32 --out {} --report {}",
        stories.string(), text.string(), study_.string(), (dir_.path() / "c.html").string()));
    ASSERT_EQ(r.status, 0) << r.out;
  }
  TempDir dir_;
  fs::path study_;
};

TEST_F(ReportVerb, ThePageIsSelfContainedAndDrawsEveryModel) {
  const fs::path html = dir_.path() / "r.html";
  const Result r =
      Proctor(fmt::format("report {} --out {}", (study_ / "compare.json").string(), html.string()));
  ASSERT_EQ(r.status, 0) << r.out;
  const std::string page = ReadText(html);
  EXPECT_EQ(Count(page, "<script"), 0u);
  EXPECT_EQ(Count(page, "<link"), 0u);
  EXPECT_EQ(Count(page, " src="), 0u);
  EXPECT_EQ(Count(page, "url("), 0u);
  // Every http text is an SVG's XML namespace, never something to fetch.
  EXPECT_EQ(Count(page, "http"), Count(page, "xmlns=\"http") + Count(page, "xmlns:xlink=\"http"));
  const nlohmann::json results = nlohmann::json::parse(ReadText(study_ / "compare.json"));
  const size_t models = results["results"]["candidates"].size();
  ASSERT_EQ(models, 3u);
  for (const auto& row : results["results"]["candidates"]) {
    EXPECT_NE(page.find("<td>" + row["candidate"].get<std::string>() + "</td>"), std::string::npos);
  }
  EXPECT_EQ(Count(page, "<svg"), 5u);  // four plots of the candidates, the teacher's KV curve
  // One filled point per model in the KL plot (gnuplot draws each point twice: a white disc,
  // then the coloured one).
  const std::string kl = Figure(page, "kl-vs-bits");
  const std::regex coloured_point("gpPt6' transform='[^']*' color='rgb");
  EXPECT_EQ(
      static_cast<size_t>(std::distance(std::sregex_iterator(kl.begin(), kl.end(), coloured_point),
                                        std::sregex_iterator())),
      models);
  // One curve per model in the distribution plot, one line per model along the context.
  EXPECT_EQ(Count(Figure(page, "kl-cdf"), "gnuplot_plot_"), models);
  EXPECT_EQ(Count(Figure(page, "kl-by-position"), "gnuplot_plot_"), models);
  const std::string kv = Figure(page, "kv-curve");
  EXPECT_EQ(std::distance(std::sregex_iterator(kv.begin(), kv.end(), coloured_point),
                          std::sregex_iterator()),
            2);  // bf16, f16
  EXPECT_NE(page.find("<h2>The teacher's KV cache schemes</h2>"), std::string::npos);
  for (const char* plot : {"kl-vs-bits", "dppl-vs-bits", "kl-cdf", "kl-by-position", "kv-curve"}) {
    const fs::path svg = dir_.path() / "r_plots" / (std::string(plot) + ".svg");
    const fs::path png = dir_.path() / "r_plots" / (std::string(plot) + ".png");
    EXPECT_TRUE(fs::exists(svg)) << svg;
    EXPECT_EQ(ReadText(png).substr(0, 8), "\x89PNG\r\n\x1a\n") << png;
  }
  // compare --report wrote the same page, but for its plot folder's name and its date line.
  std::string from_compare = ReadText(dir_.path() / "c.html");
  from_compare = std::regex_replace(from_compare, std::regex("c_plots/"), "r_plots/");
  EXPECT_EQ(from_compare.substr(0, from_compare.find("Written by")),
            page.substr(0, page.find("Written by")));
}

TEST_F(ReportVerb, ChromiumLoadsItWithoutErrorsAndShowsThePlots) {
  if (RunShell("command -v chromium").status != 0) {
    GTEST_SKIP() << "chromium absent (scripts/install-deps.sh installs it)";
  }
  const fs::path html = dir_.path() / "c.html", shot = dir_.path() / "shot.png";
  const std::string flags =
      "--headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1200,3200 "
      "--enable-logging=stderr --v=0";
  Result r =
      RunShell(fmt::format("timeout 120 chromium {} --dump-dom file://{} 2>{}", flags,
                           fs::absolute(html).string(), (dir_.path() / "chromium.log").string()));
  ASSERT_EQ(r.status, 0) << r.out << ReadText(dir_.path() / "chromium.log");
  EXPECT_EQ(Count(r.out, "<svg"), 5u);
  const std::string log = ReadText(dir_.path() / "chromium.log");
  EXPECT_EQ(Count(log, ":CONSOLE"), 0u) << log;
  EXPECT_EQ(Count(log, "Uncaught"), 0u) << log;
  r = RunShell(fmt::format("timeout 120 chromium {} --screenshot={} file://{} 2>/dev/null", flags,
                           shot.string(), fs::absolute(html).string()));
  ASSERT_EQ(r.status, 0) << r.out;
  r = RunShell(
      fmt::format("/usr/bin/python3 {}/tools/png_ink.py {}", PROCTOR_SOURCE_DIR, shot.string()));
  ASSERT_EQ(r.status, 0) << r.out;
  const nlohmann::json ink = nlohmann::json::parse(r.out);
  std::printf("[ screenshot ] %s\n", r.out.c_str());
  EXPECT_EQ(ink["width"], 1200);
  EXPECT_GT(ink["coloured_fraction"].get<double>(), 0.004);
}

// A kv-curve run is a section of its own: the schemes' table and the KV curve, one point per
// scheme, before the compare study's section.
TEST_F(ReportVerb, AKvCurveRunGetsItsTableAndCurve) {
  const fs::path kv = dir_.path() / "kv.json", html = dir_.path() / "kv.html";
  Result r = Proctor(fmt::format(
      "kv-curve {} --corpus {} --n-seqs 2 --decode-steps 8 --schemes f32,bf16,f16 --json {}",
      (Fixtures() / "stories260K" / "stories260K.gguf").string(), (study_ / "corpus").string(),
      kv.string()));
  ASSERT_EQ(r.status, 0) << r.out;
  r = Proctor(fmt::format("report {} {} --out {}", kv.string(), (study_ / "compare.json").string(),
                          html.string()));
  ASSERT_EQ(r.status, 0) << r.out;
  const std::string page = ReadText(html);
  EXPECT_EQ(Count(page, "<svg"), 6u);  // the kv-curve run's, then the study's five
  for (const char* scheme : {"f32", "bf16", "f16"}) {
    EXPECT_NE(page.find(fmt::format("<tr><td>{}</td>", scheme)), std::string::npos) << scheme;
  }
  const std::string curve = Figure(page, "study1-kv-curve");
  const std::regex coloured_point("gpPt6' transform='[^']*' color='rgb");
  EXPECT_EQ(std::distance(std::sregex_iterator(curve.begin(), curve.end(), coloured_point),
                          std::sregex_iterator()),
            3);
  EXPECT_LT(page.find("KV cache schemes"), page.find("<h2>Candidates</h2>"));
  EXPECT_TRUE(fs::exists(dir_.path() / "kv_plots" / "study1-kv-curve.png"));
  EXPECT_TRUE(fs::exists(dir_.path() / "kv_plots" / "study2-kl-cdf.svg"));
}

TEST_F(ReportVerb, BadInputIsAClearError) {
  const fs::path kl = dir_.path() / "kl.json";
  ASSERT_EQ(Proctor(fmt::format(
                        "kl --reference-logits {} --model {} --json {}", (study_ / "dump").string(),
                        (Fixtures() / "stories260K" / "stories260K.gguf").string(), kl.string()))
                .status,
            0);
  Result r =
      Proctor(fmt::format("report {} --out {}", kl.string(), (dir_.path() / "x.html").string()));
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(Contains(r.out, "results of `proctor kl`; the report reads those of")) << r.out;
  r = Proctor(fmt::format("report {} --out {}", (study_ / "compare.json").string(),
                          (dir_.path() / "x.pdf").string()));
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(Contains(r.out, "name it .html")) << r.out;
  r = Proctor(fmt::format("report {} --out {}", (dir_.path() / "missing.json").string(),
                          (dir_.path() / "x.html").string()));
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(Contains(r.out, "missing.json")) << r.out;
  EXPECT_FALSE(fs::exists(dir_.path() / "x.html"));
}

}  // namespace
}  // namespace proctor::cli_test
