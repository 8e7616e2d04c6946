// Helpers shared by tests: fixture paths, temporary folders, running a command.
#pragma once

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <random>
#include <string>

#include "util/error.h"

namespace proctor::testing {

// The message of the proctor::Error f() throws, or "(no error)".
inline std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

inline std::filesystem::path FixturesDir() {
  const char* env = std::getenv("PROCTOR_FIXTURES");
  return env != nullptr && *env != '\0' ? std::filesystem::path(env)
                                        : std::filesystem::path(PROCTOR_FIXTURES_DEFAULT);
}

struct CommandOutput {
  int status = -1;     // the exit status; -1 when the command did not run or did not exit
  std::string output;  // stdout and stderr, merged
};

// Runs `command` through the shell, stderr merged into the output.
inline CommandOutput RunCommand(const std::string& command) {
  CommandOutput r;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return r;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) r.output.append(buffer, n);
  const int status = ::pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// A fresh directory under the system temp dir, removed when the object dies.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("proctor-model-test-" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace proctor::testing

// Expects `statement` to throw proctor::Error whose message contains every listed substring.
#define EXPECT_ERROR_CONTAINS(statement, ...)                          \
  do {                                                                 \
    try {                                                              \
      statement;                                                       \
      ADD_FAILURE() << "expected an Error from " #statement;           \
    } catch (const ::proctor::Error& e) {                              \
      for (const char* part : {__VA_ARGS__}) {                         \
        EXPECT_NE(std::string(e.what()).find(part), std::string::npos) \
            << "message: " << e.what() << "\nmissing: " << part;       \
      }                                                                \
    }                                                                  \
  } while (0)
