// `proctor kl-diff` on the real stories260K loop: two candidates' kl results on one dump paired
// sequence by sequence (the differences recomputed by numpy from the two files), identical
// candidates at exactly zero error, and mismatched inputs refused naming both files.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_test_support.h"  // same folder: cli_test has no src/ include path

namespace proctor::cli_test {
namespace {

nlohmann::json ReadJsonFile(const fs::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

TEST(KlDiffVerb, PairsTwoCandidatesOfOneDump) {
  const fs::path model = Fixtures() / "stories260K" / "stories260K.gguf";
  const fs::path text = Fixtures() / "tinystories" / "tinystories_sample.txt";
  if (!fs::exists(model) || !fs::exists(text)) GTEST_SKIP() << "fixtures absent";
  TempDir tmp;
  const auto path = [&](const char* name) { return (tmp.path() / name).string(); };
  for (const auto& [corpus, seqs] : {std::pair{"c", 24}, std::pair{"c2", 12}}) {
    Result r = Proctor(fmt::format("corpus --tokenizer {} --out {} --ctx-len 64 --n-seqs {} {}",
                                   model.string(), path(corpus), seqs, text.string()));
    ASSERT_EQ(r.status, 0) << r.out;
  }
  Result r = Proctor(fmt::format("dump --teacher {} --corpus {} --out {} --top-k 64",
                                 model.string(), path("c"), path("d")));
  ASSERT_EQ(r.status, 0) << r.out;
  const std::string dump_output = r.out;
  r = Proctor(fmt::format("dump --teacher {} --corpus {} --out {} --top-k 64", model.string(),
                          path("c2"), path("d2")));
  ASSERT_EQ(r.status, 0) << r.out;
  const auto kl = [&](const std::string& dump, const std::string& extra, const char* out) {
    const Result k = Proctor(fmt::format("kl --reference-logits {} --model {} {} --json {}", dump,
                                         model.string(), extra, path(out)));
    ASSERT_EQ(k.status, 0) << k.out;
  };
  kl(path("d"), "", "a.json");
  kl(path("d"), "--compute bf16 --kv bf16", "b.json");
  kl(path("d2"), "", "other.json");

  r = Proctor(
      fmt::format("kl-diff {} {} --json {}", path("a.json"), path("b.json"), path("diff.json")));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "distinguishable")) << r.out;
  const nlohmann::json diff = ReadJsonFile(path("diff.json"))["results"]["metrics"];
  // numpy from the two results files: per-sequence differences, mean and standard error.
  const Result numpy = RunShell(fmt::format(
      "/usr/bin/python3 -c 'import json, numpy as np\n"
      "a = json.load(open(\"{}\"))[\"results\"]; b = json.load(open(\"{}\"))[\"results\"]\n"
      "out = {{}}\n"
      "for m, k in [(\"kl\", \"sequence_mean_kl\"), (\"top1\", \"sequence_top1\"), "
      "(\"nll\", \"sequence_mean_nll\")]:\n"
      "    d = np.array(b[k], dtype=float) - np.array(a[k], dtype=float)\n"
      "    out[m] = [d.mean(), d.std(ddof=1) / np.sqrt(len(d))]\n"
      "print(json.dumps(out))' 2>&1",
      path("a.json"), path("b.json")));
  ASSERT_EQ(numpy.status, 0) << numpy.out;
  const nlohmann::json theirs = nlohmann::json::parse(numpy.out);
  for (const char* metric : {"kl", "top1", "nll"}) {
    SCOPED_TRACE(metric);
    const double d = theirs[metric][0], se = theirs[metric][1];
    EXPECT_NEAR(diff[metric]["difference"].get<double>(), d, 1e-9 * std::fabs(d) + 1e-300);
    EXPECT_NEAR(diff[metric]["standard_error"].get<double>(), se, 1e-9 * se + 1e-300);
    EXPECT_EQ(diff[metric]["sequences"], 24);
  }
  // The mean KL difference is the difference of the two tables' means.
  EXPECT_NEAR(diff["kl"]["difference"].get<double>(),
              ReadJsonFile(path("b.json"))["results"]["kl"]["mean"].get<double>() -
                  ReadJsonFile(path("a.json"))["results"]["kl"]["mean"].get<double>(),
              1e-15);
  EXPECT_TRUE(diff["kl"]["distinguishable"].get<bool>());  // bf16 compute is above the floor

  // The dump's floor (floor.json, written with the dump): the teacher's own row is "at floor" at
  // exactly 0; bf16 compute is "worse", by the paired difference numpy gives from the files.
  EXPECT_TRUE(Contains(dump_output, "floor (the teacher against its own dump): KL mean"))
      << dump_output;
  const nlohmann::json floor_a = ReadJsonFile(path("a.json"))["results"]["floor"];
  EXPECT_EQ(floor_a["verdict"], "at floor");
  EXPECT_EQ(floor_a["candidate_minus_floor"]["kl"], 0.0);
  EXPECT_EQ(floor_a["kl"]["mean"], ReadJsonFile(path("a.json"))["results"]["kl"]["mean"]);
  const nlohmann::json floor_b = ReadJsonFile(path("b.json"))["results"]["floor"];
  EXPECT_EQ(floor_b["verdict"], "worse");
  const Result floor_numpy = RunShell(
      fmt::format("/usr/bin/python3 -c 'import json, numpy as np\n"
                  "f = json.load(open(\"{}/floor.json\"))[\"floor\"][\"sequence_mean_kl\"]\n"
                  "b = json.load(open(\"{}\"))[\"results\"][\"sequence_mean_kl\"]\n"
                  "d = np.array(b) - np.array(f)\n"
                  "print(json.dumps([d.mean(), d.std(ddof=1) / np.sqrt(len(d))]))' 2>&1",
                  path("d"), path("b.json")));
  ASSERT_EQ(floor_numpy.status, 0) << floor_numpy.out;
  const nlohmann::json floor_theirs = nlohmann::json::parse(floor_numpy.out);
  const double floor_d = floor_theirs[0], floor_se = floor_theirs[1];
  EXPECT_NEAR(floor_b["candidate_minus_floor"]["kl"].get<double>(), floor_d,
              1e-9 * std::fabs(floor_d));
  EXPECT_NEAR(floor_b["candidate_minus_floor"]["standard_error"].get<double>(), floor_se,
              1e-9 * floor_se);
  r = Proctor(fmt::format("kl --reference-logits {} --model {} --compute bf16 --kv bf16", path("d"),
                          model.string()));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "floor (teacher vs its dump)")) << r.out;
  EXPECT_TRUE(Contains(r.out, "dKL vs floor +- SE")) << r.out;

  r = Proctor(
      fmt::format("kl-diff {} {} --json {}", path("a.json"), path("a.json"), path("same.json")));
  ASSERT_EQ(r.status, 0) << r.out;
  const nlohmann::json same = ReadJsonFile(path("same.json"))["results"]["metrics"];
  EXPECT_EQ(same["kl"]["standard_error"], 0.0);
  EXPECT_FALSE(same["kl"]["distinguishable"].get<bool>());

  r = Proctor(fmt::format("kl-diff {} {}", path("a.json"), path("other.json")));
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(
      Contains(r.out, "a.json' and '" + path("other.json") + "' were not scored on the same"))
      << r.out;
  std::ofstream(path("eval.json")) << R"({"schema": "proctor-results", "command": "eval"})";
  r = Proctor(fmt::format("kl-diff {} {}", path("a.json"), path("eval.json")));
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(Contains(r.out, "is not a `proctor kl --json` result")) << r.out;
}

}  // namespace
}  // namespace proctor::cli_test
