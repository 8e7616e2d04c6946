// `proctor demo`: the whole saved-teacher loop on synthetic models, in a few seconds and with
// no downloads: dump a synthetic teacher, check the dump, score synthetic candidates (the
// teacher plus noise of three sizes) through the same scorer `proctor kl` uses.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>

#include "cli/verbs.h"
#include "eval/kl_eval.h"
#include "eval/ref_logits_integrity.h"
#include "eval/synthetic_lm.h"

namespace proctor::cli {

void RegisterDemoVerb(CLI::App& app) {
  struct Args {
    std::string dir;
    int64_t vocab = 32000;
    int64_t n_seqs = 4;
    int64_t ctx_len = 128;
    int64_t top_k = 256;
  };
  auto args = std::make_shared<Args>();
  auto* verb = app.add_subcommand(
      "demo", "Dump a synthetic teacher and score synthetic candidates against it (no model "
              "needed; a few seconds)");
  verb->add_option("--dir", args->dir,
                   "Write the synthetic dump here and keep it (default: a temporary directory, "
                   "removed afterwards)");
  verb->add_option("--vocab", args->vocab, "Vocabulary size (default 32000)")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 20));
  verb->add_option("--n-seqs", args->n_seqs, "Sequences (default 4)")
      ->check(CLI::Range(int64_t{1}, int64_t{4096}));
  verb->add_option("--ctx", args->ctx_len, "Tokens per sequence (default 128)")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 20));
  verb->add_option("--top-k", args->top_k, "Logits kept per position (default 256)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  verb->callback([args] {
    const auto start = std::chrono::steady_clock::now();
    const bool keep = !args->dir.empty();
    const std::filesystem::path dir =
        keep ? std::filesystem::path(args->dir)
             : std::filesystem::temp_directory_path() / fmt::format("proctor-demo-{}", ::getpid());
    if (!keep) std::filesystem::remove_all(dir);
    struct Cleanup {
      std::filesystem::path dir;
      bool active;
      ~Cleanup() {
        std::error_code ec;
        if (active) std::filesystem::remove_all(dir, ec);
      }
    } cleanup{dir, !keep};
    if (args->top_k > args->vocab) args->top_k = args->vocab;

    fmt::print("proctor demo: SYNTHETIC models only (no real LLM is loaded; nothing is downloaded)\n");
    fmt::print("  teacher: a seeded synthetic LM (vocab {}, Zipf-shaped logits from a hash of the "
               "token prefix)\n", args->vocab);
    fmt::print("  candidates: the same teacher plus Gaussian noise on every logit (sigma 0.05, "
               "0.2, 0.5), standing in for quantized models\n\n");
    const SyntheticLm teacher(args->vocab, /*seed=*/2024);
    const auto tokens = SyntheticTokens(args->n_seqs, args->ctx_len, args->vocab, 7);
    WriteSyntheticDump(dir, teacher, tokens, args->n_seqs, args->ctx_len, args->top_k,
                       "synthetic-teacher", "synthetic (deterministic)");
    const ReferenceLogitsDump dump = ReferenceLogitsDump::Open(dir);
    const IntegrityReport report = CheckReferenceLogitsIntegrity(dump);
    fmt::print("1. dumped the teacher: {} sequences x {} positions, top_k {} -> {}\n",
               dump.n_seqs(), dump.positions(), dump.top_k(), dir.string());
    fmt::print("2. integrity check (`proctor inspect`): OK, {} records\n", report.records_checked);
    fmt::print("3. scored each candidate against the dump (`proctor kl`, chunks of 32):\n\n");

    struct Candidate {
      std::string name;
      float sigma;
    };
    const Candidate candidates[] = {{"teacher itself", 0.0f},
                                    {"noise sigma 0.05", 0.05f},
                                    {"noise sigma 0.2", 0.2f},
                                    {"noise sigma 0.5", 0.5f}};
    std::vector<KlEvalResult> results;
    for (const auto& c : candidates) {
      const SyntheticLm model(args->vocab, 2024, c.sigma, /*noise_seed=*/99);
      results.push_back(EvaluateKlVsReferenceLogits({.reference_dir = dir,
                                                     .candidate = c.name,
                                                     .chunk_size = 32,
                                                     .forward = model.Forward(),
                                                     .quiet = true}));
    }
    fmt::print("{}\n", FormatKlTable(results));
    fmt::print(
        "How to read it: KL is KL(teacher || candidate) over the teacher's top-{} (nats per "
        "position, mean of per-sequence means +- its standard error); tail KL adds the mass outside "
        "the top-k as one bin (a lower bound on the full KL); top-1 is how often the candidate's "
        "argmax matches the teacher's; mass is the teacher probability inside the top-k. The "
        "teacher scored against itself shows the fp16 storage floor of the dump: no number "
        "from this dump is meaningful below it.\n",
        args->top_k);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    fmt::print("demo finished in {:.1f} s{}\n", seconds,
               keep ? fmt::format("; the dump is kept in {}", dir.string()) : "");
  });
}

}  // namespace proctor::cli
