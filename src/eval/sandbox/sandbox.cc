#include "eval/sandbox/sandbox.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dirent.h>
#include <fmt/format.h>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "util/error.h"

namespace proctor {
namespace {

constexpr size_t kMaxOutput = 64 * 1024;
constexpr const char* kBwrap = "/usr/bin/bwrap";
constexpr uid_t kNobody = 65534;

// Processes of `uid` now (a process-count limit counts them all).
int ProcessesOf(uid_t uid) {
  int count = 0;
  if (DIR* proc = opendir("/proc")) {
    while (const dirent* entry = readdir(proc)) {
      if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
      struct ::stat info {};
      if (::stat(fmt::format("/proc/{}", entry->d_name).c_str(), &info) == 0 &&
          info.st_uid == uid) {
        ++count;
      }
    }
    closedir(proc);
  }
  return count;
}

std::vector<std::string> BwrapArguments(const SandboxLimits& limits) {
  std::vector<std::string> args = {kBwrap,
                                   "--ro-bind",
                                   "/usr",
                                   "/usr",
                                   "--symlink",
                                   "usr/lib",
                                   "/lib",
                                   "--symlink",
                                   "usr/lib64",
                                   "/lib64",
                                   "--symlink",
                                   "usr/bin",
                                   "/bin",
                                   "--proc",
                                   "/proc",
                                   "--dev",
                                   "/dev",
                                   "--size",
                                   std::to_string(limits.tmpfs_bytes),
                                   "--tmpfs",
                                   "/tmp",
                                   "--chdir",
                                   "/tmp",
                                   "--unshare-all",
                                   "--die-with-parent",
                                   "--new-session",
                                   "--cap-drop",
                                   "ALL",
                                   "--clearenv",
                                   "--setenv",
                                   "PATH",
                                   "/usr/bin",
                                   "--setenv",
                                   "HOME",
                                   "/tmp"};
  for (const std::string& path : limits.extra_read_only) {
    args.insert(args.end(), {"--ro-bind", path, path});
  }
  // The sandbox's own root (bwrap's tmpfs) read-only too: /tmp is the one writable place.
  args.insert(args.end(), {"--remount-ro", "/", "--", "/usr/bin/python3", "-I", "-"});
  return args;
}

// Forks `argv`; in the child: its own process group, the limits, and (sandboxed, as root) the
// nobody user. Feeds `input` to its stdin, collects its output, kills its group at the wall
// limit.
SandboxResult Run(const std::vector<std::string>& argv, const std::string& input,
                  const SandboxLimits& limits, bool drop_to_nobody) {
  int in_pipe[2], out_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) != 0 || pipe2(out_pipe, O_CLOEXEC) != 0) {
    Fail("sandbox", "cannot create pipes: {}", std::strerror(errno));
  }
  const uid_t run_as = drop_to_nobody ? kNobody : getuid();
  const int processes = ProcessesOf(run_as) + limits.processes;
  // Built before fork: the child of a threaded process only calls async-signal-safe functions.
  std::vector<char*> c_args;
  c_args.reserve(argv.size() + 1);
  for (const std::string& a : argv) c_args.push_back(const_cast<char*>(a.c_str()));
  c_args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) Fail("sandbox", "cannot fork: {}", std::strerror(errno));
  if (pid == 0) {
    setpgid(0, 0);
    dup2(in_pipe[0], 0);
    dup2(out_pipe[1], 1);
    dup2(out_pipe[1], 2);
    const auto limit = [](int resource, rlim_t value) {
      const rlimit r{value, value};
      setrlimit(resource, &r);
    };
    limit(RLIMIT_AS, static_cast<rlim_t>(limits.memory_bytes));
    limit(RLIMIT_CPU, static_cast<rlim_t>(limits.wall_seconds) + 1);
    limit(RLIMIT_NPROC, static_cast<rlim_t>(processes));
    limit(RLIMIT_FSIZE, static_cast<rlim_t>(limits.tmpfs_bytes));
    limit(RLIMIT_CORE, 0);
    if (drop_to_nobody &&
        (setgroups(0, nullptr) != 0 || setgid(kNobody) != 0 || setuid(kNobody) != 0)) {
      _exit(126);
    }
    execv(c_args[0], c_args.data());
    _exit(127);
  }
  close(in_pipe[0]);
  close(out_pipe[1]);
  // The program is small (a few KiB): written at once; a child that stops reading gets EPIPE.
  signal(SIGPIPE, SIG_IGN);
  size_t written = 0;
  while (written < input.size()) {
    const ssize_t n = write(in_pipe[1], input.data() + written, input.size() - written);
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  close(in_pipe[1]);
  SandboxResult result;
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(limits.wall_seconds * 1000));
  char buffer[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      result.timed_out = true;
      break;
    }
    pollfd fd{out_pipe[0], POLLIN, 0};
    if (poll(&fd, 1, static_cast<int>(std::min<int64_t>(left, 1000))) <= 0) continue;
    const ssize_t n = read(out_pipe[0], buffer, sizeof(buffer));
    if (n <= 0) break;  // every writer closed: the program ended
    if (result.output.size() < kMaxOutput) {
      result.output.append(
          buffer, std::min<size_t>(static_cast<size_t>(n), kMaxOutput - result.output.size()));
    }
  }
  kill(-pid, SIGKILL);  // the whole group, finished or not
  close(out_pipe[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  result.exit_code = !result.timed_out && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

}  // namespace

std::string SandboxProblem() {
  if (access(kBwrap, X_OK) != 0) {
    return "bubblewrap is not installed (/usr/bin/bwrap; Debian package bubblewrap)";
  }
  const SandboxResult probe = RunPythonInSandbox("print('sandbox ok')\n", {.wall_seconds = 20});
  if (probe.exit_code != 0 || probe.output.find("sandbox ok") == std::string::npos) {
    return fmt::format("bubblewrap cannot start a sandbox here (are user namespaces enabled?): {}",
                       probe.output.substr(0, 300));
  }
  return {};
}

SandboxResult RunPythonInSandbox(const std::string& program, const SandboxLimits& limits) {
  return Run(BwrapArguments(limits), program, limits, getuid() == 0 && !limits.keep_user);
}

SandboxResult RunPythonUnsandboxed(const std::string& program, const SandboxLimits& limits) {
  return Run({"/usr/bin/python3", "-I", "-"}, program, limits, false);
}

}  // namespace proctor
