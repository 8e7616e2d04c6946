// llama.cpp interop against llama.cpp itself (label `slow`): llama-perplexity is built from the
// llama.cpp source of the llama-cpp-python 0.3.36 sdist (tools/oracle/setup.sh, cached outside
// the build tree) and run on stories260K (F32 GGUF, F32 KV cache, flash attention off):
//   (b) llama.cpp writes a base file (--kl-divergence-base) from tinystories text; `proctor kl`
//       scores a candidate against it and prints the same statistics llama-perplexity
//       --kl-divergence prints for that pair;
//   (a) `proctor dump --format llama.cpp` writes a base file over the same tokens; it matches
//       llama.cpp's file (same header and tokens, codes within a few units), llama-perplexity
//       reads it, and again both tools print the same statistics; proctor's exact-logit
//       perplexity of the teacher matches llama.cpp's "Final estimate" of the base run.
// The candidate is stories260K with its matrices rounded to 4 bits per row but stored F32
// (tools/perturb_gguf.py), so both engines compute it in f32. Skips with the reason when the
// oracle, numpy or the fixtures are missing.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "eval/formats/corpus.h"
#include "util/file.h"
#include "util/testing_oracles.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;

fs::path FixturesDir() {
  const char* env = std::getenv("PROCTOR_FIXTURES");
  return env != nullptr && *env != '\0' ? fs::path(env) : fs::path(PROCTOR_FIXTURES_DEFAULT);
}

// Runs a shell command; returns its exit status and stdout+stderr.
int RunCommand(const std::string& command, std::string* out) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return -1;
  char buffer[4096];
  size_t n;
  out->clear();
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) out->append(buffer, n);
  return ::pclose(pipe);
}

// The statistics block both tools print: label (text before the first ':') -> the numbers on
// the line (value, then uncertainty when there is one; percent signs dropped).
using Report = std::map<std::string, std::vector<double>>;

Report ParseReport(const std::string& text) {
  static const std::vector<std::string> kLabels = {"Mean PPL(Q)",
                                                   "Mean PPL(base)",
                                                   "Cor(ln(PPL(Q)), ln(PPL(base)))",
                                                   "Mean ln(PPL(Q)/PPL(base))",
                                                   "Mean PPL(Q)/PPL(base)",
                                                   "Mean PPL(Q)-PPL(base)",
                                                   "Mean    KLD",
                                                   "Maximum KLD",
                                                   "99.9%   KLD",
                                                   "99.0%   KLD",
                                                   "95.0%   KLD",
                                                   "90.0%   KLD",
                                                   "Median  KLD",
                                                   "10.0%   KLD",
                                                   " 5.0%   KLD",
                                                   " 1.0%   KLD",
                                                   " 0.1%   KLD",
                                                   "Minimum KLD",
                                                   "Mean    Δp",
                                                   "Maximum Δp",
                                                   "99.9%   Δp",
                                                   "99.0%   Δp",
                                                   "95.0%   Δp",
                                                   "90.0%   Δp",
                                                   "75.0%   Δp",
                                                   "Median  Δp",
                                                   "25.0%   Δp",
                                                   "10.0%   Δp",
                                                   " 5.0%   Δp",
                                                   " 1.0%   Δp",
                                                   " 0.1%   Δp",
                                                   "Minimum Δp",
                                                   "RMS Δp    ",
                                                   "Same top p"};
  Report report;
  static const std::regex number(R"([-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?|[-+]?(nan|inf))");
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string label = line.substr(0, colon);
    while (!label.empty() && label.back() == ' ') label.pop_back();
    bool known = false;
    for (std::string l : kLabels) {
      while (!l.empty() && l.back() == ' ') l.pop_back();
      known = known || l == label;
    }
    if (!known) continue;
    std::vector<double> values;
    const std::string rest = line.substr(colon + 1);
    for (auto it = std::sregex_iterator(rest.begin(), rest.end(), number);
         it != std::sregex_iterator(); ++it) {
      values.push_back(std::stod(it->str()));
    }
    report[label] = values;
  }
  return report;
}

