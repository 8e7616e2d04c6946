// `proctor compare` end to end on stories260K and the TinyStories excerpt: its rows equal the
// separate corpus / dump / kl / ppl runs' numbers exactly, a run killed mid-way and rerun gives
// the uninterrupted run's statistics, and bad arguments are refused before anything is created.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_test_support.h"  // same folder: cli_test has no src/ include path

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using proctor::cli_test::Fixtures;
using proctor::cli_test::Proctor;
using proctor::cli_test::Result;
using proctor::cli_test::RunShell;
using proctor::cli_test::TempDir;

fs::path Stories260K() { return Fixtures() / "stories260K" / "stories260K.gguf"; }
fs::path TinyStories() { return Fixtures() / "tinystories" / "tinystories_sample.txt"; }

json ReadJson(const fs::path& path) {
  std::ifstream in(path);
  return json::parse(in);
}

std::string ReadBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The statistics of a kl result (no paths, names or timings).
json KlStatistics(const json& kl) {
  json out;
  for (const char* key :
       {"kl", "tail_kl", "top1_agreement", "mean_captured_mass", "min_captured_mass", "positions",
        "sequences", "sequence_mean_kl", "sequence_top1", "sequence_mean_nll"}) {
    out[key] = kl.at(key);
  }
  return out;
}

// Every row's statistics of a compare results file, by candidate.
json CompareStatistics(const json& envelope) {
  json out;
  for (const json& row : envelope.at("results").at("candidates")) {
    out[row.at("candidate").get<std::string>()] = {{"kl", KlStatistics(row.at("kl"))},
                                                   {"perplexity", row.at("perplexity")},
                                                   {"bits_per_weight", row["bits_per_weight"]}};
  }
  return out;
}

// The rows of a CSV file without quoted fields, by column name.
std::vector<std::map<std::string, std::string>> CsvRows(const std::string& csv) {
  auto split = [](const std::string& line) {
    std::vector<std::string> fields;
    size_t start = 0;
    for (size_t comma; (comma = line.find(',', start)) != std::string::npos; start = comma + 1) {
      fields.push_back(line.substr(start, comma - start));
    }
    fields.push_back(line.substr(start));
    return fields;
  };
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> header = split(line);
  std::vector<std::map<std::string, std::string>> rows;
  while (std::getline(in, line)) {
    const std::vector<std::string> fields = split(line);
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < header.size() && i < fields.size(); ++i) row[header[i]] = fields[i];
    rows.push_back(row);
  }
  return rows;
}

class CompareVerb : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(Stories260K()) || !fs::exists(TinyStories())) {
      GTEST_SKIP() << "fixtures absent: " << Stories260K() << " / " << TinyStories();
    }
  }
  std::string Study(const fs::path& out, const std::string& extra = "", int n_seqs = 8,
                    int top_k = 64, const fs::path& data = TinyStories()) const {
    return fmt::format(
        "compare --teacher {} --data {} --candidate {} --quantize affine4-g64 --ctx-len 64 "
        "--n-seqs {} --top-k {} --chunk 32 --out {} {}",
        Stories260K().string(), data.string(), (dir_.path() / "q8").string(), n_seqs, top_k,
        out.string(), extra);
  }
  TempDir dir_;
};

