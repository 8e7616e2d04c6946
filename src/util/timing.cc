#include "util/timing.h"

#include <chrono>
#include <ctime>

namespace proctor {
namespace {

int64_t NowNanoseconds() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

ScopedSeconds::ScopedSeconds(double* sink) : sink_(sink), start_ns_(NowNanoseconds()) {}

ScopedSeconds::~ScopedSeconds() {
  *sink_ += static_cast<double>(NowNanoseconds() - start_ns_) * 1e-9;
}

double MonotonicSeconds() { return static_cast<double>(NowNanoseconds()) * 1e-9; }

double SecondsSince(double start) { return MonotonicSeconds() - start; }

std::string UtcNow() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

}  // namespace proctor
