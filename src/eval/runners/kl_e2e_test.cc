// The core loop end to end through the built `proctor` binary on a real model (stories260K) and
// real text (tinystories), checked by an independent numpy script (tools/kl_e2e_check.py) that
// recomputes every statistic from the dump's bytes and the candidate's full logits written by
// `proctor logits`: dump -> kl --json --per-position -> logits -> script, in saved-teacher and
// two-model mode. The candidate is stories260K run with bf16 compute (activations rounded to bf16
// inside the matrix products): a real, small perturbation of the f32 teacher.
// Also prints the self-scoring floor, and runs the user's whole loop on stories260K (corpus ->
// dump -> quantize -> kl) over tinystories and wikitext-2 text, asserting that the 8-bit
// re-quantization scores closer to the teacher than the 4-bit one. Skips without the fixtures,
// the binary or numpy.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "eval/formats/corpus.h"
#include "eval/testing_dumps.h"
#include "text/tokenizer/tokenizer.h"
#include "util/file.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;

fs::path Fixtures() { return testing::FixturesDir(); }

using CommandResult = testing::CommandOutput;

CommandResult Shell(const std::string& command) { return testing::RunCommand(command); }

class KlEndToEnd : public ::testing::Test {
 protected:
  static constexpr int64_t kSeqs = 4, kCtx = 96, kVocab = 512, kChunk = 32;
  void SetUp() override {
    model_ = Fixtures() / "stories260K" / "stories260K.gguf";
    const fs::path text = Fixtures() / "tinystories" / "tinystories_sample.txt";
    if (!fs::exists(model_) || !fs::exists(text)) GTEST_SKIP() << "fixtures absent: " << model_;
    if (!fs::exists(PROCTOR_BIN)) GTEST_SKIP() << PROCTOR_BIN << " is not built";
    if (Shell("/usr/bin/python3 -c 'import numpy'").status != 0) {
      GTEST_SKIP() << "/usr/bin/python3 with numpy is not available (the oracle)";
    }
    // A corpus of real text: the sample's first stories, tokenized by the model's vocabulary.
    const std::string sample = ReadFileToString(text).substr(0, 4000);
    const auto tokens = text::LoadTokenizer(model_)->Encode(sample, true);
    ASSERT_GE(tokens.size(), static_cast<size_t>(kSeqs * kCtx));
    WriteCorpus(corpus(), std::span<const int32_t>(tokens).first(kSeqs * kCtx), kCtx,
                {{"tokenizer", model_.string()}, {"vocab_size", kVocab}});
  }
  fs::path corpus() const { return temp_.path() / "corpus"; }
  fs::path Path(const char* name) const { return temp_.path() / name; }
  CommandResult Proctor(const std::string& args) const {
    return Shell(fmt::format("{} -t 2 --quiet {}", PROCTOR_BIN, args));
  }
  CommandResult Check(const std::string& args) const {
    return Shell(fmt::format("/usr/bin/python3 {}/tools/kl_e2e_check.py --vocab {} {}",
                             PROCTOR_SOURCE_DIR, kVocab, args));
  }
  fs::path model_;
  testing::TempDir temp_;
};

