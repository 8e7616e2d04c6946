// End-to-end tests of `proctor corpus` and `proctor ppl` (the built executable, PROCTOR_BIN) on
// stories260K and the TinyStories excerpt: outputs, --json files, errors, and that ppl over a
// corpus equals ppl over the text the corpus was cut from; sharded ppl, dump and kl runs merged.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_test_support.h"  // same folder: cli_test has no src/ include path

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using proctor::cli_test::Fixtures;

fs::path Stories260K() { return Fixtures() / "stories260K" / "stories260K.gguf"; }
fs::path TinyStories() { return Fixtures() / "tinystories" / "tinystories_sample.txt"; }

struct Result : proctor::cli_test::Result {
  std::string err;  // stderr (out: stdout only)
};

Result Proctor(const std::string& args) {
  const fs::path err = proctor::cli_test::TempPath("stderr");
  Result r{proctor::cli_test::RunShell(fmt::format("{} {} 2>{}", PROCTOR_BIN, args, err.string())),
           {}};
  std::ifstream in(err);
  r.err.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  fs::remove(err);
  return r;
}

json ReadJson(const fs::path& path) {
  std::ifstream in(path);
  return json::parse(in);
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// What a merged kl result must hold as the unsharded run's: the command, settings and inputs and
// every statistic of `results` (not the timings).
void ExpectKlMergeEqualsWhole(const json& merged, const json& whole) {
  EXPECT_EQ(merged["command"], "kl");
  EXPECT_EQ(merged["settings"], whole["settings"]);
  EXPECT_EQ(merged["inputs"], whole["inputs"]);
  for (const char* key : {"mode",
                          "label",
                          "candidate",
                          "reference",
                          "kl",
                          "tail_kl",
                          "top1_agreement",
                          "mean_captured_mass",
                          "min_captured_mass",
                          "candidate_mean_nll",
                          "candidate_ppl",
                          "teacher_mean_nll",
                          "teacher_nll_positions",
                          "positions",
                          "sequences",
                          "sequence_mean_kl",
                          "sequence_top1",
                          "sequence_mean_nll",
                          "candidate_vocab",
                          "chunk_size",
                          "where",
                          "floor"}) {
    EXPECT_EQ(merged["results"].contains(key), whole["results"].contains(key)) << key;
    if (whole["results"].contains(key)) {
      EXPECT_EQ(merged["results"][key], whole["results"][key]) << key;
    }
  }
  EXPECT_FALSE(merged["results"].contains("shard"));
}

class CorpusPplVerbs : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(Stories260K()) || !fs::exists(TinyStories())) {
      GTEST_SKIP() << "fixtures absent: " << Stories260K() << " / " << TinyStories();
    }
    static std::random_device rd;
    dir_ = fs::temp_directory_path() / fmt::format("proctor-corpus-ppl-{}", rd());
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  fs::path dir_;
};

TEST_F(CorpusPplVerbs, CorpusWritesTokensManifestAndJsonSummary) {
  const Result r =
      Proctor(fmt::format("corpus --tokenizer {} --out {} --ctx-len 64 --n-seqs 4 "
                          "--seed 5 --json {} {}",
                          Stories260K().string(), (dir_ / "c").string(), (dir_ / "c.json").string(),
                          TinyStories().string()));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("4 sequences x 64 tokens"), std::string::npos) << r.out;
  const json envelope = ReadJson(dir_ / "c.json");
  const json& summary = envelope["results"];
  const json manifest = ReadJson(dir_ / "c" / "manifest.json");
  EXPECT_EQ(envelope["schema"], "proctor-results");
  EXPECT_EQ(envelope["command"], "corpus");
  EXPECT_EQ(envelope["settings"]["ctx_len"], 64);
  EXPECT_EQ(fs::file_size(dir_ / "c" / "tokens.bin"), 4u * 64 * 4);
  EXPECT_EQ(summary["tokens_sha256"], manifest["tokens_sha256"]);
  EXPECT_EQ(envelope["outputs"][0]["tokens_sha256"], manifest["tokens_sha256"]);
  EXPECT_EQ(summary["n_tokens"], 256);
  EXPECT_EQ(summary["rows_used"], 1);
  EXPECT_EQ(manifest["seed"], 5);
  EXPECT_EQ(manifest["sources"][0]["path"], TinyStories().string());
  EXPECT_EQ(manifest["tokenizer_sha256"].get<std::string>().size(), 64u);
  EXPECT_EQ(manifest["bos_id"], 1);
  EXPECT_EQ(manifest["eos_id"], 2);
  // The inputs: the tokenizer (the .gguf) and the text, each with its sha256.
  ASSERT_EQ(envelope["inputs"].size(), 2u);
  EXPECT_EQ(envelope["inputs"][0]["role"], "tokenizer");
  EXPECT_EQ(envelope["inputs"][1]["role"], "input");
  EXPECT_EQ(envelope["inputs"][1]["sha256"], manifest["sources"][0]["sha256"]);
}