// Compares every statistic llama.cpp printed with proctor's; prints both side by side.
void CompareReports(const Report& llama, const Report& proctor, const std::string& what) {
  ASSERT_GE(llama.size(), 30u) << "llama-perplexity printed too few statistics";
  std::printf("[ %s ]\n%-32s %22s %22s\n", what.c_str(), "statistic", "llama.cpp", "proctor");
  for (const auto& [label, want] : llama) {
    const auto it = proctor.find(label);
    ASSERT_NE(it, proctor.end()) << "proctor did not print " << label;
    const std::vector<double>& got = it->second;
    ASSERT_EQ(got.size(), want.size()) << label;
    std::printf("%-32s %22s %22s\n", label.c_str(),
                fmt::format("{}", fmt::join(want, " ± ")).c_str(),
                fmt::format("{}", fmt::join(got, " ± ")).c_str());
    // llama.cpp's logits differ from proctor's by ~1e-5 (F32 path) and its sums are in thread
    // order (seen: up to 8e-6 on a KLD percentile); the printout has 6 decimals (KLD, PPL) or 3
    // decimals of a percent (dp, same top p), 2 for the correlation. Same top p may move by a
    // position or two (0.11% each here) when an argmax is a near-tie.
    const bool percent = label.find("Δp") != std::string::npos;
    const double abs_tol = label == "Same top p"         ? 0.25
                           : label.rfind("Cor(", 0) == 0 ? 0.011
                           : percent                     ? 0.0021
                                                         : 2e-6;
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_NEAR(got[i], want[i], abs_tol + 1e-5 * std::fabs(want[i]))
          << what << ": " << label << " [" << i << "]";
    }
  }
}

class LlamaKldInterop : public ::testing::Test {
 protected:
  void SetUp() override {
    teacher_ = FixturesDir() / "stories260K" / "stories260K.gguf";
    text_ = FixturesDir() / "tinystories" / "tinystories_sample.txt";
    if (!fs::exists(teacher_) || !fs::exists(text_)) {
      GTEST_SKIP() << "fixtures absent: " << teacher_ << ", " << text_;
    }
    if (std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") != 0) {
      GTEST_SKIP() << "/usr/bin/python3 with numpy is not available (tools/perturb_gguf.py)";
    }
    const auto& llama_cpp = proctor::testing::Oracles("llama.cpp");
    if (!llama_cpp.problem.empty()) GTEST_SKIP() << "oracle unavailable: " << llama_cpp.problem;
    llama_perplexity_ = llama_cpp.Path("llama_perplexity");
    std::string out;
    work_ = fs::path(PROCTOR_BINARY_DIR) / "llama-kld-interop";
    fs::remove_all(work_);
    fs::create_directories(work_);
    candidate_ = work_ / "stories260K-rounded4.gguf";
    ASSERT_EQ(RunCommand(fmt::format("/usr/bin/python3 {}/tools/perturb_gguf.py {} {} 4",
                                     PROCTOR_SOURCE_DIR, teacher_.string(), candidate_.string()),
                         &out),
              0)
        << out;
  }

  // llama-perplexity with llama.cpp's exact F32 path: F32 KV cache, no flash attention, one
  // sequence per batch, no memory fitting. Its logger is asynchronous and deliberately leaked,
  // so the last lines can be lost at exit on a busy machine (llama.cpp issue 22142): the run is
  // repeated (up to 4 times) until the output holds `last_line`.
  std::string LlamaPerplexity(const std::string& args, const std::string& last_line) {
    std::string out;
    const std::string command = fmt::format(
        "{} -c 128 -b 128 -t 2 -ctk f32 -ctv f32 -fa off -fit off {}", llama_perplexity_, args);
    for (int attempt = 0; attempt < 4; ++attempt) {
      EXPECT_EQ(RunCommand(command, &out), 0) << command << "\n" << out;
      if (out.find(last_line) != std::string::npos) return out;
      std::printf("[ llama.cpp ] output lacks \"%s\" (lost at exit); running again\n",
                  last_line.c_str());
    }
    ADD_FAILURE() << "llama-perplexity's output never held \"" << last_line << "\":\n" << out;
    return out;
  }

  std::string Proctor(const std::string& args) {
    std::string out;
    const std::string command = fmt::format("{} --threads 2 {}", PROCTOR_BIN, args);
    EXPECT_EQ(RunCommand(command, &out), 0) << command << "\n" << out;
    return out;
  }

  fs::path teacher_, text_, candidate_, work_;
  std::string llama_perplexity_;
};

double FinalEstimate(const std::string& text, const std::string& pattern) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex(pattern))) return NAN;
  return std::stod(m[1].str());
}