TEST_F(KlEndToEnd, SavedTeacherStatisticsMatchTheNumpyRecomputation) {
  const std::string m = model_.string();
  CommandResult r = Proctor(
      fmt::format("dump --teacher {} --corpus {} --out {} --top-k 64 --chunk {} "
                  "--json {}",
                  m, corpus().string(), Path("dump").string(), kChunk, Path("dump.json").string()));
  ASSERT_EQ(r.status, 0) << r.output;
  r = Proctor(fmt::format(
      "kl --reference-logits {} --candidate {} --compute bf16 --chunk {} "
      "--json {} --per-position {}",
      Path("dump").string(), m, kChunk, Path("kl.json").string(), Path("pp.bin").string()));
  ASSERT_EQ(r.status, 0) << r.output;
  fmt::print("{}", r.output);
  r = Proctor(fmt::format("logits {} --corpus {} --compute bf16 --chunk {} --out {}", m,
                          corpus().string(), kChunk, Path("cand.f32").string()));
  ASSERT_EQ(r.status, 0) << r.output;
  ASSERT_EQ(fs::file_size(Path("cand.f32")), static_cast<uint64_t>(kSeqs * kCtx * kVocab * 4));
  r = Check(fmt::format("--dump {} --candidate-logits {} --results {} --per-position {}",
                        Path("dump").string(), Path("cand.f32").string(), Path("kl.json").string(),
                        Path("pp.bin").string()));
  EXPECT_EQ(r.status, 0) << r.output;
  fmt::print(
      "numpy recomputation (saved teacher, stories260K f32 dump top-64 vs bf16 compute):\n"
      "{}\n",
      r.output);
  const auto kl = nlohmann::json::parse(ReadFileToString(Path("kl.json")));
  EXPECT_EQ(kl["schema"], "proctor-results");
  EXPECT_EQ(kl["command"], "kl");
  EXPECT_EQ(kl["results"]["positions"], kSeqs * (kCtx - 1));
  EXPECT_GT(kl["results"]["kl"]["mean"].get<double>(), 1e-6);  // bf16 compute is not f32
  EXPECT_EQ(kl["inputs"][0]["corpus_sha256"], ReadCorpus(corpus()).tokens_sha256);
  const auto dump = nlohmann::json::parse(ReadFileToString(Path("dump.json")));
  EXPECT_EQ(dump["command"], "dump");
  EXPECT_EQ(dump["results"]["positions_written"], kSeqs * (kCtx - 1));
  EXPECT_EQ(dump["inputs"][1]["tokens_sha256"], ReadCorpus(corpus()).tokens_sha256);
  for (const auto& j : {kl, dump}) {
    const auto& t = j["timings"];
    EXPECT_GT(t["forward_seconds"].get<double>(), 0.0);
    EXPECT_LE(t["forward_seconds"].get<double>() + t["scoring_seconds"].get<double>() +
                  t["io_seconds"].get<double>(),
              t["total_seconds"].get<double>() + 1e-9);
    fmt::print("{} timings: {}\n", j["command"].get<std::string>(), t.dump());
  }
}

TEST_F(KlEndToEnd, TwoModelStatisticsMatchTheNumpyRecomputation) {
  const std::string m = model_.string();
  CommandResult r = Proctor(fmt::format(
      "kl --reference {} --reference-compute f32 --corpus {} --candidate "
      "{} --compute bf16 --chunk {} --json {} --per-position {} --n-seqs 3",
      m, corpus().string(), m, kChunk, Path("kl.json").string(), Path("pp.bin").string()));
  ASSERT_EQ(r.status, 0) << r.output;
  fmt::print("{}", r.output);
  for (const char* compute : {"f32", "bf16"}) {
    r = Proctor(fmt::format("logits {} --corpus {} --n-seqs 3 --compute {} --chunk {} --out {}", m,
                            corpus().string(), compute, kChunk,
                            Path(compute == std::string("f32") ? "t.f32" : "c.f32").string()));
    ASSERT_EQ(r.status, 0) << r.output;
  }
  r =
      Check(fmt::format("--teacher-logits {} --tokens {} --candidate-logits {} --results {} "
                        "--per-position {}",
                        Path("t.f32").string(), (corpus() / "tokens.bin").string(),
                        Path("c.f32").string(), Path("kl.json").string(), Path("pp.bin").string()));
  EXPECT_EQ(r.status, 0) << r.output;
  fmt::print(
      "numpy recomputation (two-model, stories260K f32 vs bf16 compute, full vocabulary):\n"
      "{}\n",
      r.output);
  const auto kl = nlohmann::json::parse(ReadFileToString(Path("kl.json")));
  EXPECT_EQ(kl["settings"]["mode"], "two-model");
  EXPECT_EQ(kl["results"]["positions"], 3 * (kCtx - 1));
  EXPECT_EQ(kl["inputs"][1]["kind"], "corpus");
}

