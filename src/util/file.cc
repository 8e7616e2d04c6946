#include "util/file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "util/error.h"

namespace proctor {
namespace {

std::string Errno() { return std::strerror(errno); }

int OpenForRead(const std::filesystem::path& path, uint64_t* size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) Fail("io", "cannot open '{}': {}", path.string(), Errno());
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const std::string why = Errno();
    ::close(fd);
    Fail("io", "cannot stat '{}': {}", path.string(), why);
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    Fail("io", "'{}' is a directory, expected a file", path.string());
  }
  *size = static_cast<uint64_t>(st.st_size);
  return fd;
}

void WriteAll(int fd, const std::filesystem::path& path, const uint8_t* data, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      Fail("io", "cannot write '{}': {}", path.string(), Errno());
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
}

std::filesystem::path TempPathFor(const std::filesystem::path& path) {
  return std::filesystem::path(path.string() + ".tmp." + std::to_string(::getpid()));
}

// A writer killed before it committed (SIGKILL, a crash) leaves "<name>.tmp.<pid>" behind, which
// nothing would ever remove. Writing <name> again removes those whose process is gone
// (kill(pid, 0) says no such process); a live writer's file, and files of other names, are kept.
// Each directory is listed once per process.
void RemoveStaleTemporaries(const std::filesystem::path& target) {
  static std::mutex mutex;
  static std::map<std::string, std::vector<std::filesystem::path>> stale_by_dir;
  std::filesystem::path dir = target.parent_path();
  if (dir.empty()) dir = ".";
  const std::lock_guard<std::mutex> lock(mutex);
  auto [entry, listed_now] = stale_by_dir.try_emplace(dir.string());
  std::vector<std::filesystem::path>& stale = entry->second;
  if (listed_now) {
    std::error_code ec;
    for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      const size_t at = name.rfind(".tmp.");
      if (at == std::string::npos || at + 5 == name.size()) continue;
      const std::string digits = name.substr(at + 5);
      if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) {
        continue;
      }
      const auto pid = static_cast<pid_t>(std::stol(digits));
      if (pid <= 0 || pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
      stale.push_back(it->path());
    }
  }
  const std::string prefix = target.filename().string() + ".tmp.";
  std::erase_if(stale, [&](const std::filesystem::path& path) {
    if (!path.filename().string().starts_with(prefix)) return false;
    std::error_code ec;
    std::filesystem::remove(path, ec);
    return true;
  });
}

}  // namespace

MappedFile::MappedFile(const std::filesystem::path& path) : path_(path) {
  uint64_t size = 0;
  const int fd = OpenForRead(path, &size);
  size_ = static_cast<size_t>(size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const std::string why = Errno();
      ::close(fd);
      Fail("io", "cannot map '{}' ({} bytes): {}", path.string(), size_, why);
    }
    data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
    path_ = std::move(other.path_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

ReadOnlyFile::ReadOnlyFile(const std::filesystem::path& path) : path_(path) {
  fd_ = OpenForRead(path, &size_);
}

ReadOnlyFile::~ReadOnlyFile() {
  if (fd_ >= 0) ::close(fd_);
}

ReadOnlyFile::ReadOnlyFile(ReadOnlyFile&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(std::exchange(other.fd_, -1)),
      size_(std::exchange(other.size_, 0)) {}

ReadOnlyFile& ReadOnlyFile::operator=(ReadOnlyFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void ReadOnlyFile::ReadAt(uint64_t offset, std::span<uint8_t> out) const {
  CHECK(fd_ >= 0);
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t r =
        ::pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      Fail("io", "read of {} bytes at offset {} in '{}' failed: {}", out.size(), offset,
           path_.string(), Errno());
    }
    if (r == 0) {
      Fail("io", "short read in '{}': wanted {} bytes at offset {}, got {} (file is {} bytes)",
           path_.string(), out.size(), offset, done, size_);
    }
    done += static_cast<size_t>(r);
  }
}

std::string ReadFileToString(const std::filesystem::path& path) {
  uint64_t size = 0;
  const int fd = OpenForRead(path, &size);
  std::string out;
  char buffer[65536];
  for (;;) {
    const ssize_t r = ::read(fd, buffer, sizeof(buffer));
    if (r < 0) {
      if (errno == EINTR) continue;
      const std::string why = Errno();
      ::close(fd);
      Fail("io", "cannot read '{}': {}", path.string(), why);
    }
    if (r == 0) break;
    out.append(buffer, static_cast<size_t>(r));
  }
  ::close(fd);
  return out;
}

void WriteFileAtomic(const std::filesystem::path& path, std::string_view contents) {
  AtomicFileWriter writer(path);
  writer.Write(contents);
  writer.Commit();
}

namespace {

// What a path that is not a regular file is, for the refusal.
const char* FileKind(std::filesystem::file_type type) {
  switch (type) {
    case std::filesystem::file_type::directory:
      return "a directory";
    case std::filesystem::file_type::symlink:
      return "a symbolic link";
    case std::filesystem::file_type::block:
      return "a block device";
    case std::filesystem::file_type::character:
      return "a character device";
    case std::filesystem::file_type::fifo:
      return "a FIFO";
    case std::filesystem::file_type::socket:
      return "a socket";
    default:
      return "not a regular file";
  }
}

}  // namespace

AtomicFileWriter::AtomicFileWriter(std::filesystem::path path)
    : path_(std::move(path)), temp_path_(TempPathFor(path_)) {
  RemoveStaleTemporaries(path_);
  // The finished file is renamed over the target: a device, FIFO or link there would be replaced.
  std::error_code ec;
  const std::filesystem::file_status status = std::filesystem::symlink_status(path_, ec);
  if (!ec && std::filesystem::exists(status) &&
      status.type() != std::filesystem::file_type::regular) {
    Fail("io",
         "'{}' is {}: proctor writes a file whole and renames it into place, which would replace "
         "it; give the path of a regular file (or a new one)",
         path_.string(), FileKind(status.type()));
  }
  fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) Fail("io", "cannot create '{}': {}", temp_path_.string(), Errno());
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_path_.c_str());
}

void AtomicFileWriter::Write(std::span<const uint8_t> bytes) {
  CHECK(!committed_);
  WriteAll(fd_, temp_path_, bytes.data(), bytes.size());
  written_ += bytes.size();
}

void AtomicFileWriter::Commit() {
  CHECK(!committed_);
  if (::fsync(fd_) != 0) Fail("io", "cannot sync '{}': {}", temp_path_.string(), Errno());
  ::close(fd_);
  fd_ = -1;
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    Fail("io", "cannot rename '{}' to '{}': {}", temp_path_.string(), path_.string(), Errno());
  }
  committed_ = true;
}

}  // namespace proctor
