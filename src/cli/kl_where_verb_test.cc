// `proctor kl --where [--worst N]` on the real stories260K loop: the breakdown tables and the
// worst positions printed with their text, the same numbers in --json (whose values
// tools/kl_e2e_check.py recomputes in numpy: src/eval/runners/kl_e2e_test.cc), and a bad
// --worst refused.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_test_support.h"  // same folder: cli_test has no src/ include path

namespace proctor::cli_test {
namespace {

TEST(KlWhereVerb, PrintsTheBreakdownAndTheWorstPositionsInContext) {
  const fs::path model = Fixtures() / "stories260K" / "stories260K.gguf";
  const fs::path text = Fixtures() / "tinystories" / "tinystories_sample.txt";
  if (!fs::exists(model) || !fs::exists(text)) GTEST_SKIP() << "fixtures absent";
  TempDir tmp;
  const auto path = [&](const char* name) { return (tmp.path() / name).string(); };
  Result r = Proctor(fmt::format("corpus --tokenizer {} --out {} --ctx-len 64 --n-seqs 8 {}",
                                 model.string(), path("c"), text.string()));
  ASSERT_EQ(r.status, 0) << r.out;
  r = Proctor(fmt::format("dump --teacher {} --corpus {} --out {} --top-k 64", model.string(),
                          path("c"), path("d")));
  ASSERT_EQ(r.status, 0) << r.out;
  r = Proctor(
      fmt::format("quantize {} --out {} --bits 4 --group-size 32", model.string(), path("q4")));
  ASSERT_EQ(r.status, 0) << r.out;
  r = Proctor(fmt::format("kl --reference-logits {} --model {} --where --worst 3 --json {}",
                          path("d"), path("q4"), path("kl.json")));
  ASSERT_EQ(r.status, 0) << r.out;
  std::ifstream in(path("kl.json"));
  const nlohmann::json where = nlohmann::json::parse(in)["results"]["where"];
  for (const char* part : {"Where the KL lives:", "teacher's top-1 probability", "scored position",
                           "lost ", "gained ", "The 3 positions of largest KL:", "\" -> \""}) {
    EXPECT_TRUE(Contains(r.out, part)) << part << "\n" << r.out;
  }
  ASSERT_EQ(where["worst"].size(), 3u);
  int64_t positions = 0;
  for (const auto& b : where["by_confidence"]) positions += b["positions"].get<int64_t>();
  EXPECT_EQ(positions, 8 * 63);
  positions = 0;
  for (const auto& b : where["by_position"]) positions += b["positions"].get<int64_t>();
  EXPECT_EQ(positions, 8 * 63);
  for (size_t i = 0; i < 3; ++i) {
    const auto& w = where["worst"][i];
    const std::string line =
        fmt::format("{:>3}  {:>5}  {:>6}  {:>10.3e}", i + 1, w["sequence"].get<int64_t>(),
                    w["position"].get<int64_t>(), w["kl"].get<double>());
    EXPECT_TRUE(Contains(r.out, line)) << line << "\n" << r.out;
  }
  EXPECT_GE(where["worst"][0]["kl"].get<double>(), where["worst"][2]["kl"].get<double>());

  r = Proctor(
      fmt::format("kl --reference-logits {} --model {} --where --worst -1", path("d"), path("q4")));
  EXPECT_NE(r.status, 0) << r.out;  // CLI11's range check, as compare's --ctx-len
  EXPECT_TRUE(Contains(r.out, "--worst: Value -1 not in range")) << r.out;
}

}  // namespace
}  // namespace proctor::cli_test