// The self-scoring floor (FORMATS.md section 3), printed for the log: the f32 dump scored by the
// same model at the same chunk size (top-1 exactly 1, KL at the fp16 floor), at another chunk
// size, and two-model self-scoring (exactly 0).
TEST_F(KlEndToEnd, SelfScoringFloor) {
  const std::string m = model_.string();
  CommandResult r =
      Proctor(fmt::format("dump --teacher {} --corpus {} --out {} --top-k 64 --chunk {}", m,
                          corpus().string(), Path("dump").string(), kChunk));
  ASSERT_EQ(r.status, 0) << r.output;
  std::string log;
  double same_chunk_mean = 0;
  for (const int64_t chunk : {kChunk, int64_t{7}, int64_t{96}}) {
    const auto json = Path("self.json");
    r = Proctor(fmt::format("kl --reference-logits {} --candidate {} --chunk {} --json {}",
                            Path("dump").string(), m, chunk, json.string()));
    ASSERT_EQ(r.status, 0) << r.output;
    const auto res = nlohmann::json::parse(ReadFileToString(json))["results"];
    EXPECT_EQ(res["top1_agreement"], 1.0) << "chunk " << chunk;
    // The fp16 floor of shifted top-64 records is ~1e-5 (TeacherDump.Stories260KSelfScoring
    // bounds it record by record); a bf16-compute candidate sits at ~2e-5 above it.
    const double mean = res["kl"]["mean"].get<double>();
    EXPECT_LT(std::fabs(mean), 1e-5) << "chunk " << chunk;
    if (chunk == kChunk) same_chunk_mean = mean;
    // Other chunk sizes: the engine's logits move by float rounding only.
    EXPECT_LT(std::fabs(mean - same_chunk_mean), 1e-7) << "chunk " << chunk;
    log += fmt::format(
        "  dump chunk {} scored at chunk {:>2}: KL mean {:.3e} (differs from chunk {} "
        "by {:.1e}, SE {:.1e}) max {:.3e}, tail KL max {:.3e}, top-1 {}, mass "
        "{:.4f}\n",
        kChunk, chunk, mean, kChunk, mean - same_chunk_mean,
        res["kl"]["standard_error"].get<double>(), res["kl"]["max"].get<double>(),
        res["tail_kl"]["max"].get<double>(), res["top1_agreement"].get<double>(),
        res["mean_captured_mass"].get<double>());
  }
  r = Proctor(fmt::format("kl --reference {} --corpus {} --candidate {} --chunk {} --json {}", m,
                          corpus().string(), m, kChunk, Path("two.json").string()));
  ASSERT_EQ(r.status, 0) << r.output;
  const auto two = nlohmann::json::parse(ReadFileToString(Path("two.json")))["results"];
  EXPECT_EQ(two["kl"]["max"], 0.0);
  EXPECT_EQ(two["top1_agreement"], 1.0);
  log += fmt::format("  two-model self (same chunk): KL max {}, top-1 {}\n",
                     two["kl"]["max"].get<double>(), two["top1_agreement"].get<double>());
  fmt::print("stories260K self-scoring floor ({} x {} tinystories tokens, top-64):\n{}", kSeqs,
             kCtx, log);
}

