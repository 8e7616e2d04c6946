#include "eval/runs/run_database.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>
#include <set>
#include <thread>

#include "eval/runs/run_compare.h"
#include "util/testing_files.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

RunRecord Sample(const std::string& task, std::vector<std::pair<std::string, std::string>> items) {
  RunRecord r;
  r.created = "2026-12-02T10:00:00Z";
  r.task = task;
  r.model = "m.gguf";
  r.model_sha256 = "ab";
  r.proctor_version = "0.1.0";
  r.settings = {{"kv", "f32"}};
  r.n = static_cast<int64_t>(items.size());
  for (const auto& [id, outcome] : items) r.correct += outcome == "correct" ? 1 : 0;
  r.accuracy = r.n == 0 ? 0 : static_cast<double>(r.correct) / static_cast<double>(r.n);
  r.machine = "test machine";
  r.items = std::move(items);
  return r;
}

TEST(RunDatabase, RunsAndTheirItemsRoundTrip) {
  const testing::TempDir tmp;
  const fs::path path = tmp.path() / "sub" / "runs.sqlite";
  {
    RunDatabase db = RunDatabase::Open(path);
    RunRecord a = Sample("mmlu", {{"x/2", "correct"}, {"x/1", "wrong"}, {"y/0", "unscorable"}});
    a.kl = {{"kl_mean", 0.25}};
    a.disk_bytes = 1234;
    EXPECT_EQ(db.Insert(a), 1);
    RunRecord b = Sample("gsm8k", {{"5", "correct"}});
    b.capability = 42.5;
    EXPECT_EQ(db.Insert(b), 2);
  }
  const RunDatabase db = RunDatabase::Open(path);  // reopened: the schema is kept
  const std::vector<RunRecord> list = db.List();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].id, 2);  // newest first
  EXPECT_EQ(list[0].capability, 42.5);
  EXPECT_TRUE(list[0].items.empty());
  EXPECT_EQ(db.List(1).size(), 1u);
  const std::optional<RunRecord> a = db.Get(1);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->task, "mmlu");
  EXPECT_EQ(a->settings, nlohmann::ordered_json({{"kv", "f32"}}));
  EXPECT_EQ(a->kl["kl_mean"], 0.25);
  EXPECT_EQ(a->disk_bytes, 1234);
  EXPECT_FALSE(a->capability.has_value());
  EXPECT_EQ(a->machine, "test machine");
  // Items in task order, not sorted.
  EXPECT_EQ(a->items, (std::vector<std::pair<std::string, std::string>>{
                          {"x/2", "correct"}, {"x/1", "wrong"}, {"y/0", "unscorable"}}));
  EXPECT_FALSE(db.Get(3).has_value());
}

TEST(RunDatabase, ConcurrentWritersLoseNothing) {
  const testing::TempDir tmp;
  const fs::path path = tmp.path() / "runs.sqlite";
  RunDatabase::Open(path);
  constexpr int kWriters = 4, kRuns = 15;
  std::vector<std::thread> writers;
  writers.reserve(kWriters);
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&path, w] {
      RunDatabase db = RunDatabase::Open(path);  // its own connection
      for (int i = 0; i < kRuns; ++i) {
        std::vector<std::pair<std::string, std::string>> items;
        items.reserve(50);
        for (int k = 0; k < 50; ++k) items.emplace_back(std::to_string(k), "correct");
        RunRecord r = Sample(fmt::format("w{}", w), std::move(items));
        db.Insert(r);
      }
    });
  }
  for (std::thread& t : writers) t.join();
  const RunDatabase db = RunDatabase::Open(path);
  const std::vector<RunRecord> all = db.List();
  ASSERT_EQ(all.size(), static_cast<size_t>(kWriters * kRuns));
  std::set<int64_t> ids;
  for (const RunRecord& r : all) {
    ids.insert(r.id);
    EXPECT_EQ(db.Get(r.id)->items.size(), 50u);
  }
  EXPECT_EQ(ids.size(), all.size());
}

