// Every `proctor <verb>` registers itself here: one file per verb, flags declared once.
//
// A Register function adds a subcommand to the app and sets its callback. Callbacks throw
// proctor::Error for user-facing problems; main() prints the message and exits with status 1.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace proctor::cli {

// Options every verb can read (set by global flags before the verb runs).
struct GlobalOptions {
  int threads = 0;     // 0: all cores
  bool quiet = false;  // no progress output
};
const GlobalOptions& Globals();

// A pipeline's step log for the terminal: each line on stdout, flushed; nothing with --quiet.
std::function<void(const std::string&)> StepLog();

// The flags' old spellings (one vocabulary across verbs: --ctx-len, --n-seqs, MODEL or --model):
// each old name is a hidden option writing the same variable; Check() prints "note: --n is now
// --n-seqs (same meaning)" for each one used, and refuses both spellings at once.
class OldSpellings {
 public:
  template <typename T>
  void Add(CLI::App& verb, const std::string& old_name, const std::string& new_name, T& target) {
    entries_.push_back({verb.add_option(old_name, target)->group(""), old_name, new_name});
  }
  void Check(const CLI::App& verb) const;

 private:
  struct Entry {
    CLI::Option* option;
    std::string old_name, new_name;
  };
  std::vector<Entry> entries_;
};

void RegisterVersionVerb(CLI::App& app);
void RegisterGenerateVerb(CLI::App& app);
void RegisterLogitsVerb(CLI::App& app);
void RegisterBenchVerb(CLI::App& app);
void RegisterInspectVerb(CLI::App& app);
void RegisterKlVerb(CLI::App& app);
void RegisterDemoVerb(CLI::App& app);
void RegisterCompareVerb(CLI::App& app);
void RegisterChatVerb(CLI::App& app);
void RegisterTokenizeVerb(CLI::App& app);
void RegisterDumpVerb(CLI::App& app);
void RegisterQuantizeVerb(CLI::App& app);
void RegisterCorpusVerb(CLI::App& app);
void RegisterPplVerb(CLI::App& app);
void RegisterKvCurveVerb(CLI::App& app);
void RegisterEvalVerb(CLI::App& app);
void RegisterRunsVerb(CLI::App& app);
void RegisterKlDiffVerb(CLI::App& app);
void RegisterReportVerb(CLI::App& app);
void RegisterMergeVerb(CLI::App& app);
void RegisterSlurmVerb(CLI::App& app);
void RegisterK8sVerb(CLI::App& app);

}  // namespace proctor::cli
