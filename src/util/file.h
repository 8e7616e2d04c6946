// Files: read-only memory maps, positioned reads, and atomic writers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

namespace proctor {

// A read-only private mapping of a whole file (RAII). An empty file maps to an empty span.
class MappedFile {
 public:
  MappedFile() = default;
  explicit MappedFile(const std::filesystem::path& path);  // throws Error("[io] ...")
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// A file opened for positioned reads (pread). Every read is one call; a short read is an Error
// naming the file, the offset and the byte counts.
class ReadOnlyFile {
 public:
  ReadOnlyFile() = default;
  explicit ReadOnlyFile(const std::filesystem::path& path);
  ~ReadOnlyFile();
  ReadOnlyFile(ReadOnlyFile&& other) noexcept;
  ReadOnlyFile& operator=(ReadOnlyFile&& other) noexcept;
  ReadOnlyFile(const ReadOnlyFile&) = delete;
  ReadOnlyFile& operator=(const ReadOnlyFile&) = delete;

  uint64_t size() const { return size_; }
  const std::filesystem::path& path() const { return path_; }
  void ReadAt(uint64_t offset, std::span<uint8_t> out) const;

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// Reads a whole (small) file into a string; Error names the file when it cannot be read.
std::string ReadFileToString(const std::filesystem::path& path);

// Writes a file atomically: the bytes go to "<path>.tmp.<pid>" which is fsync'ed and renamed
// over path. A reader never sees a half-written file.
void WriteFileAtomic(const std::filesystem::path& path, std::string_view contents);

// A streaming writer with the same guarantee: Commit() renames the temporary file into place;
// destroying an uncommitted writer removes the temporary file. A killed writer cannot: the first
// writer into a directory in a process removes the "*.tmp.<pid>" files of processes that are gone.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::filesystem::path path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void Write(std::span<const uint8_t> bytes);
  void Write(std::string_view text) {
    Write(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  }
  uint64_t bytes_written() const { return written_; }
  void Commit();
  const std::filesystem::path& temp_path() const { return temp_path_; }

 private:
  std::filesystem::path path_;
  std::filesystem::path temp_path_;
  int fd_ = -1;
  uint64_t written_ = 0;
  bool committed_ = false;
};

}  // namespace proctor
