// `proctor eval` end to end: the real stories260K model over MMLU and GSM8K samples
// (deterministic, every item in --outputs, the results file), bad input named clearly, and
// llama.cpp's own HTTP server (llama-server, built from the llama-cpp-python sdist) giving the
// same greedy GSM8K completions through the HTTP client as the local engine.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_test_support.h"  // same folder: cli_test has no src/ include path
#include "testing_oracles.h"

namespace proctor::cli_test {
namespace {

fs::path Stories() { return Fixtures() / "stories260K" / "stories260K.gguf"; }

bool HaveTaskData() {
  return fs::exists(Stories()) && fs::exists(Fixtures() / "mmlu") &&
         fs::exists(Fixtures() / "gsm8k" / "test.jsonl");
}

// task/id -> the item record of an --outputs file.
std::map<std::string, nlohmann::json> ReadOutputs(const fs::path& path) {
  std::map<std::string, nlohmann::json> items;
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);  // the run header
  while (std::getline(in, line)) {
    const nlohmann::json row = nlohmann::json::parse(line);
    items[row["task"].get<std::string>() + "/" + row["id"].get<std::string>()] = row;
  }
  return items;
}

TEST(EvalVerb, Stories260KRunsBothTasksDeterministicallyAndKeepsEveryItem) {
  if (!HaveTaskData()) GTEST_SKIP() << "fixtures absent under " << Fixtures();
  TempDir tmp;
  const fs::path db = tmp.path() / "runs.sqlite";
  const std::string common =
      fmt::format("eval mmlu,gsm8k --model {} --n 4 --data-dir {} -t 2 --db {}", Stories().string(),
                  Fixtures().string(), db.string());
  const Result first =
      Proctor(fmt::format("{} --outputs {} --json {}", common, (tmp.path() / "a.jsonl").string(),
                          (tmp.path() / "a.json").string()));
  ASSERT_EQ(first.status, 0) << first.out;
  EXPECT_TRUE(Contains(first.out, "mmlu")) << first.out;
  EXPECT_TRUE(Contains(first.out, "standard error")) << first.out;
  const Result second =
      Proctor(fmt::format("{} --outputs {}", common, (tmp.path() / "b.jsonl").string()));
  ASSERT_EQ(second.status, 0) << second.out;
  const auto a = ReadOutputs(tmp.path() / "a.jsonl");
  const auto b = ReadOutputs(tmp.path() / "b.jsonl");
  // MMLU n=4 over 57 subjects: one item from each of the first 4; GSM8K sampleIndices(1319, 4).
  EXPECT_EQ(a.size(), 8u);
  EXPECT_EQ(a, b);  // bit-identical for the same inputs and thread count
  std::vector<std::string> mmlu_subjects;
  for (const auto& [id, row] : a) {
    if (id.starts_with("mmlu/")) mmlu_subjects.push_back(id.substr(5, id.rfind('/') - 5));
  }
  EXPECT_EQ(mmlu_subjects, (std::vector<std::string>{"abstract_algebra", "anatomy", "astronomy",
                                                     "business_ethics"}));
  std::ifstream json_file(tmp.path() / "a.json");
  const nlohmann::json json = nlohmann::json::parse(json_file);
  EXPECT_EQ(json["command"], "eval");
  ASSERT_EQ(json["results"]["tasks"].size(), 2u);
  for (const auto& task : json["results"]["tasks"]) {
    EXPECT_EQ(task["n"], 4);
    EXPECT_EQ(task["correct"].get<int>() + task["wrong"].get<int>() +
                  task["unscorable"].get<int>() + task["request_errors"].get<int>(),
              4);
  }
  // stories260K has no chat template: GSM8K says it fell back to raw text.
  EXPECT_TRUE(Contains(json["warnings"].dump(), "no chat template")) << json["warnings"];
  EXPECT_EQ(json["settings"]["client"]["kind"], "engine");
  // --resume on a finished run asks nothing and reports the same numbers.
  const Result resumed =
      Proctor(fmt::format("{} --outputs {} --resume", common, (tmp.path() / "a.jsonl").string()));
  ASSERT_EQ(resumed.status, 0) << resumed.out;
  EXPECT_EQ(ReadOutputs(tmp.path() / "a.jsonl"), a);

  // Every run is in the database: 3 runs x 2 tasks, newest first.
  const Result list = Proctor(fmt::format("runs --db {} list --json", db.string()));
  ASSERT_EQ(list.status, 0) << list.out;
  const nlohmann::json runs = nlohmann::json::parse(list.out);
  ASSERT_EQ(runs.size(), 6u);
  EXPECT_EQ(runs[0]["id"], 6);
  EXPECT_EQ(runs[5]["task"], "mmlu");
  EXPECT_EQ(runs[5]["model_sha256"],
            "270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d");  // SOURCES.md
  EXPECT_EQ(runs[5]["disk_bytes"], 1185376);
  EXPECT_EQ(runs[5]["n"], 4);
  const Result show = Proctor(fmt::format("runs --db {} show 1", db.string()));
  ASSERT_EQ(show.status, 0) << show.out;
  const nlohmann::json run = nlohmann::json::parse(show.out);
  ASSERT_EQ(run["items"].size(), 4u);
  for (const auto& item : run["items"]) {
    EXPECT_EQ(item["outcome"], a.at("mmlu/" + item["id"].get<std::string>())["outcome"]);
  }
  // The same model twice: paired on the same 4 items, no difference.
  const Result compare = Proctor(fmt::format("runs --db {} compare 1 3", db.string()));
  ASSERT_EQ(compare.status, 0) << compare.out;
  EXPECT_TRUE(Contains(compare.out, "task mmlu: 4 items scored by both runs")) << compare.out;
  EXPECT_TRUE(Contains(compare.out, "B - A: +0.00 points")) << compare.out;
  EXPECT_TRUE(Contains(compare.out, "McNemar exact p = 1")) << compare.out;
  const Result mixed = Proctor(fmt::format("runs --db {} compare 1 2", db.string()));
  EXPECT_EQ(mixed.status, 1);
  EXPECT_TRUE(Contains(mixed.out, "only runs of the same task pair up")) << mixed.out;
  const Result missing = Proctor(fmt::format("runs --db {} show 99", db.string()));
  EXPECT_EQ(missing.status, 1);
  EXPECT_TRUE(Contains(missing.out, "has no run 99")) << missing.out;
  const Result no_db =
      Proctor(fmt::format("runs --db {} list", (tmp.path() / "absent.sqlite").string()));
  EXPECT_EQ(no_db.status, 1);
  EXPECT_TRUE(Contains(no_db.out, "no run database at")) << no_db.out;
}

TEST(EvalVerb, BadInputIsNamedBeforeAnythingRuns) {
  if (!HaveTaskData()) GTEST_SKIP() << "fixtures absent under " << Fixtures();
  TempDir tmp;
  const std::string model = "--model " + Stories().string();
  const std::string data =
      "--data-dir " + Fixtures().string() + " --db " + (tmp.path() / "runs.sqlite").string();
  struct Case {
    std::string args;
    std::string message;
  };
  const fs::path existing = tmp.path() / "exists.jsonl";
  std::ofstream(existing) << "{}\n";
  const Case cases[] = {
      {"eval mmlu,nope " + model + " " + data,
       "unknown task 'nope' (known: gsm8k, mmlu, ifeval, hashhop, bfcl, humaneval, hellaswag, "
       "arc-easy, arc-challenge, piqa, winogrande; suites: capability, smoketest)"},
      {"eval smoketest --endpoint http://127.0.0.1:1 --reference-logits x " + data,
       "--reference-logits scores the local model"},
      {"eval mmlu " + data, "give exactly one of --model MODEL"},
      {"eval mmlu " + model + " --endpoint http://127.0.0.1:1 " + data, "give exactly one of"},
      {"eval mmlu --endpoint http://127.0.0.1:1 " + data, "cannot reach http://127.0.0.1:1"},
      {"eval mmlu --endpoint ftp://x " + data, "is not an http(s) URL"},
      {"eval mmlu " + model + " --no-db --data-dir " + tmp.path().string(), "no folder"},
      {"eval gsm8k " + model + " --no-db --data-dir " + tmp.path().string(), "cannot open"},
      {"eval gsm8k " + model + " " + data + " --no-db", "--db and --no-db contradict"},
      {"eval mmlu " + model + " " + data + " --outputs " + existing.string(),
       "exists: pass --resume"},
      {"eval mmlu " + model + " " + data + " --resume", "--resume needs --outputs FILE"},
      {"eval mmlu --model synthetic:tiny:f32 " + data, "has no tokenizer"},
      {"eval mmlu " + model + " " + data + " --kv affine:7", "affine"},
  };
  for (const Case& c : cases) {
    const Result r = Proctor(c.args);
    EXPECT_EQ(r.status, 1) << c.args << "\n" << r.out;
    EXPECT_TRUE(Contains(r.out, c.message)) << c.args << "\n" << r.out;
  }
  EXPECT_EQ(fs::file_size(existing), 3u);  // untouched
}

// The suites: smoketest = the KL against a teacher dump plus gsm8k on sampleIndices(1319, 50,
// 42); capability = gsm8k, mmlu, bfcl, humaneval, hashhop and the mean of their percentages, the
// weights' size beside it; both kept in the run database.
TEST(EvalVerb, SmoketestAndCapabilitySuites) {
  if (!HaveTaskData()) GTEST_SKIP() << "fixtures absent under " << Fixtures();
  TempDir tmp;
  const fs::path corpus = tmp.path() / "corpus", dump = tmp.path() / "dump";
  const fs::path db = tmp.path() / "runs.sqlite";
  Result r = Proctor(fmt::format("corpus --tokenizer {} --out {} --ctx-len 64 --n-seqs 3 {}",
                                 Stories().string(), corpus.string(),
                                 (Fixtures() / "tinystories" / "tinystories_sample.txt").string()));
  ASSERT_EQ(r.status, 0) << r.out;
  r = Proctor(fmt::format("dump --teacher {} --corpus {} --out {} --top-k 32", Stories().string(),
                          corpus.string(), dump.string()));
  ASSERT_EQ(r.status, 0) << r.out;
  r = Proctor(
      fmt::format("eval smoketest --model {} --data-dir {} --reference-logits {} --db {} "
                  "--json {} --outputs {}",
                  Stories().string(), Fixtures().string(), dump.string(), db.string(),
                  (tmp.path() / "smoke.json").string(), (tmp.path() / "smoke.jsonl").string()));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "KL mean")) << r.out;
  std::ifstream smoke_file(tmp.path() / "smoke.json");
  const nlohmann::json smoke = nlohmann::json::parse(smoke_file);
  // The model against its own dump: KL at the fp16 storage floor, top-1 all but exact.
  EXPECT_LT(smoke["results"]["kl"]["kl"]["mean"].get<double>(), 1e-3);
  ASSERT_EQ(smoke["results"]["tasks"].size(), 1u);
  EXPECT_EQ(smoke["results"]["tasks"][0]["task"], "gsm8k");
  EXPECT_EQ(smoke["results"]["tasks"][0]["n"], 50);
  // The items are sampleIndices(1319, 50, 42) (FORMATS.md section 5: it starts 2, 91, 134).
  const auto items = ReadOutputs(tmp.path() / "smoke.jsonl");
  EXPECT_TRUE(items.count("gsm8k/2") && items.count("gsm8k/91") && items.count("gsm8k/1313"));

  r = Proctor(fmt::format("eval capability --model {} --data-dir {} --n 4 --db {} --json {}",
                          Stories().string(), Fixtures().string(), db.string(),
                          (tmp.path() / "cap.json").string()));
  ASSERT_EQ(r.status, 0) << r.out;
  std::ifstream cap_file(tmp.path() / "cap.json");
  const nlohmann::json cap = nlohmann::json::parse(cap_file);
  double sum = 0;
  for (const auto& task : cap["results"]["tasks"]) sum += 100 * task["accuracy"].get<double>();
  ASSERT_EQ(cap["results"]["tasks"].size(), 6u);
  EXPECT_NEAR(cap["results"]["capability"]["score"].get<double>(), sum / 6, 1e-9);
  EXPECT_EQ(cap["results"]["capability"]["not_run"], nlohmann::json::array());
  EXPECT_TRUE(Contains(r.out, "capability: ")) << r.out;
  EXPECT_TRUE(Contains(r.out, "weights on disk 1.2 MB")) << r.out;
  const Result list = Proctor(fmt::format("runs --db {} list --json", db.string()));
  const nlohmann::json runs = nlohmann::json::parse(list.out);
  ASSERT_EQ(runs.size(), 7u);  // smoketest's gsm8k, then capability's six
  EXPECT_FALSE(runs[6]["kl"].is_null());
  EXPECT_TRUE(runs[6]["capability"].is_null());
  EXPECT_NEAR(runs[0]["capability"].get<double>(), sum / 6, 1e-9);
}