TEST_F(CorpusPplVerbs, CorpusErrorsSayWhatIsWrong) {
  Result r =
      Proctor(fmt::format("corpus --tokenizer {} --out {} --ctx-len 512 --n-seqs 100 {}",
                          Stories260K().string(), (dir_ / "c").string(), TinyStories().string()));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("[corpus] not enough text: --n-seqs 100 x --ctx-len 512 needs 51200 "
                       "tokens, but the 1 row(s) of the inputs gave"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "c" / "manifest.json"));
  std::ofstream(dir_ / "bad.jsonl") << "{\"text\": \"ok\"}\n{\"text\": \"ok\"\n";
  r = Proctor(fmt::format("corpus --tokenizer {} --out {} --ctx-len 4 --n-seqs 1 {}",
                          Stories260K().string(), (dir_ / "c").string(),
                          (dir_ / "bad.jsonl").string()));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find(fmt::format("'{}' line 2: not valid JSON", (dir_ / "bad.jsonl").string())),
            std::string::npos)
      << r.err;
}

// ppl over text and ppl over a corpus cut from the same text with the same seed score the same
// rows, so they agree exactly; --batch-size changes nothing; mlx_lm's flag names still work.
TEST_F(CorpusPplVerbs, PplOnTextEqualsPplOnTheCorpusOfThatTextAndIgnoresBatchSize) {
  const std::string model = Stories260K().string();
  Result r =
      Proctor(fmt::format("-q ppl {} --data {} --ctx-len 128 --n-seqs 6 "
                          "--batch-size 4 --json {}",
                          model, TinyStories().string(), (dir_ / "text.json").string()));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("Perplexity: "), std::string::npos) << r.out;
  const json text_envelope = ReadJson(dir_ / "text.json");
  const json& text = text_envelope["results"];
  EXPECT_EQ(text_envelope["command"], "ppl");
  EXPECT_EQ(text["rows"], 6);
  EXPECT_EQ(text["positions"], 6 * 127);
  EXPECT_EQ(text_envelope["settings"]["sequence_length"], 128);
  EXPECT_EQ(text_envelope["settings"]["batch_size"], 4);
  EXPECT_EQ(text["data"][0]["kind"], "text");
  ASSERT_EQ(text_envelope["inputs"].size(), 2u);
  EXPECT_EQ(text_envelope["inputs"][0]["role"], "model");
  EXPECT_EQ(text_envelope["inputs"][1]["role"], "data");
  EXPECT_EQ(text_envelope["inputs"][1]["sha256"], text["data"][0]["sha256"]);
  EXPECT_GT(text_envelope["threads"].get<int>(), 0);
  EXPECT_TRUE(text_envelope.contains("proctor_version"));
  EXPECT_GT(text_envelope["timings"]["forward_seconds"].get<double>(), 0.0);
  EXPECT_GT(text["ppl"].get<double>(), 1.5);
  EXPECT_LT(text["ppl"].get<double>(), 30.0);

  // mlx_lm's spellings (the old ones) still work, with a note.
  r =
      Proctor(fmt::format("ppl {} --data {} --sequence-length 128 --num-samples 6 "
                          "--batch-size 1 --json {}",
                          model, TinyStories().string(), (dir_ / "batch1.json").string()));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(ReadJson(dir_ / "batch1.json")["results"]["ppl"], text["ppl"]);
  EXPECT_NE(r.err.find("note: --sequence-length is now --ctx-len (same meaning)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("note: --num-samples is now --n-seqs"), std::string::npos) << r.err;
  r = Proctor(fmt::format("ppl {} --data {} --sequence-length 128 --ctx-len 128", model,
                          TinyStories().string()));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("--sequence-length and --ctx-len are the same option"), std::string::npos)
      << r.err;

  r = Proctor(fmt::format("-q corpus --tokenizer {} --out {} --ctx-len 128 --n-seqs 6 {}", model,
                          (dir_ / "c").string(), TinyStories().string()));
  ASSERT_EQ(r.status, 0) << r.err;
  r = Proctor(fmt::format("-q ppl {} --data {} --json {}", model, (dir_ / "c").string(),
                          (dir_ / "corpus.json").string()));
  ASSERT_EQ(r.status, 0) << r.err;
  const json corpus = ReadJson(dir_ / "corpus.json")["results"];
  EXPECT_EQ(corpus["data"][0]["kind"], "corpus");
  EXPECT_EQ(corpus["rows_sha256"], text["rows_sha256"]);
  EXPECT_EQ(corpus["ppl"], text["ppl"]);
  EXPECT_EQ(corpus["standard_error"], text["standard_error"]);
}