// The user's loop through the CLI only, on real text: `proctor corpus` (tinystories, then
// wikitext-2), `proctor dump` of stories260K, `proctor quantize` at 8 and 4 bits (group 32: the
// 172-wide down projection stays unquantized) and `proctor kl` of each against the dump. An
// 8-bit model must be closer to its teacher than a 4-bit one by KL and by top-1; the numbers go to
// the test log.
TEST(StoriesLoop, EightBitScoresCloserThanFourBitOnTinystoriesAndWikitext) {
  const fs::path model = Fixtures() / "stories260K" / "stories260K.gguf";
  const fs::path tinystories = Fixtures() / "tinystories" / "tinystories_sample.txt";
  const fs::path wikitext = Fixtures() / "wikitext-2" / "wiki.test.raw";
  for (const auto& f : {model, tinystories, wikitext}) {
    if (!fs::exists(f)) GTEST_SKIP() << "fixture absent: " << f;
  }
  if (!fs::exists(PROCTOR_BIN)) GTEST_SKIP() << PROCTOR_BIN << " is not built";
  testing::TempDir temp;
  const auto proctor = [](const std::string& args) {
    return Shell(fmt::format("{} -t 2 --quiet {}", PROCTOR_BIN, args));
  };
  for (const int bits : {8, 4}) {
    const CommandResult r =
        proctor(fmt::format("quantize {} --out {} --bits {} --group-size 32", model.string(),
                            (temp.path() / fmt::format("q{}", bits)).string(), bits));
    ASSERT_EQ(r.status, 0) << r.output;
  }
  struct Text {
    const char* name;
    fs::path file;
    int n_seqs;  // tinystories_sample.txt holds about 1,000 tokens of stories260K's vocabulary
  };
  std::string log;
  for (const Text& text : {Text{"tinystories", tinystories, 7}, Text{"wikitext-2", wikitext, 16}}) {
    const fs::path dir = temp.path() / text.name;
    CommandResult r = proctor(
        fmt::format("corpus --tokenizer {} --out {} --ctx-len 128 --n-seqs {} {}", model.string(),
                    (dir / "corpus").string(), text.n_seqs, text.file.string()));
    ASSERT_EQ(r.status, 0) << r.output;
    r = proctor(fmt::format("dump --teacher {} --corpus {} --out {} --top-k 128", model.string(),
                            (dir / "corpus").string(), (dir / "dump").string()));
    ASSERT_EQ(r.status, 0) << r.output;
    nlohmann::json results[2];
    for (const int i : {0, 1}) {
      const int bits = i == 0 ? 8 : 4;
      const fs::path json = dir / fmt::format("kl{}.json", bits);
      r = proctor(fmt::format("kl --reference-logits {} --candidate {} --json {}",
                              (dir / "dump").string(),
                              (temp.path() / fmt::format("q{}", bits)).string(), json.string()));
      ASSERT_EQ(r.status, 0) << r.output;
      results[i] = nlohmann::json::parse(ReadFileToString(json))["results"];
      ASSERT_EQ(results[i]["positions"], text.n_seqs * 127);
      log += fmt::format(
          "  {:<11} {}-bit g32: KL mean {:.4e} +- {:.1e}, p95 {:.4e}, top-1 {:.4f}, "
          "ppl {:.3f}\n",
          text.name, bits, results[i]["kl"]["mean"].get<double>(),
          results[i]["kl"]["standard_error"].get<double>(), results[i]["kl"]["p95"].get<double>(),
          results[i]["top1_agreement"].get<double>(), results[i]["candidate_ppl"].get<double>());
    }
    EXPECT_LT(results[0]["kl"]["mean"].get<double>(), results[1]["kl"]["mean"].get<double>())
        << text.name;
    EXPECT_GT(results[0]["top1_agreement"].get<double>(),
              results[1]["top1_agreement"].get<double>())
        << text.name;
  }
  fmt::print(
      "stories260K re-quantized, scored against its own top-128 dump (7 or 16 x 128 "
      "tokens):\n{}",
      log);
}