// A sharded eval (capability's six tasks and hellaswag: slices, tallies, acc_norm, a suite
// score) in 1, 2, 3 and 7 shards of 3 items per task merges into the unsharded run: every task's
// counts, accuracy, standard error, slices and tallies, the suite's score, the settings and
// inputs; the shards' items are the unsharded run's, record for record (a shard's items do not
// depend on the shard count); the merged run is recorded in the run database as the unsharded
// one is. A finished shard is kept on rerun; an interrupted one continues its items.
TEST(EvalVerb, ShardedEvalMergesToTheUnshardedRun) {
  if (!HaveTaskData()) GTEST_SKIP() << "fixtures absent under " << Fixtures();
  TempDir tmp;
  const std::string common = fmt::format("eval capability,hellaswag --model {} --n 3 --data-dir {}",
                                         Stories().string(), Fixtures().string());
  const fs::path whole_db = tmp.path() / "whole.sqlite";
  Result r = Proctor(fmt::format("{} --db {} --json {} --outputs {}", common, whole_db.string(),
                                 (tmp.path() / "whole.json").string(),
                                 (tmp.path() / "whole.jsonl").string()));
  ASSERT_EQ(r.status, 0) << r.out;
  const auto read_json = [](const fs::path& path) {
    std::ifstream in(path);
    return nlohmann::json::parse(in);
  };
  const nlohmann::json whole = read_json(tmp.path() / "whole.json");
  const auto whole_items = ReadOutputs(tmp.path() / "whole.jsonl");
  ASSERT_EQ(whole["results"]["tasks"].size(), 7u);
  // The run database's rows but for when they were made.
  const auto runs = [](const fs::path& db) {
    nlohmann::json rows =
        nlohmann::json::parse(Proctor(fmt::format("runs --db {} list --json", db.string())).out);
    for (auto& row : rows) {
      for (const char* key : {"id", "created"}) row.erase(key);
    }
    return rows;
  };
  for (int n : {1, 2, 3, 7}) {
    SCOPED_TRACE(fmt::format("{} shards", n));
    std::string parts;
    std::map<std::string, nlohmann::json> shard_items;
    for (int i = n - 1; i >= 0; --i) {
      const fs::path part = tmp.path() / fmt::format("eval{}-{}.json", n, i);
      r = Proctor(fmt::format("{} --shard {}/{} --json {}", common, i, n, part.string()));
      ASSERT_EQ(r.status, 0) << r.out;
      EXPECT_TRUE(Contains(r.out, fmt::format("Shard {}/{}: items kept", i, n))) << r.out;
      shard_items.merge(ReadOutputs(part.string() + ".outputs.jsonl"));
      parts.append(" ").append(part.string());
    }
    EXPECT_EQ(shard_items, whole_items);
    const fs::path db = tmp.path() / fmt::format("merged{}.sqlite", n);
    const fs::path merged_path = tmp.path() / fmt::format("merged{}.json", n);
    r = Proctor(fmt::format("merge {} {} --db {}", merged_path.string(), parts, db.string()));
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_TRUE(Contains(r.out, "capability: ")) << r.out;
    nlohmann::json merged = read_json(merged_path);
    EXPECT_EQ(merged["settings"], whole["settings"]);
    // The same file as the unsharded run writes, settings in its order.
    const auto in_file_order = [](const fs::path& path) {
      std::ifstream in(path);
      return nlohmann::ordered_json::parse(in)["settings"].dump();
    };
    EXPECT_EQ(in_file_order(merged_path), in_file_order(tmp.path() / "whole.json"));
    EXPECT_EQ(merged["inputs"], whole["inputs"]);
    EXPECT_EQ(merged["results"]["capability"], whole["results"]["capability"]);
    EXPECT_FALSE(merged["results"].contains("shard"));
    ASSERT_EQ(merged["results"]["tasks"].size(), 7u);
    for (size_t t = 0; t < 7; ++t) {
      nlohmann::json a = merged["results"]["tasks"][t], b = whole["results"]["tasks"][t];
      a.erase("seconds");
      b.erase("seconds");
      EXPECT_EQ(a, b) << b["task"];
    }
    EXPECT_EQ(runs(db), runs(whole_db));
  }
  // Rerun: a finished shard is kept. An interrupted one (its partial not yet written, its items
  // file cut after the first item) asks only the items it lacks.
  const fs::path part = tmp.path() / "eval3-1.json";
  r = Proctor(fmt::format("{} --shard 1/3 --json {}", common, part.string()));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "Shard 1/3 already done")) << r.out;
  const std::string items_file = part.string() + ".outputs.jsonl";
  {
    std::ifstream in(items_file);
    std::string header, first;
    std::getline(in, header);
    std::getline(in, first);
    in.close();
    std::ofstream out(items_file, std::ios::trunc);
    out << header << "\n" << first << "\n";
  }
  fs::remove(part);
  r = Proctor(fmt::format("{} --shard 1/3 --json {}", common, part.string()));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(read_json(part)["results"]["tasks"][0]["resumed"], 1);
  r = Proctor(fmt::format("merge {} {} {} {} --no-db", (tmp.path() / "again.json").string(),
                          (tmp.path() / "eval3-0.json").string(), part.string(),
                          (tmp.path() / "eval3-2.json").string()));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(read_json(tmp.path() / "again.json")["results"]["capability"],
            whole["results"]["capability"]);
  // Refused, nothing written: another run's shard, a shard missing, --shard without --json.
  r = Proctor(
      fmt::format("eval capability,hellaswag --model {} --n 4 --data-dir {} --shard 1/3 "
                  "--json {}",
                  Stories().string(), Fixtures().string(), (tmp.path() / "n4.json").string()));
  ASSERT_EQ(r.status, 0) << r.out;
  const fs::path out = tmp.path() / "refused.json";
  r = Proctor(fmt::format("merge {} {} {} {} --no-db", out.string(),
                          (tmp.path() / "eval3-0.json").string(), (tmp.path() / "n4.json").string(),
                          (tmp.path() / "eval3-2.json").string()));
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(Contains(r.out, "setting n: 4 vs 3")) << r.out;
  r = Proctor(fmt::format("merge {} {} {} --no-db", out.string(),
                          (tmp.path() / "eval3-0.json").string(),
                          (tmp.path() / "eval3-2.json").string()));
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(Contains(r.out, "missing")) << r.out;
  EXPECT_FALSE(fs::exists(out));
  r = Proctor(fmt::format("{} --shard 0/3", common));
  EXPECT_NE(r.status, 0);
  EXPECT_TRUE(Contains(r.out, "give --json FILE")) << r.out;
  r = Proctor(fmt::format("{} --shard 0/3 --json {} --outputs {}", common, out.string(),
                          (tmp.path() / "o.jsonl").string()));
  EXPECT_NE(r.status, 0);
  EXPECT_TRUE(Contains(r.out, "leave out --outputs")) << r.out;
}

