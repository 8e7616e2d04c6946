// Helpers of the libFuzzer targets that read files (the readers take paths, not bytes): a scratch
// path per process in /dev/shm (or the temp directory), writing bytes to it, and one input split
// into several files at "@@@@" (a dump's manifest, tokens and sequence files; a corpus).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace proctor::fuzzing {

// /dev/shm/proctor_fuzz_<name>_<pid> (the temp directory without /dev/shm); nothing is created.
inline std::filesystem::path ScratchPath(std::string_view name) {
  const std::filesystem::path base =
      std::filesystem::exists("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path();
  return base / ("proctor_fuzz_" + std::string(name) + "_" + std::to_string(::getpid()));
}

inline void WriteBytes(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// `input` cut at every "@@@@" into at most `max_parts` parts (the last keeps the rest).
inline std::vector<std::string_view> SplitInput(std::string_view input, size_t max_parts) {
  std::vector<std::string_view> parts;
  for (size_t start = 0;;) {
    const size_t at = input.find("@@@@", start);
    if (at == std::string_view::npos || parts.size() + 1 == max_parts) {
      parts.push_back(input.substr(start));
      return parts;
    }
    parts.push_back(input.substr(start, at - start));
    start = at + 4;
  }
}

// A fresh empty directory at ScratchPath(name).
inline std::filesystem::path FreshScratchDir(std::string_view name) {
  const std::filesystem::path dir = ScratchPath(name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace proctor::fuzzing
