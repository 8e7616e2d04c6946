#include "util/file.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "util/error.h"
#include "util/testing_files.h"

namespace proctor {
namespace {

std::filesystem::path TempDir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("proctor_file_test_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(FileTest, AtomicWriteThenMapAndRead) {
  const auto dir = TempDir("atomic");
  const auto path = dir / "a.bin";
  WriteFileAtomic(path, "hello world");
  MappedFile map(path);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(map.data()), map.size()), "hello world");
  ReadOnlyFile file(path);
  std::vector<uint8_t> buf(5);
  file.ReadAt(6, buf);
  EXPECT_EQ(std::string(buf.begin(), buf.end()), "world");
  EXPECT_EQ(ReadFileToString(path), "hello world");
}

TEST(FileTest, ShortReadNamesTheFile) {
  const auto dir = TempDir("short");
  const auto path = dir / "short.bin";
  WriteFileAtomic(path, "abc");
  ReadOnlyFile file(path);
  std::vector<uint8_t> buf(10);
  try {
    file.ReadAt(0, buf);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("short.bin"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("short read"), std::string::npos) << e.what();
  }
}

TEST(FileTest, UncommittedWriterLeavesNoFile) {
  const auto dir = TempDir("uncommitted");
  const auto path = dir / "b.bin";
  {
    AtomicFileWriter writer(path);
    writer.Write(std::string_view("partial"));
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_TRUE(std::filesystem::is_empty(dir));
}

TEST(FileTest, MissingFileIsAnErrorNamingIt) {
  try {
    MappedFile map("/nonexistent/proctor/x.bin");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/proctor/x.bin"), std::string::npos);
    EXPECT_EQ(std::string(e.what()).rfind("[io]", 0), 0u);
  }
}

}  // namespace
}  // namespace proctor

namespace proctor {
namespace {

// A writer never replaces what is not a regular file (issue 18, class 10): /dev/null, a FIFO, a
// symbolic link and a directory are refused by name and left as they were.
TEST(FileTest, WritersRefuseSpecialFilesAndLinks) {
  const testing::TempDir tmp;
  const std::filesystem::path fifo = tmp.path() / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::filesystem::path target = tmp.path() / "real.txt";
  std::ofstream(target) << "keep";
  const std::filesystem::path link = tmp.path() / "link.txt";
  std::filesystem::create_symlink(target, link);
  const std::pair<std::filesystem::path, const char*> cases[] = {
      {"/dev/null", "is a character device"},
      {fifo, "is a FIFO"},
      {link, "is a symbolic link"},
      {tmp.path(), "is a directory"}};
  for (const auto& entry : cases) {
    const std::filesystem::path& path = entry.first;
    const std::string error = testing::ErrorOf([&] { WriteFileAtomic(path, "x"); });
    EXPECT_NE(error.find(path.string()), std::string::npos) << error;
    EXPECT_NE(error.find(entry.second), std::string::npos) << error;
  }
  EXPECT_TRUE(std::filesystem::is_character_file("/dev/null"));
  EXPECT_TRUE(std::filesystem::is_fifo(fifo));
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  EXPECT_EQ(ReadFileToString(target), "keep");
  WriteFileAtomic(target, "new");  // a regular file is replaced as before
  EXPECT_EQ(ReadFileToString(target), "new");
}

}  // namespace
}  // namespace proctor

namespace proctor {
namespace {

// #18 class 12: a writer killed before it committed left "<name>.tmp.<pid>" behind forever.
// Writing <name> again removes the temporaries of processes that are gone, and only those.
TEST(FileTest, WritingAFileAgainRemovesTheTemporariesOfDeadWriters) {
  const auto dir = TempDir("stale");
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);  // `child` is now a pid with no process
  const auto touch = [&](const std::string& name) {
    std::ofstream(dir / name) << "partial";
    return dir / name;
  };
  const auto dead = touch(fmt::format("out.bin.tmp.{}", child));
  const auto live = touch(fmt::format("out.bin.tmp.{}", ::getppid()));
  const auto other = touch(fmt::format("other.bin.tmp.{}", child));
  const auto user = touch("notes.tmp.txt");
  WriteFileAtomic(dir / "out.bin", "done");
  EXPECT_FALSE(std::filesystem::exists(dead));
  EXPECT_TRUE(std::filesystem::exists(live));
  EXPECT_TRUE(std::filesystem::exists(other));
  EXPECT_TRUE(std::filesystem::exists(user));
  EXPECT_EQ(ReadFileToString(dir / "out.bin"), "done");
  WriteFileAtomic(dir / "other.bin", "done");
  EXPECT_FALSE(std::filesystem::exists(other));
}

}  // namespace
}  // namespace proctor