TEST_F(LlamaKldInterop, BothToolsReadEachOthersBaseFilesWithMatchingStatistics) {
  // llama.cpp writes a base file from the text.
  const fs::path llama_base = work_ / "llama.kld";
  const std::string base_run =
      LlamaPerplexity(fmt::format("-m {} -f {} --kl-divergence-base {}", teacher_.string(),
                                  text_.string(), llama_base.string()),
                      "Final estimate: PPL");
  ASSERT_TRUE(fs::exists(llama_base)) << base_run;
  const double llama_ppl = FinalEstimate(base_run, R"(Final estimate: PPL = ([0-9.]+))");

  // (b) proctor reads llama.cpp's file.
  const std::string llama_on_llama =
      LlamaPerplexity(fmt::format("-m {} --kl-divergence --kl-divergence-base {}",
                                  candidate_.string(), llama_base.string()),
                      "Same top p:");
  const std::string proctor_on_llama = Proctor(fmt::format(
      "kl --reference-logits {} --candidate {}", llama_base.string(), candidate_.string()));
  CompareReports(ParseReport(llama_on_llama), ParseReport(proctor_on_llama),
                 "base written by llama.cpp");

  // (a) proctor writes a base file over the same tokens (the file's own, read by hand here).
  const std::string bytes = ReadFileToString(llama_base);
  int32_t header[3];
  std::memcpy(header, bytes.data() + 8, sizeof(header));
  const int32_t n_ctx = header[0], n_chunk = header[2];
  std::vector<int32_t> tokens(static_cast<size_t>(n_ctx) * n_chunk);
  std::memcpy(tokens.data(), bytes.data() + 20, tokens.size() * 4);
  WriteCorpus(work_ / "corpus", tokens, n_ctx, {{"tokenizer", teacher_.string()}});
  const fs::path proctor_base = work_ / "proctor.kld";
  const std::string dump_run =
      Proctor(fmt::format("dump --format llama.cpp --teacher {} --corpus {} --out {}",
                          teacher_.string(), (work_ / "corpus").string(), proctor_base.string()));
  const double proctor_ppl = FinalEstimate(dump_run, R"(exact f32 logits : ([0-9.]+))");
  std::printf("[ teacher PPL ] llama.cpp Final estimate %.6f, proctor exact %.6f\n", llama_ppl,
              proctor_ppl);
  EXPECT_NEAR(proctor_ppl, llama_ppl, 1e-4 * llama_ppl) << base_run << dump_run;

  // The two base files: same size, header and tokens; codes within a few units.
  const std::string ours = ReadFileToString(proctor_base);
  ASSERT_EQ(ours.size(), bytes.size());
  const size_t records_at = 20 + tokens.size() * 4;
  EXPECT_EQ(ours.substr(0, records_at), bytes.substr(0, records_at));
  const int32_t n_vocab = header[1];
  const size_t words = 2 * ((n_vocab + 1) / 2) + 4;
  int max_code_diff = 0;
  float max_scale_diff = 0, max_min_diff = 0;
  for (size_t at = records_at; at < bytes.size(); at += 2 * words) {
    float a[2], b[2];
    std::memcpy(a, bytes.data() + at, 8);
    std::memcpy(b, ours.data() + at, 8);
    max_scale_diff = std::max(max_scale_diff, std::fabs(a[0] - b[0]) * 65535);
    max_min_diff = std::max(max_min_diff, std::fabs(a[1] - b[1]));
    for (size_t i = 4; i < 4 + static_cast<size_t>(n_vocab); ++i) {
      uint16_t x, y;
      std::memcpy(&x, bytes.data() + at + 2 * i, 2);
      std::memcpy(&y, ours.data() + at + 2 * i, 2);
      max_code_diff = std::max(max_code_diff, std::abs(static_cast<int>(x) - y));
    }
  }
  std::printf(
      "[ base files ] max |code diff| %d, max |range diff| %.3g, max |min_log_prob diff| "
      "%.3g\n",
      max_code_diff, max_scale_diff, max_min_diff);
  EXPECT_LE(max_code_diff, 8);  // 8 codes = 2e-3 nats: logits agree to ~1e-4
  EXPECT_LE(max_min_diff, 1e-3f);

  const std::string llama_on_proctor =
      LlamaPerplexity(fmt::format("-m {} --kl-divergence --kl-divergence-base {}",
                                  candidate_.string(), proctor_base.string()),
                      "Same top p:");
  const std::string proctor_on_proctor = Proctor(fmt::format(
      "kl --reference-logits {} --candidate {}", proctor_base.string(), candidate_.string()));
  CompareReports(ParseReport(llama_on_proctor), ParseReport(proctor_on_proctor),
                 "base written by proctor");
}

}  // namespace
}  // namespace proctor