// A corpus records its tokenizer's fingerprint; ppl (like dump and kl) refuses a model whose
// tokenizer differs.
TEST_F(CorpusPplVerbs, PplOnACorpusOfAnotherTokenizerIsAnError) {
  const std::string model = Stories260K().string();
  Result r = Proctor(fmt::format("-q corpus --tokenizer {} --out {} --ctx-len 32 --n-seqs 2 {}",
                                 model, (dir_ / "c").string(), TinyStories().string()));
  ASSERT_EQ(r.status, 0) << r.err;
  json manifest = ReadJson(dir_ / "c" / "manifest.json");
  manifest["tokenizer_sha256"] = std::string(64, '0');
  std::ofstream(dir_ / "c" / "manifest.json") << manifest.dump(2);
  r = Proctor(fmt::format("-q ppl {} --data {}", model, (dir_ / "c").string()));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("tokenizer"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(std::string(64, '0')), std::string::npos) << r.err;
}

TEST_F(CorpusPplVerbs, PplErrors) {
  Result r = Proctor(fmt::format("ppl {} --data {} --ctx-len 100000", Stories260K().string(),
                                 TinyStories().string()));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("[ppl] not enough text: one row of --ctx-len 100000 needs 100000 "
                       "tokens"),
            std::string::npos)
      << r.err;
  r = Proctor(
      fmt::format("ppl {} --data {} --n-seqs 0", Stories260K().string(), TinyStories().string()));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("--n-seqs must be positive or -1"), std::string::npos) << r.err;
}

// Sharded ppl (--shard I/N) merged by `proctor merge` gives the unsharded run's statistics bit for
// bit, for 1, 2, 3, 7 and 13 shards of 10 rows (13: some shards have no rows); each shard's rows
// score as they do in the whole run (a shard does not depend on the shard count); a finished
// shard is not scored again.
TEST_F(CorpusPplVerbs, ShardedPplMergesToTheUnshardedStatistics) {
  const std::string common = fmt::format("-q ppl {} --data {} --ctx-len 64 --n-seqs 10 --chunk 16",
                                         Stories260K().string(), TinyStories().string());
  Result r = Proctor(fmt::format("{} --json {}", common, (dir_ / "full.json").string()));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const json full = ReadJson(dir_ / "full.json");
  ASSERT_EQ(full["results"]["rows"], 10);
  for (int n : {1, 2, 3, 7, 13}) {
    SCOPED_TRACE(fmt::format("{} shards", n));
    std::string parts;
    for (int i = n - 1; i >= 0; --i) {  // any order
      const fs::path part = dir_ / fmt::format("part{}-{}.json", n, i);
      r = Proctor(fmt::format("{} --shard {}/{} --json {}", common, i, n, part.string()));
      ASSERT_EQ(r.status, 0) << r.out << r.err;
      parts += " " + part.string();
      const json partial = ReadJson(part)["results"];
      const int64_t first = partial["shard"]["rows"][0], end = partial["shard"]["rows"][1];
      EXPECT_EQ(first, i * 10 / n);
      EXPECT_EQ(end, (i + 1) * 10 / n);
      for (int64_t row = first; row < end; ++row) {
        ASSERT_EQ(partial["row_mean_nll"][row - first], full["results"]["row_mean_nll"][row]);
      }
    }
    const fs::path merged_path = dir_ / fmt::format("merged{}.json", n);
    r = Proctor(fmt::format("merge {}{}", merged_path.string(), parts));
    ASSERT_EQ(r.status, 0) << r.out << r.err;
    EXPECT_NE(r.out.find(fmt::format("Merged {} shards of 10 rows", n)), std::string::npos)
        << r.out;
    const json merged = ReadJson(merged_path);
    EXPECT_EQ(merged["command"], "ppl");
    EXPECT_EQ(merged["settings"], full["settings"]);
    for (const char* key : {"model", "tokenizer", "data", "rows_available", "data_rows_used",
                            "rows_sha256", "rows", "positions", "ppl", "standard_error",
                            "standard_error_rows", "mean_nll", "nll_std", "row_mean_nll"}) {
      EXPECT_EQ(merged["results"][key], full["results"][key]) << key;
    }
    EXPECT_FALSE(merged["results"].contains("shard"));
    EXPECT_FALSE(merged["results"].contains("nlls"));
  }
  // Rerun: the finished shard is read back, its file untouched.
  const fs::path done = dir_ / "part3-1.json";
  const std::string before = ReadJson(done).dump();
  r = Proctor(fmt::format("{} --shard 1/3 --json {}", common, done.string()));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("Shard 1/3 (rows [3, 6) of 10) already done"), std::string::npos) << r.out;
  EXPECT_EQ(ReadJson(done).dump(), before);
}