TEST(RunDatabase, ForeignFilesAndNewerSchemasAreNamedErrors) {
  const testing::TempDir tmp;
  const fs::path text = tmp.path() / "notes.sqlite";
  std::ofstream(text) << "this is not a database, just some text that is long enough to read";
  EXPECT_THAT(testing::ErrorOf([&] { RunDatabase::Open(text); }), HasSubstr("notes.sqlite"));
  const fs::path newer = tmp.path() / "newer.sqlite";
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(newer.c_str(), &db), SQLITE_OK);
  sqlite3_exec(db, "PRAGMA user_version = 9", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  EXPECT_THAT(testing::ErrorOf([&] { RunDatabase::Open(newer); }),
              HasSubstr("schema version 9 (this proctor writes 1)"));
}

TEST(CompareRuns, PairsTheSharedItemsOnly) {
  RunRecord a =
      Sample("mmlu", {{"1", "correct"}, {"2", "wrong"}, {"3", "correct"}, {"4", "wrong"}});
  RunRecord b = Sample("mmlu", {{"2", "correct"},
                                {"3", "correct"},
                                {"4", "request_error"},
                                {"5", "correct"},
                                {"6", "wrong"}});
  a.id = 1;
  b.id = 2;
  const RunComparison c = CompareRuns(a, b);
  EXPECT_EQ(c.paired.n, 3);  // items 2, 3, 4
  EXPECT_EQ(c.only_in_a, 1);
  EXPECT_EQ(c.only_in_b, 2);
  EXPECT_EQ(c.paired.both_correct, 1);  // 3
  EXPECT_EQ(c.paired.only_b, 1);        // 2
  EXPECT_EQ(c.paired.both_wrong, 1);    // 4 (a request error is not correct)
  EXPECT_DOUBLE_EQ(c.paired.mcnemar_p, 1.0);
  const std::string table = FormatRunComparison(c);
  EXPECT_THAT(table, HasSubstr("3 items scored by both runs (1 only in A, 2 only in B"));
  EXPECT_THAT(table, HasSubstr("B - A: +33.33 points"));
  EXPECT_EQ(RunComparisonToJson(c)["only_b_correct"], 1);
  b.task = "gsm8k";
  EXPECT_THAT(testing::ErrorOf([&] { CompareRuns(a, b); }), HasSubstr("same task"));
  b = Sample("mmlu", {{"9", "correct"}});
  EXPECT_THAT(testing::ErrorOf([&] { CompareRuns(a, b); }), HasSubstr("share no item"));
}

TEST(ModelIdentity, AFileOrAFoldersSha256sumListing) {
  const auto [file_sha, file_bytes] =
      ModelIdentity({{"kind", "model-file"}, {"bytes", 10}, {"sha256", "cd"}});
  EXPECT_EQ(file_sha, "cd");
  EXPECT_EQ(file_bytes, 10);
  const nlohmann::ordered_json folder = {
      {"kind", "model-directory"},
      {"files",
       {{{"name", "config.json"}, {"bytes", 5}, {"sha256", "aa"}},
        {{"name", "model.safetensors"}, {"bytes", 100}, {"sha256", "bb"}}}}};
  const auto [dir_sha, dir_bytes] = ModelIdentity(folder);
  // sha256 of "aa  config.json\nbb  model.safetensors\n" (printf ... | sha256sum).
  EXPECT_EQ(dir_sha, "449b0f358c4175939d3c46fbc9611fbbbaa9fa172b16e20f119795355bb9831d");
  EXPECT_EQ(dir_bytes, 100);
  EXPECT_EQ(ModelIdentity({{"kind", "unresolved"}}).first, "");
  EXPECT_FALSE(ModelIdentity(nlohmann::ordered_json()).second.has_value());  // a server
}

}  // namespace
}  // namespace proctor