TEST_F(CompareVerb, RowsEqualTheSeparateCorpusDumpKlAndPplRuns) {
  const fs::path d = dir_.path();
  Result r = Proctor(
      fmt::format("quantize {} --out {} --bits 8", Stories260K().string(), (d / "q8").string()));
  ASSERT_EQ(r.status, 0) << r.out;
  r = Proctor(Study(d / "study", fmt::format("--json {} --md {} --csv {}", (d / "c.json").string(),
                                             (d / "c.md").string(), (d / "c.csv").string())));
  ASSERT_EQ(r.status, 0) << r.out;
  std::printf("%s", r.out.c_str());
  const std::string table = r.out;
  const json envelope = ReadJson(d / "c.json");
  EXPECT_EQ(envelope["command"], "compare");
  EXPECT_EQ(ReadJson(d / "study" / "compare.json")["results"], envelope["results"]);
  const json& rows = envelope["results"]["candidates"];
  ASSERT_EQ(rows.size(), 3u);
  // The teacher first, then by bits per weight.
  EXPECT_EQ(rows[0]["kind"], "teacher");
  EXPECT_EQ(rows[1]["candidate"], "q8");
  EXPECT_EQ(rows[2]["candidate"], "affine4-g64");
  EXPECT_GT(rows[1]["bits_per_weight"].get<double>(), rows[2]["bits_per_weight"].get<double>());

  // The same steps one by one.
  r = Proctor(fmt::format("corpus --tokenizer {} --out {} --ctx-len 64 --n-seqs 8 {}",
                          Stories260K().string(), (d / "corpus").string(), TinyStories().string()));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(ReadJson(d / "corpus" / "manifest.json")["tokens_sha256"],
            envelope["results"]["corpus"]["tokens_sha256"]);
  r = Proctor(fmt::format("dump --teacher {} --corpus {} --out {} --top-k 64 --chunk 32",
                          Stories260K().string(), (d / "corpus").string(), (d / "dump").string()));
  ASSERT_EQ(r.status, 0) << r.out;
  for (const char* file : {"tokens.bin", "seq-0.bin", "seq-7.bin"}) {
    EXPECT_EQ(ReadBytes(d / "dump" / file), ReadBytes(d / "study" / "dump" / file)) << file;
  }
  // Both manifests name the teacher's exact weights: sha256sum's digest of the .gguf.
  const Result sum = RunShell("sha256sum " + Stories260K().string());
  ASSERT_EQ(sum.status, 0);
  const std::string digest = sum.out.substr(0, 64);
  EXPECT_EQ(ReadJson(d / "dump" / "manifest.json")["model_sha256"], digest);
  EXPECT_EQ(ReadJson(d / "study" / "dump" / "manifest.json")["model_sha256"], digest);
  EXPECT_EQ(envelope["results"]["teacher"]["sha256"], digest);
  const std::string models[] = {Stories260K().string(), (d / "q8").string(),
                                (d / "study" / "candidates" / "affine4-g64").string()};
  for (size_t i = 0; i < 3; ++i) {
    const fs::path kl = d / fmt::format("kl{}.json", i), ppl = d / fmt::format("ppl{}.json", i);
    const fs::path positions = d / fmt::format("kl{}.positions", i);
    r =
        Proctor(fmt::format("kl --reference-logits {} --model {} --chunk 32 --json {} "
                            "--per-position {}",
                            (d / "dump").string(), models[i], kl.string(), positions.string()));
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(KlStatistics(ReadJson(kl)["results"]), KlStatistics(rows[i]["kl"])) << models[i];
    // The teacher's row comes from the floor its dump scored: the same per-position bytes.
    EXPECT_EQ(ReadBytes(positions),
              ReadBytes(d / "study" / rows[i]["per_position"].get<std::string>()))
        << models[i];
    r = Proctor(fmt::format("ppl {} --data {} --n-seqs -1 --chunk 32 --json {}", models[i],
                            (d / "corpus").string(), ppl.string()));
    ASSERT_EQ(r.status, 0) << r.out;
    const json p = ReadJson(ppl)["results"];
    EXPECT_EQ(p["ppl"], rows[i]["perplexity"]["perplexity"]) << models[i];
    EXPECT_EQ(p["standard_error"], rows[i]["perplexity"]["standard_error"]) << models[i];
    EXPECT_EQ(p["positions"], rows[i]["perplexity"]["positions"]) << models[i];
  }
  // The paired column is kl-diff's numbers for each row and the row above; 8-bit against
  // 4-bit is distinguishable.
  const std::vector<std::map<std::string, std::string>> csv_rows = CsvRows(ReadBytes(d / "c.csv"));
  ASSERT_EQ(csv_rows.size(), 3u);
  EXPECT_EQ(csv_rows[0].at("verdict"), "floor");
  EXPECT_EQ(csv_rows[0].at("kl_difference_vs_above"), "");
  EXPECT_EQ(csv_rows[0].at("top1_difference_vs_above"), "");
  EXPECT_TRUE(rows[0]["vs_above"].is_null());
  for (size_t i = 1; i < 3; ++i) {
    const fs::path diff = d / fmt::format("diff{}.json", i);
    r = Proctor(fmt::format("kl-diff {} {} --json {}",
                            (d / fmt::format("kl{}.json", i - 1)).string(),
                            (d / fmt::format("kl{}.json", i)).string(), diff.string()));
    ASSERT_EQ(r.status, 0) << r.out;
    const json metrics = ReadJson(diff)["results"]["metrics"];
    const json& kl = metrics["kl"];
    EXPECT_EQ(std::stod(csv_rows[i].at("kl_difference_vs_above")), kl["difference"].get<double>());
    EXPECT_EQ(std::stod(csv_rows[i].at("kl_difference_standard_error")),
              kl["standard_error"].get<double>());
    // The JSON row has all of kl-diff's pairing (KL, top-1, NLL, its bootstrap), the CSV the
    // intervals and the top-1 and NLL differences.
    EXPECT_EQ(rows[i]["vs_above"]["metrics"], metrics);
    EXPECT_EQ(rows[i]["vs_above"]["candidate"], rows[i - 1]["candidate"]);
    EXPECT_EQ(std::stod(csv_rows[i].at("kl_difference_bootstrap_low")),
              kl["bootstrap_interval_95"][0].get<double>());
    EXPECT_EQ(std::stod(csv_rows[i].at("top1_difference_vs_above")),
              metrics["top1"]["difference"].get<double>());
    EXPECT_EQ(std::stod(csv_rows[i].at("nll_difference_standard_error")),
              metrics["nll"]["standard_error"].get<double>());
    if (i == 2) {
      EXPECT_TRUE(kl["distinguishable"].get<bool>());
      EXPECT_EQ(csv_rows[i].at("verdict"), "worse");
    }
  }

  // Every form of the table has every row.
  const std::string md = ReadBytes(d / "c.md"), csv = ReadBytes(d / "c.csv");
  for (const json& row : rows) {
    const std::string name = row["candidate"];
    EXPECT_NE(table.find(name), std::string::npos) << table;
    EXPECT_NE(md.find("| " + name + " |"), std::string::npos) << md;
    EXPECT_NE(csv.find("\n" + name + ","), std::string::npos) << csv;
  }

  // The same command again: every step reused, the same statistics.
  r = RunShell(fmt::format("{} {} 2>&1", PROCTOR_BIN, Study(d / "study")));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("2. corpus: 8 sequences x 64 tokens"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(reused)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("logits: reused"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("scored affine4-g64: reused"), std::string::npos) << r.out;
  EXPECT_EQ(CompareStatistics(ReadJson(d / "study" / "compare.json")), CompareStatistics(envelope));
  // A changed setting redoes what depends on it: another top-k is another dump.
  r = RunShell(fmt::format("{} {} 2>&1", PROCTOR_BIN, Study(d / "study", "", 8, 32)));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("dumped the teacher's top-32 logits"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("scored affine4-g64: reused"), std::string::npos) << r.out;
}

TEST_F(CompareVerb, AKilledRunRerunGivesTheUninterruptedStatistics) {
  const fs::path d = dir_.path();
  ASSERT_EQ(Proctor(fmt::format("quantize {} --out {} --bits 8", Stories260K().string(),
                                (d / "q8").string()))
                .status,
            0);
  // Bigger (WikiText-2), so the kill lands while the dump runs: it waits for the dump's progress
  // file.
  const fs::path wiki = Fixtures() / "wikitext-2" / "wiki.test.raw";
  const auto big = [&](const fs::path& out) { return Study(out, "", 256, 64, wiki); };
  ASSERT_EQ(Proctor(big(d / "whole")).status, 0);
  const fs::path killed = d / "killed";
  const Result kill = RunShell(fmt::format(
      "{} -q {} >/dev/null 2>&1 & pid=$!; "
      "for i in $(seq 2000); do [ -e {}/dump/.in-progress.json ] && break; sleep 0.005; done; "
      "sleep 0.1; kill -9 $pid; wait $pid 2>/dev/null; echo killed $?",
      PROCTOR_BIN, big(killed), killed.string()));
  EXPECT_NE(kill.out.find("killed 137"), std::string::npos) << kill.out;
  const Result rerun = RunShell(fmt::format("{} {} 2>&1", PROCTOR_BIN, big(killed)));
  ASSERT_EQ(rerun.status, 0) << rerun.out;
  std::printf("%s", rerun.out.c_str());
  EXPECT_NE(rerun.out.find("(reused)"), std::string::npos) << rerun.out;  // the corpus
  EXPECT_EQ(CompareStatistics(ReadJson(killed / "compare.json")),
            CompareStatistics(ReadJson(d / "whole" / "compare.json")));
  EXPECT_EQ(ReadBytes(killed / "dump" / "seq-255.bin"),
            ReadBytes(d / "whole" / "dump" / "seq-255.bin"));
}

// --quantize with a llama.cpp file type: the candidate is the GGUF `quantize --type` writes
// (byte for byte), and its row is `kl` of that file against the study's dump.
void ExpectGgufCandidateIsQuantizeTypes(const fs::path& teacher, const fs::path& d,
                                        const std::string& type) {
  Result r = Proctor(
      fmt::format("compare --teacher {} --data {} --quantize {} --ctx-len 64 --n-seqs 4 --top-k 64 "
                  "--chunk 32 --out {} --json {}",
                  teacher.string(), TinyStories().string(), type, (d / "study").string(),
                  (d / "c.json").string()));
  ASSERT_EQ(r.status, 0) << r.out;
  const json envelope = ReadJson(d / "c.json");
  const json& rows = envelope["results"]["candidates"];
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1]["candidate"], type);
  const fs::path made = d / "study" / "candidates" / (type + ".gguf");
  const fs::path alone = d / (type + ".gguf");
  r = Proctor(
      fmt::format("quantize {} --out {} --type {}", teacher.string(), alone.string(), type));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(ReadBytes(made), ReadBytes(alone));
  r = Proctor(fmt::format("kl --reference-logits {} --model {} --chunk 32 --json {}",
                          (d / "study" / "dump").string(), made.string(),
                          (d / "kl.json").string()));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(KlStatistics(ReadJson(d / "kl.json")["results"]), KlStatistics(rows[1]["kl"]));
  EXPECT_GT(rows[1]["kl"]["kl"]["mean"].get<double>(), 0.0);
}

