// What machine a run ran on, for result records: the CPU's model name and the vector extensions
// proctor's kernels care about (from /proc/cpuinfo), and the hardware thread count.
#pragma once

#include <string>
#include <vector>

namespace proctor {

struct MachineFacts {
  std::string cpu;                // "Intel(R) Xeon(R) Processor"; "unknown CPU" when unread
  std::vector<std::string> simd;  // of avx2, avx512f, avx512bw, avx512_vnni, avx512_bf16, amx
  int hardware_threads = 0;
};

MachineFacts ReadMachineFacts();

// "Intel(R) Xeon(R) Processor (avx2 avx512f avx512bw avx512_vnni avx512_bf16 amx), 2 hardware
// threads".
std::string DescribeMachine(const MachineFacts& facts);

}  // namespace proctor