// Partials that do not make one run are refused, naming the file, and nothing is written.
TEST_F(CorpusPplVerbs, MergeRefusesPartialsThatAreNotOneRun) {
  const std::string common = fmt::format("-q ppl {} --data {} --ctx-len 64 --n-seqs 6",
                                         Stories260K().string(), TinyStories().string());
  const auto part = [&](const std::string& name) { return (dir_ / name).string(); };
  for (const auto& [shard, name, extra] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"0/3", "a0", ""},
           {"1/3", "a1", ""},
           {"2/3", "a2", ""},
           {"1/3", "seed", " --seed 5"},
           {"1/3", "chunk", " --chunk 32"},
           {"1/2", "two", ""}}) {
    const Result r =
        Proctor(fmt::format("{}{} --shard {} --json {}", common, extra, shard, part(name)));
    ASSERT_EQ(r.status, 0) << name << r.out << r.err;
  }
  const Result whole = Proctor(fmt::format("{} --json {}", common, part("whole")));
  ASSERT_EQ(whole.status, 0) << whole.err;
  std::ofstream(part("truncated")) << ReadJson(part("a2")).dump().substr(0, 200);
  const auto refused = [&](const std::string& partials, const std::string& expected) {
    const Result r = Proctor(fmt::format("merge {} {}", part("out"), partials));
    EXPECT_EQ(r.status, 1) << partials;
    EXPECT_NE(r.err.find(expected), std::string::npos) << partials << "\n" << r.err;
    EXPECT_FALSE(fs::exists(part("out")));
  };
  const std::string a0 = part("a0"), a1 = part("a1"), a2 = part("a2");
  refused(a0 + " " + a2, "shard(s) 1/3 missing: 2 of 3 given");
  refused(a0 + " " + a1 + " " + a1 + " " + a2,
          fmt::format("shard 1/3 is given twice: '{}' and '{}'", a1, a1));
  refused(
      a0 + " " + part("seed") + " " + a2,
      fmt::format("'{}' is from another run than '{}': setting seed: 5 vs 123", part("seed"), a0));
  refused(a0 + " " + part("chunk") + " " + a2,
          fmt::format("'{}' is from another run than '{}': setting chunk_size: 32 vs 512",
                      part("chunk"), a0));
  refused(a0 + " " + part("two"),
          fmt::format("'{}' is shard 1/2 but '{}' is shard 0/3", part("two"), a0));
  refused(a0 + " " + a1 + " " + part("truncated"),
          fmt::format("{}: not valid JSON", part("truncated")));
  refused(a0 + " " + part("whole"), fmt::format("'{}' is not a partial ppl result", part("whole")));
  refused(part("missing") + " " + a0, fmt::format("cannot open '{}'", part("missing")));
  const Result same = Proctor(fmt::format("merge {} {}", a0, a0));
  EXPECT_EQ(same.status, 1);
  EXPECT_NE(same.err.find("is also given as a partial result"), std::string::npos) << same.err;
  const Result bad_flag = Proctor(fmt::format("{} --shard 3/3 --json {}", common, part("x")));
  EXPECT_EQ(bad_flag.status, 1);
  EXPECT_NE(bad_flag.err.find("--shard '3/3': I must be in 0 .. N-1"), std::string::npos)
      << bad_flag.err;
  const Result no_json = Proctor(fmt::format("{} --shard 0/3", common));
  EXPECT_NE(no_json.status, 0);
  EXPECT_NE(no_json.err.find("--json"), std::string::npos) << no_json.err;
}