TEST_F(CompareVerb, GgufFileTypesAreQuantizedAsQuantizeTypeDoes) {
  ExpectGgufCandidateIsQuantizeTypes(Stories260K(), dir_.path(), "q4_0");
}

// A Llama safetensors teacher too (the llama-f32 golden with stories260K's vocabulary as
// tokenizer files): the GGUF is the one `quantize DIR --type` writes.
TEST_F(CompareVerb, GgufFileTypesOfASafetensorsLlamaTeacher) {
  const fs::path golden = Fixtures() / "hf-goldens" / "llama-f32";
  if (!fs::exists(golden)) GTEST_SKIP() << "fixture absent: " << golden;
  const fs::path d = dir_.path();
  const fs::path teacher = d / "llama";
  fs::create_directories(teacher);
  for (const char* file : {"config.json", "model.safetensors"}) {
    fs::copy_file(golden / file, teacher / file);
  }
  const Result r = Proctor(fmt::format("quantize {} --out {} --bits 8", Stories260K().string(),
                                       (d / "stories-mlx").string()));
  ASSERT_EQ(r.status, 0) << r.out;
  for (const char* file : {"tokenizer.json", "tokenizer_config.json"}) {
    fs::copy_file(d / "stories-mlx" / file, teacher / file);
  }
  ExpectGgufCandidateIsQuantizeTypes(teacher, d, "q4_k_m");
}

