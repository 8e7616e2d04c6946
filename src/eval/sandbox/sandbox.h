// Running model-written Python inside a real sandbox (bubblewrap, Debian's `bwrap`): no network,
// a private tmpfs as the only writable place, the system read-only and nothing else of the file
// system visible (no home, no project, no fixtures), no new privileges, a process count, memory,
// CPU-time and wall-time limit, and every process killed at the end. Run as root, the sandbox
// drops to the `nobody` user first (root ignores the process-count limit).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace proctor {

struct SandboxLimits {
  double wall_seconds = 10;
  int64_t memory_bytes = int64_t{512} << 20;  // address space per process
  int64_t tmpfs_bytes = int64_t{64} << 20;
  int processes = 64;  // beyond the user's processes outside the sandbox
  // Read-only binds besides the system (/usr): paths visible inside at the same place (an
  // oracle's Python environment). Empty for model code.
  std::vector<std::string> extra_read_only{};
  // Stay the calling user even as root (an oracle whose environment only root can read; the
  // process-count limit does not hold then). Never for model code.
  bool keep_user = false;
};

struct SandboxResult {
  int exit_code = -1;      // the program's status; -1 when it was killed
  bool timed_out = false;  // killed at wall_seconds
  std::string output;      // stdout and stderr, merged, cut at 64 KiB
};

// "" when the sandbox works on this machine; else why not (bwrap missing, no user namespaces).
std::string SandboxProblem();

// Runs `python3 -I -` with `program` on its stdin inside the sandbox.
SandboxResult RunPythonInSandbox(const std::string& program, const SandboxLimits& limits = {});

// The same without any sandbox (for --unsafe-exec only): a plain child process with the time
// limit.
SandboxResult RunPythonUnsandboxed(const std::string& program, const SandboxLimits& limits = {});

}  // namespace proctor