// A dump in 3 shards (any order) merges into the unsharded dump: every sequence file and
// tokens.bin byte for byte, the manifest but for its `created`, the floor number for number.
TEST_F(CorpusPplVerbs, ShardedDumpMergesToTheUnshardedDump) {
  const fs::path corpus = dir_ / "corpus";
  Result r = Proctor(fmt::format("-q corpus --tokenizer {} --out {} --ctx-len 32 --n-seqs 5 {}",
                                 Stories260K().string(), corpus.string(), TinyStories().string()));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const std::string common = fmt::format("-q dump --teacher {} --corpus {} --top-k 16 --chunk 8",
                                         Stories260K().string(), corpus.string());
  const fs::path dump = dir_ / "dump";
  r = Proctor(fmt::format("{} --out {}", common, dump.string()));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  fs::rename(dump, dir_ / "whole");  // the merge writes to the same path (floor.json names it)
  std::string parts;
  for (int i = 2; i >= 0; --i) {
    const fs::path part = dir_ / fmt::format("part{}", i);
    r = Proctor(fmt::format("{} --out {} --shard {}/3", common, part.string(), i));
    ASSERT_EQ(r.status, 0) << r.out << r.err;
    EXPECT_NE(r.out.find(fmt::format("Shard {}/3: sequences [{}, {}) of 5", i, i * 5 / 3,
                                     (i + 1) * 5 / 3)),
              std::string::npos)
        << r.out;
    parts.append(" ").append(part.string());
  }
  r = Proctor(fmt::format("{} --out {} --shard 1/3", common, (dir_ / "part1").string()));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("Shard 1/3 (sequences [1, 3) of 5) already done"), std::string::npos)
      << r.out;
  r = Proctor(fmt::format("merge {}{}", dump.string(), parts));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("Merged 3 dump shards: 5 sequences, 155 positions"), std::string::npos)
      << r.out;
  for (const char* name :
       {"tokens.bin", "seq-0.bin", "seq-1.bin", "seq-2.bin", "seq-3.bin", "seq-4.bin"}) {
    EXPECT_TRUE(ReadFile(dump / name) == ReadFile(dir_ / "whole" / name)) << name;
  }
  json merged = ReadJson(dump / "manifest.json");
  json whole = ReadJson(dir_ / "whole" / "manifest.json");
  merged.erase("created");
  whole.erase("created");
  EXPECT_EQ(merged, whole);
  EXPECT_EQ(ReadJson(dump / "floor.json")["floor"],
            ReadJson(dir_ / "whole" / "floor.json")["floor"]);
  // Shard flags that do not go together are refused before anything is written.
  r = Proctor(fmt::format("{} --out {} --shard 0/3 --seq-end 2", common, (dir_ / "x").string()));
  EXPECT_NE(r.status, 0);
  EXPECT_FALSE(fs::exists(dir_ / "x"));
  r = Proctor(fmt::format("{} --out {} --shard 3/3", common, (dir_ / "x").string()));
  EXPECT_NE(r.status, 0);
  EXPECT_FALSE(fs::exists(dir_ / "x"));
}

