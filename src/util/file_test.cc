#include "util/file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "util/error.h"

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