// --kv-curve: the teacher's KV cache schemes on the study's corpus, exactly `proctor kv-curve`'s
// rows; a rerun reuses them.
TEST_F(CompareVerb, KvCurveRowsAreThoseOfKvCurve) {
  const fs::path d = dir_.path();
  const std::string command = fmt::format(
      "compare --teacher {} --data {} --quantize q8_0 --kv-curve bf16,f16 --kv-decode-steps 8 "
      "--ctx-len 64 --n-seqs 4 --top-k 32 --chunk 32 --out {} --json {}",
      Stories260K().string(), TinyStories().string(), (d / "study").string(),
      (d / "c.json").string());
  Result r = Proctor(command);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("The teacher's KV cache schemes (decode path):"), std::string::npos)
      << r.out;
  const json envelope = ReadJson(d / "c.json");
  const json& kv = envelope["results"]["kv_curve"];
  ASSERT_EQ(kv["rows"].size(), 2u);
  r = Proctor(fmt::format(
      "kv-curve {} --corpus {} --n-seqs 4 --decode-steps 8 --chunk 32 --schemes bf16,f16 "
      "--json {}",
      Stories260K().string(), (d / "study" / "corpus").string(), (d / "kv.json").string()));
  ASSERT_EQ(r.status, 0) << r.out;
  const json alone = ReadJson(d / "kv.json")["results"];
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(kv["rows"][i]["kv"], alone["rows"][i]["kv"]);
    EXPECT_EQ(kv["rows"][i]["kl"], alone["rows"][i]["kl"]);
    EXPECT_EQ(kv["rows"][i]["top1_agreement"], alone["rows"][i]["top1_agreement"]);
    EXPECT_EQ(kv["rows"][i]["effective_bits"], alone["rows"][i]["effective_bits"]);
  }
  r = RunShell(fmt::format("{} {} 2>&1", PROCTOR_BIN, command));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("KV cache schemes: reused"), std::string::npos) << r.out;
  EXPECT_EQ(ReadJson(d / "c.json")["results"]["kv_curve"], kv);
}

