// FindProgram: $PATH's folders in order (the first executable wins; a file that is not
// executable is passed over), an empty entry as the current folder, and nothing found.
#include "util/find_program.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "util/testing_files.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;

// Sets $PATH for the scope of one test and puts it back.
class ScopedPath {
 public:
  explicit ScopedPath(const std::string& value) {
    const char* old = std::getenv("PATH");
    had_ = old != nullptr;
    if (had_) old_ = old;
    ::setenv("PATH", value.c_str(), 1);
  }
  ~ScopedPath() {
    if (had_) {
      ::setenv("PATH", old_.c_str(), 1);
    } else {
      ::unsetenv("PATH");
    }
  }
  ScopedPath(const ScopedPath&) = delete;
  ScopedPath& operator=(const ScopedPath&) = delete;

 private:
  bool had_ = false;
  std::string old_;
};

void MakeFile(const fs::path& path, fs::perms perms) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << "#!/bin/sh\n";
  fs::permissions(path, perms);
}

TEST(FindProgram, TheFirstExecutableOnPathWins) {
  const testing::TempDir temp;
  const fs::path a = temp.path() / "a", b = temp.path() / "b", c = temp.path() / "c";
  MakeFile(a / "tool", fs::perms::owner_read | fs::perms::owner_write);  // not executable
  MakeFile(b / "tool", fs::perms::owner_all);
  MakeFile(c / "tool", fs::perms::owner_all);
  const ScopedPath path(a.string() + ":" + b.string() + ":" + c.string());
  EXPECT_EQ(FindProgram("tool"), b / "tool");
  EXPECT_TRUE(FindProgram("no-such-tool-here").empty());
}

TEST(FindProgram, AnEmptyEntryIsTheCurrentFolder) {
  const testing::TempDir temp;
  MakeFile(temp.path() / "here", fs::perms::owner_all);
  const fs::path before = fs::current_path();
  fs::current_path(temp.path());
  {
    const ScopedPath path("/nonexistent-folder:");
    EXPECT_EQ(FindProgram("here"), fs::path(".") / "here");
  }
  fs::current_path(before);
}

}  // namespace
}  // namespace proctor