// A quantized KV cache judged against a saved teacher: a teacher dumps its logits with the f32
// cache; the same weights with --kv affine:B:g32 --kv-start 0 (quantized after the first chunk,
// read by every later one) are the candidates: the qwen3 golden (f32, head_dim 32). Fewer bits
// drift further (8 < 4 < 2), and the 4-bit run's statistics equal numpy's recomputation from the
// dump and the candidate's logits (`proctor logits` with the same cache; mlx_oracle_test.cc checks
// those against mlx-lm's own quantized cache). The golden's random weights make near-one-hot
// candidates (mass outside the teacher's top-k down to 1e-10): the tail-aware KL's direct sum.
TEST(KvSchemes, SavedTeacherKlOrdersTheBitsAndMatchesNumpy) {
  const fs::path golden = Fixtures() / "hf-goldens" / "qwen3-f32";
  if (!fs::exists(golden / "config.json")) GTEST_SKIP() << "fixture absent: " << golden;
  if (!fs::exists(PROCTOR_BIN)) GTEST_SKIP() << PROCTOR_BIN << " is not built";
  if (Shell("/usr/bin/python3 -c 'import numpy'").status != 0) {
    GTEST_SKIP() << "/usr/bin/python3 with numpy is not available (the oracle)";
  }
  constexpr int64_t kVocab = 512, kSeqs = 3, kCtx = 64, kChunk = 16;
  ASSERT_EQ(nlohmann::json::parse(ReadFileToString(golden / "config.json"))["vocab_size"], kVocab);
  testing::TempDir temp;
  const auto path = [&](const std::string& name) { return (temp.path() / name).string(); };
  testing::WriteArithmeticCorpus(path("corpus"), kSeqs, kCtx, kVocab, 7919, 13);
  const auto proctor = [](const std::string& args) {
    return Shell(fmt::format("{} -t 2 --quiet {}", PROCTOR_BIN, args));
  };
  // Scores the golden with a cache `scheme` (and `flags`) against its own f32-cache dump.
  const auto kl_with_cache = [&](const std::string& name, const std::string& scheme,
                                 const std::string& flags) {
    const CommandResult r = proctor(fmt::format(
        "kl --reference-logits {} --candidate {} --kv {} {} --chunk {} --json {}.json "
        "--per-position {}.bin",
        path("golden"), golden.string(), scheme, flags, kChunk, path(name), path(name)));
    EXPECT_EQ(r.status, 0) << r.output;
    const auto kl = nlohmann::json::parse(ReadFileToString(path(name + ".json")));
    EXPECT_EQ(kl["settings"]["kv"], scheme);
    EXPECT_EQ(kl["settings"]["kv_start"], 0) << scheme << " " << flags;
    const double mean = kl["results"]["kl"]["mean"].get<double>();
    fmt::print("[ kv ] qwen3-f32 saved-teacher KL, --kv {} {}: mean {:.6g}\n", scheme, flags, mean);
    return mean;
  };
  CommandResult r =
      proctor(fmt::format("dump --teacher {} --corpus {} --out {} --top-k 64 --chunk {}",
                          golden.string(), path("corpus"), path("golden"), kChunk));
  ASSERT_EQ(r.status, 0) << r.output;
  std::map<int, double> mean_kl;
  for (const int bits : {8, 4, 2}) {
    mean_kl[bits] = kl_with_cache(fmt::format("golden-{}", bits),
                                  fmt::format("affine:{}:g32", bits), "--kv-start 0");
  }
  EXPECT_GT(mean_kl[8], 0.0);
  EXPECT_LT(mean_kl[8], mean_kl[4]);
  EXPECT_LT(mean_kl[4], mean_kl[2]);
  // TurboQuant, quantized from the first chunk's end by default: fewer value bits drift further.
  std::map<int, double> turbo_kl;
  for (const int value_bits : {8, 4, 3, 2}) {
    const std::string scheme = fmt::format("turbo:k8v{}", value_bits);
    turbo_kl[value_bits] = kl_with_cache(fmt::format("turbo-{}", value_bits), scheme, "");
  }
  EXPECT_GT(turbo_kl[8], 0.0);
  EXPECT_LT(turbo_kl[8], turbo_kl[4]);
  EXPECT_LT(turbo_kl[4], turbo_kl[3]);
  EXPECT_LT(turbo_kl[3], turbo_kl[2]);

  r = proctor(
      fmt::format("logits {} --corpus {} --kv affine:4:g32 --kv-start 0 --chunk {} --out {}",
                  golden.string(), path("corpus"), kChunk, path("cand.f32")));
  ASSERT_EQ(r.status, 0) << r.output;
  r = Shell(fmt::format(
      "/usr/bin/python3 {}/tools/kl_e2e_check.py --vocab {} --dump {} --candidate-logits {} "
      "--results {} --per-position {}",
      PROCTOR_SOURCE_DIR, kVocab, path("golden"), path("cand.f32"), path("golden-4.json"),
      path("golden-4.bin")));
  EXPECT_EQ(r.status, 0) << r.output;
  fmt::print("numpy recomputation (qwen3-f32, --kv affine:4:g32):\n{}\n",
             r.output.substr(r.output.rfind("checked")));
}

