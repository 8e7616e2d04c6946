// Clocks for the timing split of a run and for the "created" stamps of files.
#pragma once

#include <cstdint>
#include <string>

namespace proctor {

// Accumulates elapsed seconds into *sink while alive (for the timing split).
class ScopedSeconds {
 public:
  explicit ScopedSeconds(double* sink);
  ~ScopedSeconds();
  ScopedSeconds(const ScopedSeconds&) = delete;
  ScopedSeconds& operator=(const ScopedSeconds&) = delete;

 private:
  double* sink_;
  int64_t start_ns_;
};

// Seconds on a monotonic clock (for hand-rolled splits).
double MonotonicSeconds();
// MonotonicSeconds() - start.
double SecondsSince(double start);

// The current UTC time as "YYYY-MM-DDTHH:MM:SSZ" (the "created" field of manifests and results).
std::string UtcNow();

}  // namespace proctor
