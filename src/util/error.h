// User-facing errors and internal invariant checks.
//
// proctor::Error is thrown for problems a user can fix (a bad file, a bad flag); its message
// starts with "[component]" and says what was seen and what was expected. CHECK guards internal
// invariants (always on, also in Release) and aborts with the location.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <string_view>

namespace proctor {

class Error : public std::runtime_error {
 public:
  Error(std::string_view component, std::string_view message)
      : std::runtime_error(fmt::format("[{}] {}", component, message)) {}
};

// Throws Error("[component] <formatted message>").
template <typename... Args>
[[noreturn]] void Fail(std::string_view component, fmt::format_string<Args...> format,
                       Args&&... args) {
  throw Error(component, fmt::format(format, std::forward<Args>(args)...));
}

[[noreturn]] void CheckFailed(const char* file, int line, const char* condition,
                              const std::string& detail);

// A message as it may go to a terminal: control characters other than "\n" and "\t" (an escape
// sequence from a tensor name, a stray "\r") become "\xNN", so a file cannot drive the terminal
// through proctor's errors.
std::string EscapeControlCharacters(std::string_view message);

}  // namespace proctor

#define PROCTOR_CHECK(condition)                                             \
  do {                                                                       \
    if (!(condition)) [[unlikely]]                                           \
      ::proctor::CheckFailed(__FILE__, __LINE__, #condition, std::string()); \
  } while (0)

// CHECK with a formatted detail message: CHECK_MSG(n > 0, "n={}", n).
#define PROCTOR_CHECK_MSG(condition, ...)                                               \
  do {                                                                                  \
    if (!(condition)) [[unlikely]]                                                      \
      ::proctor::CheckFailed(__FILE__, __LINE__, #condition, fmt::format(__VA_ARGS__)); \
  } while (0)

#ifndef CHECK
#define CHECK(condition) PROCTOR_CHECK(condition)
#endif
#ifndef CHECK_MSG
#define CHECK_MSG(condition, ...) PROCTOR_CHECK_MSG(condition, __VA_ARGS__)
#endif