// llama-server (greedy at temperature 0, F32 KV cache, one slot) and the local engine give the
// same GSM8K completions on stories260K through the raw-text prompt: the HTTP client against a
// real OpenAI-compatible server.
TEST(EvalVerb, LlamaServerAndTheEngineGiveTheSameGsm8kCompletions) {
  if (!HaveTaskData()) GTEST_SKIP() << "fixtures absent under " << Fixtures();
  if (const std::string problem = proctor::testing::OraclesProblem({"python", "llama.cpp"});
      !problem.empty()) {
    GTEST_SKIP() << "oracle unavailable: " << problem;
  }
  TempDir tmp;
  const int n = 12;
  const std::string task =
      fmt::format("eval gsm8k --n {} --data-dir {} --no-chat", n, Fixtures().string());
  const Result server = RunShell(fmt::format(
      "{} {}/tools/oracle/llama_server_run.py {} {} --ctx-size 2048 --parallel 1 --threads 2 "
      "--cache-type-k f32 --cache-type-v f32 --flash-attn off -- {} -q {} --endpoint {{url}} "
      "--outputs {} --db {} 2>&1",
      proctor::testing::Oracles("python").Path("python"), PROCTOR_SOURCE_DIR,
      proctor::testing::Oracles("llama.cpp").Path("llama_server"), Stories().string(), PROCTOR_BIN,
      task, (tmp.path() / "server.jsonl").string(), (tmp.path() / "runs.sqlite").string()));
  ASSERT_EQ(server.status, 0) << server.out;
  // The server's run is recorded: the endpoint as its model, nothing to hash.
  const Result runs =
      Proctor(fmt::format("runs --db {} list --json", (tmp.path() / "runs.sqlite").string()));
  ASSERT_EQ(runs.status, 0) << runs.out;
  const nlohmann::json recorded = nlohmann::json::parse(runs.out);
  ASSERT_EQ(recorded.size(), 1u);
  EXPECT_TRUE(recorded[0]["model"].get<std::string>().starts_with("http://127.0.0.1:"));
  EXPECT_EQ(recorded[0]["model_sha256"], "");
  EXPECT_TRUE(recorded[0]["disk_bytes"].is_null());
  EXPECT_EQ(recorded[0]["settings"]["client"]["kind"], "http");
  const Result local =
      Proctor(fmt::format("{} --no-db --model {} --outputs {}", task, Stories().string(),
                          (tmp.path() / "local.jsonl").string()));
  ASSERT_EQ(local.status, 0) << local.out;
  const auto theirs = ReadOutputs(tmp.path() / "server.jsonl");
  const auto mine = ReadOutputs(tmp.path() / "local.jsonl");
  ASSERT_EQ(theirs.size(), static_cast<size_t>(n));
  ASSERT_EQ(mine.size(), static_cast<size_t>(n));
  int same = 0;
  for (const auto& [id, row] : mine) {
    ASSERT_TRUE(theirs.count(id)) << id;
    EXPECT_EQ(row["completion"], theirs.at(id)["completion"]) << id;
    same += row["completion"] == theirs.at(id)["completion"] ? 1 : 0;
    EXPECT_EQ(theirs.at(id)["outcome"], row["outcome"]) << id;
  }
  std::printf("[ llama-server ] gsm8k: %d of %d greedy completions identical\n", same, n);
}

}  // namespace
}  // namespace proctor::cli_test