// The decode path (`kl --kv-arm SCHEME --decode-steps S`): one model, the reference arm with the
// f32 cache, the candidate arm with SCHEME converted when the prefill ends, the last S positions
// of each sequence decoded one token per step. Identical arms give exactly 0; fewer bits drift
// further; the 4-bit run's statistics equal numpy's recomputation from both arms' logits written
// by `proctor logits --decode-from` (the same schedule and conversion point).
TEST(KvSchemes, DecodePathKvArmIsExactlyZeroForIdenticalArmsAndMatchesNumpy) {
  const fs::path golden = Fixtures() / "hf-goldens" / "qwen3-f32";
  if (!fs::exists(golden / "config.json")) GTEST_SKIP() << "fixture absent: " << golden;
  if (!fs::exists(PROCTOR_BIN)) GTEST_SKIP() << PROCTOR_BIN << " is not built";
  if (Shell("/usr/bin/python3 -c 'import numpy'").status != 0) {
    GTEST_SKIP() << "/usr/bin/python3 with numpy is not available (the oracle)";
  }
  constexpr int64_t kVocab = 512, kSeqs = 3, kCtx = 64, kChunk = 16, kSteps = 8;
  constexpr int64_t kPrefill = kCtx - 1 - kSteps;  // the decode steps begin here
  testing::TempDir temp;
  const auto path = [&](const std::string& name) { return (temp.path() / name).string(); };
  testing::WriteArithmeticCorpus(path("corpus"), kSeqs, kCtx, kVocab, 4099, 5);
  const auto proctor = [](const std::string& args) {
    return Shell(fmt::format("{} -t 2 --quiet {}", PROCTOR_BIN, args));
  };
  const auto decode_kl = [&](const std::string& scheme) {
    const std::string name = "decode-" + scheme.substr(scheme.find(':') + 1, 1);
    const CommandResult r = proctor(fmt::format(
        "kl --model {} --kv-arm {} --corpus {} --decode-steps {} --chunk {} --json {}.json "
        "--per-position {}.bin",
        golden.string(), scheme, path("corpus"), kSteps, kChunk, path(name), path(name)));
    EXPECT_EQ(r.status, 0) << r.output;
    auto kl = nlohmann::json::parse(ReadFileToString(path(name + ".json")));
    EXPECT_EQ(kl["settings"]["mode"], "decode");
    EXPECT_EQ(kl["settings"]["kv"], scheme);
    EXPECT_EQ(kl["settings"]["reference_kv"], "f32");
    EXPECT_EQ(kl["results"]["positions"], kSeqs * kSteps);
    return kl;
  };
  const auto same = decode_kl("f32");
  EXPECT_EQ(same["results"]["kl"]["mean"].get<double>(), 0.0);
  EXPECT_EQ(same["results"]["kl"]["max"].get<double>(), 0.0);
  EXPECT_EQ(same["results"]["top1_agreement"].get<double>(), 1.0);
  std::map<int, double> mean_kl;
  for (const int bits : {8, 4, 2}) {
    const auto kl = decode_kl(fmt::format("affine:{}:g32", bits));
    EXPECT_EQ(kl["settings"]["kv_start"], kPrefill);
    mean_kl[bits] = kl["results"]["kl"]["mean"].get<double>();
    fmt::print("[ kv ] qwen3-f32 decode-path KL ({} steps), --kv-arm affine:{}:g32: mean {:.6g}\n",
               kSteps, bits, mean_kl[bits]);
  }
  // 8 bits moves the decode steps' distributions below the KL's own rounding (~1e-8: it can
  // come out negative); 4 and 2 bits clearly above it.
  EXPECT_LT(mean_kl[8], mean_kl[4]);
  EXPECT_GT(mean_kl[4], 1e-7);
  EXPECT_LT(mean_kl[4], mean_kl[2]);
  // llama.cpp's cache types: q8_0 closer than q4_0.
  const auto q8 = decode_kl("ggml:q8_0"), q4 = decode_kl("ggml:q4_0");
  fmt::print(
      "[ kv ] qwen3-f32 decode-path KL ({} steps), --kv-arm ggml:q8_0: {:.6g}, q4_0: {:.6g}\n",
      kSteps, q8["results"]["kl"]["mean"].get<double>(), q4["results"]["kl"]["mean"].get<double>());
  EXPECT_LT(q8["results"]["kl"]["mean"].get<double>(), q4["results"]["kl"]["mean"].get<double>());
  EXPECT_GT(q4["results"]["kl"]["mean"].get<double>(), 1e-7);
  // iq4_nl: the same 4.5 bits as q4_0 on non-uniform levels with a fitted scale.
  const auto iq4 = decode_kl("ggml:iq4_nl");
  fmt::print("[ kv ] qwen3-f32 decode-path KL ({} steps), --kv-arm ggml:iq4_nl: {:.6g}\n", kSteps,
             iq4["results"]["kl"]["mean"].get<double>());
  EXPECT_LT(q8["results"]["kl"]["mean"].get<double>(), iq4["results"]["kl"]["mean"].get<double>());
  EXPECT_LT(iq4["results"]["kl"]["mean"].get<double>(), q4["results"]["kl"]["mean"].get<double>());

  for (const auto& [out, flags] :
       {std::pair<std::string, std::string>{"ref.f32", ""},
        {"cand.f32", fmt::format("--kv affine:4:g32 --kv-start {}", kPrefill)}}) {
    const CommandResult r =
        proctor(fmt::format("logits {} --corpus {} --chunk {} --decode-from {} {} --out {}",
                            golden.string(), path("corpus"), kChunk, kPrefill, flags, path(out)));
    ASSERT_EQ(r.status, 0) << r.output;
  }
  const CommandResult r = Shell(fmt::format(
      "/usr/bin/python3 {}/tools/kl_e2e_check.py --vocab {} --teacher-logits {} --tokens "
      "{}/tokens.bin --candidate-logits {} --results {} --per-position {} --decode-steps {}",
      PROCTOR_SOURCE_DIR, kVocab, path("ref.f32"), path("corpus"), path("cand.f32"),
      path("decode-4.json"), path("decode-4.bin"), kSteps));
  EXPECT_EQ(r.status, 0) << r.output;
  fmt::print("numpy recomputation (qwen3-f32 decode path, --kv-arm affine:4:g32):\n{}\n",
             r.output.substr(r.output.rfind("checked")));

  // Nonsense is refused, naming the values.
  CommandResult bad =
      proctor(fmt::format("kl --model {} --kv-arm affine:4:g32 --corpus {} "
                          "--decode-steps 63",
                          golden.string(), path("corpus")));
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.output.find("1 to 62"), std::string::npos) << bad.output;
  bad =
      proctor(fmt::format("kl --model {} --kv-arm affine:4:g32 --decode-steps 4", golden.string()));
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.output.find("--corpus"), std::string::npos) << bad.output;
  bad = proctor(fmt::format("kl --model {} --kv-arm affine:4:g32 --kv bf16 --corpus {}",
                            golden.string(), path("corpus")));
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.output.find("--kv"), std::string::npos) << bad.output;
}