// A saved-teacher kl run in 1, 2, 3 and 7 shards of 5 sequences merges into the unsharded run's
// results: every statistic, the per-sequence values, where the KL lives and the floor pairing.
TEST_F(CorpusPplVerbs, ShardedKlMergesToTheUnshardedStatistics) {
  const fs::path corpus = dir_ / "corpus", dump = dir_ / "dump";
  Result r = Proctor(fmt::format("-q corpus --tokenizer {} --out {} --ctx-len 32 --n-seqs 5 {}",
                                 Stories260K().string(), corpus.string(), TinyStories().string()));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  r = Proctor(fmt::format("-q dump --teacher {} --corpus {} --out {} --top-k 16 --chunk 8",
                          Stories260K().string(), corpus.string(), dump.string()));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  // The candidate: the teacher with a bf16 forward, so the KL is not zero.
  const std::string common = fmt::format(
      "-q kl --reference-logits {} --candidate {} --chunk 8 "
      "--compute bf16",
      dump.string(), Stories260K().string());
  r = Proctor(fmt::format("{} --json {}", common, (dir_ / "whole.json").string()));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const json whole = ReadJson(dir_ / "whole.json");
  ASSERT_GT(whole["results"]["kl"]["max"].get<double>(), 0.0);
  ASSERT_TRUE(whole["results"].contains("floor"));
  for (int n : {1, 2, 3, 7}) {
    SCOPED_TRACE(fmt::format("{} shards", n));
    std::string parts;
    for (int i = n - 1; i >= 0; --i) {
      const fs::path part = dir_ / fmt::format("kl{}-{}.json", n, i);
      r = Proctor(fmt::format("{} --shard {}/{} --json {}", common, i, n, part.string()));
      ASSERT_EQ(r.status, 0) << r.out << r.err;
      EXPECT_TRUE(fs::exists(part.string() + ".positions"));
      parts.append(" ").append(part.string());
    }
    const fs::path merged_path = dir_ / fmt::format("kl-merged{}.json", n);
    r = Proctor(fmt::format("merge {}{}", merged_path.string(), parts));
    ASSERT_EQ(r.status, 0) << r.out << r.err;
    ExpectKlMergeEqualsWhole(ReadJson(merged_path), whole);
  }
  // Rerun: a finished shard is kept; a changed per-position file is refused by the merge.
  const fs::path part = dir_ / "kl3-1.json";
  r = Proctor(fmt::format("{} --shard 1/3 --json {}", common, part.string()));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("Shard 1/3 already done"), std::string::npos) << r.out;
  {
    std::ofstream positions(part.string() + ".positions", std::ios::app);
    positions << "x";
  }
  r = Proctor(fmt::format("merge {} {} {} {}", (dir_ / "out.json").string(),
                          (dir_ / "kl3-0.json").string(), part.string(),
                          (dir_ / "kl3-2.json").string()));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("changed after"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "out.json"));
  // Other settings are another run; --shard needs --json.
  r =
      Proctor(fmt::format("-q kl --reference-logits {} --candidate {} --chunk 16 --compute bf16 "
                          "--shard 1/3 --json {}",
                          dump.string(), Stories260K().string(), (dir_ / "chunk.json").string()));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  r = Proctor(fmt::format("merge {} {} {} {}", (dir_ / "out.json").string(),
                          (dir_ / "kl3-0.json").string(), (dir_ / "chunk.json").string(),
                          (dir_ / "kl3-2.json").string()));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("setting chunk_size: 16 vs 8"), std::string::npos) << r.err;
  r = Proctor(fmt::format("{} --shard 0/3", common));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("give --json FILE"), std::string::npos) << r.err;
}