TEST_F(CompareVerb, BadArgumentsAreRefusedBeforeAnythingIsCreated) {
  const fs::path d = dir_.path();
  const fs::path out = d / "never";
  const std::string base =
      fmt::format("compare --teacher {} --data {} --out {}", Stories260K().string(),
                  TinyStories().string(), out.string());
  const struct {
    std::string args, says;
  } cases[] = {
      {base, "nothing to compare"},
      {base + " --quantize iq4_xs", "llama-quantize"},
      {base + " --quantize q8_0 --kv-curve affine:4", "does not divide the model's head_dim 8"},
      {base + " --quantize q8_0 --kv-curve int3", "int3"},
      {base + " --quantize q8_0 --kv-curve bf16 --kv-decode-steps 0", "--kv-decode-steps 0"},
      {fmt::format("compare --teacher {} --data {} --out {} --quantize q4_0",
                   (Fixtures() / "hf-goldens" / "llama-f32").string(), TinyStories().string(),
                   out.string()),
       "--quantize q4_0 needs a GGUF of the teacher: [tokenizer]"},
      {fmt::format("compare --teacher {} --data {} --out {} --quantize q4_0",
                   (Fixtures() / "hf-goldens" / "qwen3-f32").string(), TinyStories().string(),
                   out.string()),
       "model_type \"qwen3\""},
      {base + " --quantize affine7", "affine7"},
      {base + " --quantize affine4-g48", "affine4-g48"},
      {base + " --quantize affine4,affine4-g64", "given twice"},
      {base + " --quantize affine4 --candidate " + (d / "missing").string(), "missing"},
      {fmt::format("compare --teacher {} --data {} --out {} --quantize affine4",
                   Stories260K().string(), (d / "nope.txt").string(), out.string()),
       "no such file"},
      {base + " --quantize affine4 --json " + (d / "no-dir" / "c.json").string(), "no-dir"},
  };
  for (const auto& c : cases) {
    const Result r = Proctor(c.args);
    EXPECT_EQ(r.status, 1) << c.args << "\n" << r.out;
    EXPECT_NE(r.out.find(c.says), std::string::npos) << c.args << "\n" << r.out;
    EXPECT_FALSE(fs::exists(out)) << c.args;
  }
}

TEST_F(CompareVerb, ACandidateWithAnotherTokenizerIsRefusedByName) {
  // The demo's generated teacher has stories260K's vocabulary size (512) but its own tokenizer.
  const fs::path d = dir_.path();
  ASSERT_EQ(
      Proctor(fmt::format("demo --dir {} --bits 8 --n-seqs 1 --ctx-len 16", (d / "demo").string()))
          .status,
      0);
  const Result r = Proctor(
      fmt::format("compare --teacher {} --data {} --candidate {} --ctx-len 32 --n-seqs 2 --out {}",
                  Stories260K().string(), TinyStories().string(), (d / "demo" / "teacher").string(),
                  (d / "study").string()));
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("teacher"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tokenizer"), std::string::npos) << r.out;
}

}  // namespace
