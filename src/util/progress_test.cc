// Progress: lines mode prints plain lines with counts, quiet prints nothing, bar mode redraws.
#include "util/progress.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>

namespace proctor {
namespace {

std::string Capture(Progress::Mode mode, double interval, int steps, uint64_t total) {
  FILE* out = std::tmpfile();
  {
    Progress progress({.label = "scoring",
                       .unit = "positions",
                       .total = total,
                       .mode = mode,
                       .line_interval_seconds = interval,
                       .out = out});
    for (int i = 0; i < steps; ++i) progress.Advance(2);
  }
  std::rewind(out);
  std::string text;
  int c;
  while ((c = std::fgetc(out)) != EOF) text.push_back(static_cast<char>(c));
  std::fclose(out);
  return text;
}

TEST(Progress, QuietPrintsNothing) { EXPECT_EQ(Capture(Progress::Mode::kQuiet, 0, 5, 10), ""); }

TEST(Progress, LinesModeWithZeroIntervalPrintsEveryStepAndAFinalLine) {
  const std::string text = Capture(Progress::Mode::kLines, 0, 3, 6);
  EXPECT_NE(text.find("scoring: 2/6 positions"), std::string::npos) << text;
  EXPECT_NE(text.find("scoring: 6/6 positions in "), std::string::npos) << text;
  EXPECT_EQ(text.find('\r'), std::string::npos) << "plain lines, no carriage returns";
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 4) << text;
}

TEST(Progress, LinesModeWithLongIntervalPrintsOnlyTheFinalLine) {
  const std::string text = Capture(Progress::Mode::kLines, 1e9, 50, 100);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
  EXPECT_NE(text.find("100/100 positions in"), std::string::npos) << text;
}

TEST(Progress, BarModeRedrawsOneLine) {
  const std::string text = Capture(Progress::Mode::kBar, 0, 1, 4);
  EXPECT_NE(text.find("\r\033[K"), std::string::npos);
  EXPECT_NE(text.find("2/4 positions in"), std::string::npos) << text;
}

TEST(Progress, FormatDuration) {
  EXPECT_EQ(Progress::FormatDuration(1.25), "1.2 s");
  EXPECT_EQ(Progress::FormatDuration(184), "3 min 04 s");
  EXPECT_EQ(Progress::FormatDuration(7500), "2 h 05 min");
}

}  // namespace
}  // namespace proctor
