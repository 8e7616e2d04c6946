// `proctor k8s` end to end without a cluster: the pod command of every index of the Indexed Job
// it prints, run by sh as a pod would run it ($JOB_COMPLETION_INDEX set, in the working
// directory), then the merge Job's command: the sharded ppl of stories260K merges to the
// unsharded run's statistics. (The manifests against the batch/v1 schema: k8s_jobs_test.cc.)
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_test_support.h"  // same folder: cli_test has no src/ include path

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using proctor::cli_test::Fixtures;
using proctor::cli_test::Result;
using proctor::cli_test::RunShell;
using proctor::cli_test::TempDir;

// The `sh -c` command of the first container of a manifest printed by `proctor k8s`.
std::string PodCommand(const std::string& yaml) {
  std::smatch match;
  const std::regex pattern("- \"-c\"\\n\\s*- (\".*\")\\n");
  if (!std::regex_search(yaml, match, pattern)) return "";
  return json::parse(match[1].str()).get<std::string>();
}

// `text` single-quoted for the shell that runs `sh -c`, so that only the inner sh expands it.
std::string Quoted(const std::string& text) {
  return fmt::format("'{}'", std::regex_replace(text, std::regex("'"), "'\\''"));
}

TEST(K8sVerb, ThePodsAndTheMergeJobRunTheShardsToTheUnshardedResult) {
  const fs::path model = Fixtures() / "stories260K" / "stories260K.gguf";
  const fs::path data = Fixtures() / "tinystories" / "tinystories_sample.txt";
  if (!fs::exists(model)) GTEST_SKIP() << "fixture absent: " << model;
  const TempDir work;
  const std::string command = fmt::format(
      "ppl {} --data {} --ctx-len 64 --n-seqs 5 --json ppl.json", model.string(), data.string());
  const std::string k8s = fmt::format("{} k8s --shards 3 --image unused --workdir {} --proctor {}",
                                      PROCTOR_BIN, work.path().string(), PROCTOR_BIN);
  const Result indexed = RunShell(fmt::format("{} -- {}", k8s, command));
  ASSERT_EQ(indexed.status, 0) << indexed.out;
  const Result merge = RunShell(fmt::format("{} --merge -- {}", k8s, command));
  ASSERT_EQ(merge.status, 0) << merge.out;
  const std::string pod = PodCommand(indexed.out), merger = PodCommand(merge.out);
  ASSERT_FALSE(pod.empty() || merger.empty()) << indexed.out << merge.out;
  for (int index = 0; index < 3; ++index) {
    const Result r = RunShell(fmt::format("cd {} && JOB_COMPLETION_INDEX={} sh -c {} 2>&1",
                                          work.path().string(), index, Quoted(pod)));
    ASSERT_EQ(r.status, 0) << pod << "\n" << r.out;
  }
  Result r = RunShell(fmt::format("cd {} && sh -c {} 2>&1", work.path().string(), Quoted(merger)));
  ASSERT_EQ(r.status, 0) << merger << "\n" << r.out;
  r = RunShell(fmt::format("cd {} && {} -q {} 2>&1", work.path().string(), PROCTOR_BIN,
                           std::regex_replace(command, std::regex("ppl.json"), "whole.json")));
  ASSERT_EQ(r.status, 0) << r.out;
  std::ifstream merged_file(work.path() / "ppl.json"), whole_file(work.path() / "whole.json");
  const json merged = json::parse(merged_file), whole = json::parse(whole_file);
  for (const char* key : {"ppl", "standard_error", "mean_nll", "row_mean_nll", "positions"}) {
    EXPECT_EQ(merged["results"][key], whole["results"][key]) << key;
  }
}

}  // namespace
