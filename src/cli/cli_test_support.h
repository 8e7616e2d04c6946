// Helpers shared by the end-to-end tests of the proctor executable (src/cli/*_test.cc): run the
// built binary (PROCTOR_BIN) or a shell command and capture its output, locate the fixtures
// ($PROCTOR_FIXTURES or PROCTOR_FIXTURES_DEFAULT), temporary paths, raw f32 files. Test-only:
// it needs the compile definitions the test binaries get.
#pragma once

#include <fmt/format.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <system_error>
#include <vector>

namespace proctor::cli_test {

namespace fs = std::filesystem;

inline fs::path Fixtures() {
  const char* env = std::getenv("PROCTOR_FIXTURES");
  return env && *env ? fs::path(env) : fs::path(PROCTOR_FIXTURES_DEFAULT);
}

struct Result {
  int status = -1;  // exit status; -1 when the command did not run or did not exit
  std::string out;  // what the command wrote to stdout (plus stderr where the command merges it)
};

// Runs `command` through the shell and captures its stdout.
inline Result RunShell(const std::string& command) {
  Result r;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return r;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) r.out.append(buffer, n);
  const int status = pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// Runs `proctor -q ARGS` with stderr merged into Result::out.
inline Result Proctor(const std::string& args) {
  return RunShell(fmt::format("{} -q {} 2>&1", PROCTOR_BIN, args));
}

// A fresh path in the temporary directory, ending in `name` (nothing is created).
inline fs::path TempPath(const std::string& name) {
  static std::random_device rd;
  return fs::temp_directory_path() / fmt::format("proctor-cli-{}{}-{}", rd(), rd(), name);
}

// A fresh temporary directory, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir() : path_(TempPath("dir")) { fs::create_directories(path_); }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// The whole file as native-endian f32 values.
inline std::vector<float> ReadF32(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<float> out(fs::file_size(path) / sizeof(float));
  in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(out.size() * 4));
  return out;
}

inline bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace proctor::cli_test
