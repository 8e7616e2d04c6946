// proctor: measures what quantization costs a large language model.
#include <cstdio>
#include <exception>

#include <fmt/format.h>

#include <thread>

#include "cli/verbs.h"
#include "model/load.h"
#include "ops/matmul_kernel_choice.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace proctor::cli {
namespace {
GlobalOptions g_options;
}  // namespace

const GlobalOptions& Globals() { return g_options; }

std::function<void(const std::string&)> StepLog() {
  return [](const std::string& line) {
    if (Globals().quiet) return;
    fmt::print("{}\n", line);
    std::fflush(stdout);
  };
}

void OldSpellings::Check(const CLI::App& verb) const {
  for (const Entry& e : entries_) {
    if (e.option->count() == 0) continue;
    if (verb.count(e.new_name) > 0) {
      Fail("cli", "{} and {} are the same option (the first is its old spelling): give one",
           e.old_name, e.new_name);
    }
    // Printed with --quiet too: it is not progress.
    fmt::print(stderr, "note: {} is now {} (same meaning)\n", e.old_name, e.new_name);
  }
}

}  // namespace proctor::cli

int main(int argc, char** argv) {
  using namespace proctor;
  CLI::App app{
      "proctor: measures what quantization costs a large language model.\n"
      "Dump a teacher's top-k logits once, then score compressed candidates against it\n"
      "(KL divergence, top-1 agreement, captured mass, perplexity)."};
  app.set_version_flag("--version", PROCTOR_VERSION);
  app.require_subcommand(1);
  app.fallthrough();
  app.add_option("-t,--threads", cli::g_options.threads,
                 "Worker threads including the main one (0 = all cores). Results are "
                 "bit-identical for the same inputs and thread count.")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("-q,--quiet", cli::g_options.quiet, "No progress output on stderr");
  app.parse_complete_callback([] {
    // More threads than any machine proctor runs on would only exhaust the process limit (a
    // thread count is also how a result is reproduced, so the bound is not this machine's).
    constexpr int kMaxThreads = 1024;
    if (cli::g_options.threads > kMaxThreads) {
      Fail("cli",
           "--threads {} is more than proctor runs: at most {} (this machine has {} hardware "
           "threads; 0 uses them all)",
           cli::g_options.threads, kMaxThreads, std::thread::hardware_concurrency());
    }
    ThreadPool::SetGlobalThreads(cli::g_options.threads);
    ops::CpuFeatures::Host();  // reads PROCTOR_CPU_CAP: a bad value is an error before any work
  });

  // Large models say so before they load (every verb loads through LoadModel).
  SetLoadNotice([](const std::string& spec, uint64_t bytes) {
    if (cli::Globals().quiet || bytes < (uint64_t{1} << 29)) return;
    fmt::print(stderr, "loading {} ({:.1f} GB)...\n", spec, static_cast<double>(bytes) / 1e9);
    std::fflush(stderr);
  });
  cli::RegisterVersionVerb(app);
  cli::RegisterGenerateVerb(app);
  cli::RegisterLogitsVerb(app);
  cli::RegisterBenchVerb(app);
  cli::RegisterInspectVerb(app);
  cli::RegisterKlVerb(app);
  cli::RegisterDemoVerb(app);
  cli::RegisterCompareVerb(app);
  cli::RegisterChatVerb(app);
  cli::RegisterTokenizeVerb(app);
  cli::RegisterDumpVerb(app);
  cli::RegisterQuantizeVerb(app);
  cli::RegisterCorpusVerb(app);
  cli::RegisterPplVerb(app);
  cli::RegisterKvCurveVerb(app);
  cli::RegisterEvalVerb(app);
  cli::RegisterRunsVerb(app);
  cli::RegisterKlDiffVerb(app);
  cli::RegisterReportVerb(app);
  cli::RegisterMergeVerb(app);
  cli::RegisterSlurmVerb(app);
  cli::RegisterK8sVerb(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const Error& e) {
    std::fflush(stdout);
    fmt::print(stderr, "proctor: {}\n", EscapeControlCharacters(e.what()));
    return 1;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    fmt::print(stderr, "proctor: unexpected error: {}\n", EscapeControlCharacters(e.what()));
    return 1;
  }
  return 0;
}
