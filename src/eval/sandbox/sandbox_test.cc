// The sandbox really isolates: each attack below is a program a model could write.
#include "eval/sandbox/sandbox.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "util/testing_files.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;

class Sandbox : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string problem = SandboxProblem(); !problem.empty()) {
      GTEST_SKIP() << "sandbox unavailable: " << problem;
    }
  }
};

TEST_F(Sandbox, RunsPythonAndReportsItsStatus) {
  const SandboxResult ok = RunPythonInSandbox("import sys\nprint(sum(range(10)))\n");
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_EQ(ok.output, "45\n");
  const SandboxResult failing = RunPythonInSandbox("assert 1 == 2\n");
  EXPECT_EQ(failing.exit_code, 1);
  EXPECT_NE(failing.output.find("AssertionError"), std::string::npos) << failing.output;
}

TEST_F(Sandbox, BlocksTheNetwork) {
  const SandboxResult r = RunPythonInSandbox(
      "import socket\n"
      "try:\n"
      "    socket.create_connection(('1.1.1.1', 53), timeout=3)\n"
      "    print('CONNECTED')\n"
      "except OSError as e:\n"
      "    print('blocked', e.errno)\n"
      "s = socket.socket(); s.bind(('127.0.0.1', 0)); print('loopback only')\n");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("CONNECTED"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("blocked"), std::string::npos) << r.output;
}

TEST_F(Sandbox, WritesOnlyItsOwnTmpfsAndSeesNothingOfTheHost) {
  const testing::TempDir host;
  const fs::path secret = host.path() / "secret.txt";
  std::ofstream(secret) << "top secret";
  const fs::path canary = host.path() / "canary.txt";
  const SandboxResult r = RunPythonInSandbox(
      fmt::format("import os\n"
                  "for path in ['{0}', '/root', '/home', '/etc/passwd', '{2}']:\n"
                  "    print(path, os.path.exists(path))\n"
                  "for path in ['{1}', '/usr/evil', '/evil']:\n"
                  "    try:\n"
                  "        open(path, 'w').write('x'); print('WROTE', path)\n"
                  "    except OSError as e:\n"
                  "        print('cannot write', path)\n"
                  "open('/tmp/mine', 'w').write('ok'); print('tmp', open('/tmp/mine').read())\n",
                  secret.string(), canary.string(), PROCTOR_SOURCE_DIR));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(secret.string() + " False"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("/root False"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(std::string(PROCTOR_SOURCE_DIR) + " False"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("WROTE"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("tmp ok"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(canary));
}

TEST_F(Sandbox, AForkBombIsContainedAndKilled) {
  const auto start = std::chrono::steady_clock::now();
  const SandboxResult r = RunPythonInSandbox(
      "import os\n"
      "n = 0\n"
      "while True:\n"
      "    try:\n"
      "        if os.fork() == 0:\n"
      "            import time; time.sleep(60)\n"
      "        n += 1\n"
      "    except OSError:\n"
      "        print('fork refused after', n); break\n",
      {.wall_seconds = 10, .processes = 32});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_NE(r.output.find("fork refused after"), std::string::npos) << r.output;
  EXPECT_LT(seconds, 12.0);
}

TEST_F(Sandbox, TimeAndMemoryLimits) {
  const auto start = std::chrono::steady_clock::now();
  const SandboxResult loop = RunPythonInSandbox("while True: pass\n", {.wall_seconds = 2});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(loop.timed_out);
  EXPECT_EQ(loop.exit_code, -1);
  EXPECT_LT(seconds, 4.0);
  const SandboxResult hog =
      RunPythonInSandbox("x = bytearray(2 * 1024 * 1024 * 1024)\nprint('GOT IT')\n");
  EXPECT_NE(hog.exit_code, 0);
  EXPECT_EQ(hog.output.find("GOT IT"), std::string::npos);
  EXPECT_NE(hog.output.find("MemoryError"), std::string::npos) << hog.output;
}

}  // namespace
}  // namespace proctor
