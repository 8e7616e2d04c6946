// Progress on stderr for long jobs (dumps, scoring runs).
//
// On a terminal: one live line redrawn at most every 100 ms with a bar, the count, the rate and
// the ETA. Not on a terminal (logs, CI): a plain line every `line_interval_seconds` (default 10)
// and one at the end. Quiet: nothing at all. Thread-safe: Advance() may be called from workers.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

namespace proctor {

class Progress {
 public:
  enum class Mode { kAuto, kQuiet, kBar, kLines };
  struct Options {
    std::string label;           // e.g. "scoring"
    std::string unit = "items";  // e.g. "positions"
    uint64_t total = 0;          // 0: unknown (no bar, no ETA)
    Mode mode = Mode::kAuto;     // kAuto: kBar on a TTY, kLines otherwise
    double line_interval_seconds = 10.0;
    FILE* out = stderr;
  };

  explicit Progress(Options options);
  ~Progress();  // calls Finish() if not yet finished
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void Advance(uint64_t n = 1);
  // Prints the final line (count, elapsed, rate) unless quiet. Idempotent.
  void Finish();
  uint64_t done() const { return done_; }

  // "1.2 s", "3 min 04 s", "2 h 05 min".
  static std::string FormatDuration(double seconds);

 private:
  void Print(bool final_line);

  Options options_;
  Mode mode_;
  uint64_t done_ = 0;
  bool finished_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_print_;
  std::mutex mutex_;
};

}  // namespace proctor