// Every resident-reference kl mode in 1, 2, 3 and 7 shards merges into the unsharded run's
// results, every statistic bit for bit: two models, a self A/B of the forward's precision, a KV
// arm on the decode path over a corpus, and over prompts of their own lengths (5 sequences or
// prompts, so 7 shards leave some empty). Each shard's sequences score as they do in the whole
// run; a finished shard is kept on rerun.
TEST_F(CorpusPplVerbs, ShardedKlOfEveryResidentModeMergesToTheUnshardedStatistics) {
  const fs::path corpus = dir_ / "corpus", prompts = dir_ / "prompts.jsonl";
  Result r = Proctor(fmt::format("-q corpus --tokenizer {} --out {} --ctx-len 24 --n-seqs 5 {}",
                                 Stories260K().string(), corpus.string(), TinyStories().string()));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  {
    // Six prompts of their own lengths; the third is too short for 4 decode steps and is skipped.
    std::ofstream out(prompts);
    for (const char* text :
         {"Once upon a time there was a little boy named Ben. Ben loved to explore.",
          "He said, \"Wow, that is a really amazing vase! Can I buy it?\"", "Hi.",
          "The shopkeeper smiled and said, of course you can.",
          "So Ben took the vase home and he was so proud of it! He called his friends over.",
          "One day, Ben was walking through the store when he came across a very special vase."}) {
      out << json({{"text", text}}).dump() << "\n";
    }
  }
  const std::string model = Stories260K().string();
  const std::vector<std::pair<std::string, std::string>> modes = {
      {"two-model", fmt::format("-q kl --reference {} --candidate {} --corpus {} --compute bf16 "
                                "--reference-compute f32 --chunk 8",
                                model, model, corpus.string())},
      {"self", fmt::format("-q kl --candidate {} --corpus {} --self compute=f32:bf16 --chunk 8",
                           model, corpus.string())},
      {"kv-arm decode", fmt::format("-q kl --candidate {} --corpus {} --kv-arm bf16 "
                                    "--decode-steps 6 --chunk 8",
                                    model, corpus.string())},
      {"prompts", fmt::format("-q kl --candidate {} --prompts {} --kv-arm bf16 "
                              "--decode-steps 4 --chunk 8",
                              model, prompts.string())},
  };
  for (const auto& [mode, common] : modes) {
    SCOPED_TRACE(mode);
    const fs::path whole_path = dir_ / fmt::format("{}-whole.json", mode);
    r = Proctor(fmt::format("{} --json '{}'", common, whole_path.string()));
    ASSERT_EQ(r.status, 0) << r.out << r.err;
    const json whole = ReadJson(whole_path);
    ASSERT_GT(whole["results"]["kl"]["max"].get<double>(), 0.0);
    const json& per_sequence = whole["results"]["sequence_mean_kl"];
    ASSERT_EQ(per_sequence.size(), 5U);
    for (int n : {1, 2, 3, 7}) {
      SCOPED_TRACE(fmt::format("{} shards", n));
      std::string parts;
      for (int i = n - 1; i >= 0; --i) {
        const fs::path part = dir_ / fmt::format("{}-{}-{}.json", mode, n, i);
        r = Proctor(fmt::format("{} --shard {}/{} --json '{}'", common, i, n, part.string()));
        ASSERT_EQ(r.status, 0) << r.out << r.err;
        // The shard's sequences score as they do in the whole run.
        const json partial = ReadJson(part)["results"];
        const int64_t first = partial["shard"]["seqs"][0], end = partial["shard"]["seqs"][1];
        EXPECT_EQ(first, i * 5 / n);
        EXPECT_EQ(end, (i + 1) * 5 / n);
        EXPECT_EQ(partial["sequence_mean_kl"], json(std::vector<json>(per_sequence.begin() + first,
                                                                      per_sequence.begin() + end)));
        parts.append(fmt::format(" '{}'", part.string()));
      }
      const fs::path merged_path = dir_ / fmt::format("{}-merged{}.json", mode, n);
      r = Proctor(fmt::format("merge '{}'{}", merged_path.string(), parts));
      ASSERT_EQ(r.status, 0) << r.out << r.err;
      ExpectKlMergeEqualsWhole(ReadJson(merged_path), whole);
      EXPECT_FALSE(whole["results"].contains("floor"));
      // Settings in the unsharded file's order.
      const auto in_file_order = [](const fs::path& path) {
        std::ifstream in(path);
        return nlohmann::ordered_json::parse(in)["settings"].dump();
      };
      EXPECT_EQ(in_file_order(merged_path), in_file_order(whole_path));
    }
    // Rerun: the finished shard is kept; the same shard of another run is scored again.
    const fs::path part = dir_ / fmt::format("{}-3-1.json", mode);
    r = Proctor(fmt::format("{} --shard 1/3 --json '{}'", common, part.string()));
    ASSERT_EQ(r.status, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("Shard 1/3 already done"), std::string::npos) << r.out;
    r = Proctor(fmt::format("{} --n-seqs 4 --shard 1/3 --json '{}'", common, part.string()));
    ASSERT_EQ(r.status, 0) << r.out << r.err;
    EXPECT_EQ(r.out.find("already done"), std::string::npos) << r.out;
  }
  EXPECT_EQ(ReadJson(dir_ / "prompts-whole.json")["settings"]["prompts"]["scored"], 5);
  EXPECT_EQ(ReadJson(dir_ / "self-whole.json")["settings"]["self"], "compute=f32:bf16");
}

}  // namespace