// `kl --self LEVER=A:B`: one model, one engine lever set two ways. A = B scores exactly 0; a
// compute or kv A/B gives exactly the numbers of the equivalent two-model or --kv-arm run; nonsense
// is refused naming the value.
TEST(KvSchemes, SelfAbOfAnEngineLever) {
  const fs::path golden = Fixtures() / "hf-goldens" / "qwen3-f32";
  if (!fs::exists(golden / "config.json")) GTEST_SKIP() << "fixture absent: " << golden;
  if (!fs::exists(PROCTOR_BIN)) GTEST_SKIP() << PROCTOR_BIN << " is not built";
  constexpr int64_t kVocab = 512, kSeqs = 2, kCtx = 48;
  testing::TempDir temp;
  const auto path = [&](const std::string& name) { return (temp.path() / name).string(); };
  testing::WriteArithmeticCorpus(path("corpus"), kSeqs, kCtx, kVocab, 613, 3);
  int runs = 0;
  // The results of `kl ARGS --corpus C --chunk 16` (both arms the golden; --self chunk sets the
  // chunk itself).
  const auto kl = [&](const std::string& args) {
    const std::string json = path(fmt::format("run{}.json", runs++));
    const CommandResult r = Shell(fmt::format(
        "{} -t 2 --quiet kl {} --corpus {}{} --json {}", PROCTOR_BIN, args, path("corpus"),
        args.find("chunk=") == std::string::npos ? " --chunk 16" : "", json));
    EXPECT_EQ(r.status, 0) << args << ": " << r.output;
    return r.status == 0 ? nlohmann::json::parse(ReadFileToString(json))["results"]
                         : nlohmann::json();
  };
  const std::string m = "--model " + golden.string();
  for (const char* same :
       {"compute=f32:f32", "kv=affine:4:g32:affine:4:g32", "threads=1:1", "threads=2:2"}) {
    const auto r = kl(fmt::format("{} --self {} --kv-start 0", m, same));
    EXPECT_EQ(r["kl"]["mean"].get<double>(), 0.0) << same;
    EXPECT_EQ(r["kl"]["max"].get<double>(), 0.0) << same;
  }
  const auto compute = kl(m + " --self compute=f32:bf16");
  const auto two_model =
      kl(fmt::format("--reference {} --reference-compute f32 --candidate {} "
                     "--compute bf16",
                     golden.string(), golden.string()));
  EXPECT_GT(compute["kl"]["mean"].get<double>(), 0.0);
  EXPECT_EQ(compute["kl"], two_model["kl"]);
  const auto kv = kl(m + " --self kv=f32:affine:4:g32 --kv-start 0");
  const auto kv_arm = kl(m + " --kv-arm affine:4:g32 --kv-start 0");
  EXPECT_GT(kv["kl"]["mean"].get<double>(), 0.0);
  EXPECT_EQ(kv["kl"], kv_arm["kl"]);
  const auto threads = kl(m + " --self threads=1:2");
  fmt::print("[ self ] qwen3-f32 --self threads=1:2: KL mean {} max {}\n",
             threads["kl"]["mean"].get<double>(), threads["kl"]["max"].get<double>());

  // chunk: each arm's forward runs at most its own number of positions (the chunks are scored
  // at the larger). Chunked prefill agrees within 1e-5, not bit for bit, so chunks of 16 against
  // one position at a time give a KL above 0 (the lever reached the arm) and far below 1e-6.
  const auto chunks = kl(m + " --self chunk=16:1");
  fmt::print("[ self ] qwen3-f32 --self chunk=16:1: KL mean {} max {}\n",
             chunks["kl"]["mean"].get<double>(), chunks["kl"]["max"].get<double>());
  EXPECT_GT(chunks["kl"]["max"].get<double>(), 0.0);
  EXPECT_LT(chunks["kl"]["max"].get<double>(), 1e-6);
  EXPECT_EQ(chunks["chunk_size"].get<int64_t>(), 16);
  for (const char* same : {"chunk=16:16", "chunk=5:5"}) {
    const auto r = kl(fmt::format("{} --self {}", m, same));
    EXPECT_EQ(r["kl"]["max"].get<double>(), 0.0) << same;
  }

  for (const auto& [args, expected] : std::vector<std::pair<std::string, std::string>>{
           {"--self batch=1:2", "compute, kv, threads or chunk"},
           {"--self chunk=0:2", "'0:2' is not two valid chunk values"},
           {"--self chunk=4:8 --chunk 16", "leave --chunk out"},
           {"--self kv=f32:turbo:k3v3", "'f32:turbo:k3v3'"},
           {"--self threads=0:2", "'0:2'"},
           {"--self compute=f32:bf16 --compute bf16", "leave --compute out"}}) {
    const CommandResult r =
        Shell(fmt::format("{} --quiet kl {} {} --corpus {}", PROCTOR_BIN, m, args, path("corpus")));
    EXPECT_NE(r.status, 0) << args;
    EXPECT_NE(r.output.find(expected), std::string::npos) << args << ": " << r.output;
  }
}

}  // namespace
}  // namespace proctor
