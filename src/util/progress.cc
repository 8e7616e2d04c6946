#include "util/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

namespace proctor {

Progress::Progress(Options options) : options_(std::move(options)), mode_(options_.mode) {
  if (mode_ == Mode::kAuto) {
    mode_ = (options_.out != nullptr && ::isatty(::fileno(options_.out)) == 1) ? Mode::kBar
                                                                               : Mode::kLines;
  }
  if (options_.out == nullptr) mode_ = Mode::kQuiet;
  start_ = last_print_ = std::chrono::steady_clock::now();
}

Progress::~Progress() { Finish(); }

std::string Progress::FormatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  if (seconds < 60) return fmt::format("{:.1f} s", seconds);
  const auto whole = static_cast<int64_t>(seconds);
  if (whole < 3600) return fmt::format("{} min {:02} s", whole / 60, whole % 60);
  return fmt::format("{} h {:02} min", whole / 3600, (whole % 3600) / 60);
}

void Progress::Advance(uint64_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  done_ += n;
  if (mode_ == Mode::kQuiet || finished_) return;
  const auto now = std::chrono::steady_clock::now();
  const double since = std::chrono::duration<double>(now - last_print_).count();
  const double interval = mode_ == Mode::kBar ? 0.1 : options_.line_interval_seconds;
  if (since >= interval) {
    last_print_ = now;
    Print(false);
  }
}

void Progress::Finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (finished_) return;
  finished_ = true;
  if (mode_ != Mode::kQuiet) Print(true);
}

void Progress::Print(bool final_line) {
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double rate = elapsed > 0 ? static_cast<double>(done_) / elapsed : 0.0;
  std::string counts =
      options_.total > 0 ? fmt::format("{}/{}", done_, options_.total) : fmt::format("{}", done_);
  std::string text;
  if (final_line) {
    text = fmt::format("{}: {} {} in {} ({:.1f} {}/s)", options_.label, counts, options_.unit,
                       FormatDuration(elapsed), rate, options_.unit);
  } else {
    std::string eta;
    if (options_.total > 0 && rate > 0 && done_ <= options_.total) {
      eta = fmt::format(", ETA {}", FormatDuration((options_.total - done_) / rate));
    }
    std::string bar;
    if (mode_ == Mode::kBar && options_.total > 0) {
      constexpr int kWidth = 24;
      const double fraction = std::min(1.0, static_cast<double>(done_) / options_.total);
      const int filled = static_cast<int>(fraction * kWidth);
      bar = fmt::format("[{}{}] {:3.0f}% ", std::string(filled, '#'),
                        std::string(kWidth - filled, '.'), 100 * fraction);
    }
    text = fmt::format("{}: {}{} {} ({:.1f} {}/s{})", options_.label, bar, counts, options_.unit,
                       rate, options_.unit, eta);
  }
  if (mode_ == Mode::kBar) {
    fmt::print(options_.out, "\r\033[K{}{}", text, final_line ? "\n" : "");
  } else {
    fmt::print(options_.out, "{}\n", text);
  }
  std::fflush(options_.out);
}

}  // namespace proctor
