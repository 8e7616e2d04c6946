#include "eval/report/gnuplot.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/error.h"
#include "util/file.h"
#include "util/find_program.h"

extern char** environ;

namespace proctor {
namespace fs = std::filesystem;

fs::path RequireGnuplot() {
  fs::path gnuplot = FindProgram("gnuplot");
  if (!gnuplot.empty()) return gnuplot;
  Fail("report",
       "the plots are drawn with gnuplot, which is not on PATH: install it (Debian: apt install "
       "gnuplot-nox; scripts/install-deps.sh does)");
}

std::string GnuplotQuote(const std::string& text) {
  std::string out = "'";
  for (const char c : text) {
    out += c;
    if (c == '\'') out += '\'';
  }
  return out + "'";
}

void RunGnuplot(const GnuplotJob& job, const fs::path& dir) {
  const fs::path gnuplot = RequireGnuplot();
  fs::create_directories(dir);
  for (const auto& [name, contents] : job.data) WriteFileAtomic(dir / name, contents);
  WriteFileAtomic(dir / "plot.gp", job.script);
  const fs::path log = dir / "gnuplot.log";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  posix_spawn_file_actions_addchdir_np(&actions, dir.c_str());
  std::string program = gnuplot.string(), script = "plot.gp";
  char* argv[] = {program.data(), script.data(), nullptr};
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) Fail("report", "could not run {}: error {}", program, spawned);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string output = fs::exists(log) ? ReadFileToString(log) : "";
    if (output.size() > 2000) output = "..." + output.substr(output.size() - 2000);
    Fail("report", "gnuplot failed on {} (status {}):\n{}", (dir / "plot.gp").string(), status,
         output);
  }
}

}  // namespace proctor
