#include "util/machine.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

namespace proctor {

MachineFacts ReadMachineFacts() {
  MachineFacts facts;
  facts.hardware_threads = static_cast<int>(std::thread::hardware_concurrency());
  std::ifstream in("/proc/cpuinfo");
  std::set<std::string> flags;
  for (std::string line; std::getline(in, line);) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    key.erase(key.find_last_not_of(" \t") + 1);
    const std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (key == "model name" && facts.cpu.empty()) facts.cpu = value;
    if (key == "flags" && flags.empty()) {
      std::istringstream words(value);
      for (std::string word; words >> word;) flags.insert(word);
    }
  }
  if (facts.cpu.empty()) facts.cpu = "unknown CPU";
  for (const char* flag : {"avx2", "avx512f", "avx512bw", "avx512_vnni", "avx512_bf16"}) {
    if (flags.count(flag) != 0) facts.simd.emplace_back(flag);
  }
  if (flags.count("amx_tile") != 0) facts.simd.emplace_back("amx");
  return facts;
}

std::string DescribeMachine(const MachineFacts& facts) {
  std::string out = facts.cpu;
  if (!facts.simd.empty()) out += fmt::format(" ({})", fmt::join(facts.simd, " "));
  return out + fmt::format(", {} hardware threads", facts.hardware_threads);
}

}  // namespace proctor
