// The results file every eval command writes with `--json FILE` (kl, dump, ppl, corpus): one
// envelope (schema "proctor-results", schema_version 1; docs/results-json.md) around the
// command's own statistics.
//
// Usage by a command:
//   ResultsEnvelope env{.command = "kl"};
//   env.inputs.push_back(DescribeReferenceLogitsInput("reference_logits", dir));
//   env.inputs.push_back(DescribeModelInput("candidate", spec));
//   env.settings = {{"chunk_size", 512}, ...};
//   env.results = KlEvalResultToJson(result);          // every statistic
//   env.timings = result.timings;                      // forward / scoring / I/O split
//   WriteResultsJson(path, env);                       // atomic (temp + rename)
// The command line defaults to this process's argv (/proc/self/cmdline), the thread count to
// ThreadPool::Global()'s.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "util/timing.h"  // ScopedSeconds for the timing split

namespace proctor {

struct Corpus;              // eval/formats/corpus.h
class ReferenceLogitsDump;  // eval/formats/ref_logits.h

inline constexpr const char* kResultsSchema = "proctor-results";
inline constexpr int kResultsSchemaVersion = 1;

// Wall time of a run split by what it was spent on (seconds). forward: the model's teacher-forced
// forward (logits included); scoring: statistics computed from logits (KL terms, top-k selection
// of a dump, NLL); io: reading and writing dumps, corpora and per-position files; other: the
// rest of total (model loading, input hashing, setup).
struct ResultsTimings {
  double total_seconds = 0;
  double forward_seconds = 0;
  double scoring_seconds = 0;
  double io_seconds = 0;
  double load_seconds = 0;       // model loading (part of "other")
  double hash_seconds = 0;       // sha256 of the inputs (part of "other"): DescribeInputsAfterRun
  double other_seconds() const;  // total - forward - scoring - io (never below 0)
  // Adds every field (a merge's timings are the sum of its shards').
  ResultsTimings& operator+=(const ResultsTimings& other);
};

nlohmann::ordered_json ResultsTimingsToJson(const ResultsTimings& timings);
// The inverse (a results file's "timings"); nlohmann's exception for a missing field.
ResultsTimings ResultsTimingsFromJson(const nlohmann::json& json);
// One line for the terminal: "time: T s total = forward F s + <work> S s + I/O I s + other O s
// (loading L s)" (`work` names what the scoring time went to: "scoring", "top-k/logsumexp").
std::string FormatTimings(const ResultsTimings& timings, std::string_view work = "scoring");

struct ResultsEnvelope {
  std::string command{};                    // "kl", "dump", "ppl", "corpus", ...
  std::vector<std::string> command_line{};  // empty: ProcessCommandLine()
  int threads = 0;                          // 0: ThreadPool::Global().num_threads()
  nlohmann::ordered_json inputs = nlohmann::ordered_json::array();  // Describe*Input entries
  nlohmann::ordered_json settings = nlohmann::ordered_json::object();
  nlohmann::ordered_json results = nlohmann::ordered_json::object();  // every statistic
  ResultsTimings timings{};
  std::vector<std::string> warnings{};
  nlohmann::ordered_json outputs = nlohmann::ordered_json::array();  // files written besides this
};

// This process's argv from /proc/self/cmdline (empty if unreadable).
std::vector<std::string> ProcessCommandLine();

// An input file: {"role", "kind": "file", "path", "bytes", "sha256"} (sha256 of the bytes,
// streamed).
nlohmann::ordered_json DescribeFileInput(const std::string& role,
                                         const std::filesystem::path& path);
// A tokenized corpus (FORMATS.md section 4), opened: {"role", "kind": "corpus", "path",
// "tokens_sha256" (verified when it was read), "manifest_sha256", "tokenizer", "vocab_size",
// "n_seqs", "ctx_len"}. The path form reads the corpus first (ReadCorpus; its errors).
nlohmann::ordered_json DescribeCorpusInput(const std::string& role, const Corpus& corpus);
nlohmann::ordered_json DescribeCorpusInput(const std::string& role,
                                           const std::filesystem::path& dir);
// A reference-logits dump, opened: {"role", "kind": "reference-logits", "path",
// "manifest_sha256", "tokens_sha256" (of tokens.bin), "corpus_sha256", "model", "top_k",
// "n_seqs", "ctx_len"}. The sequence files are not hashed (they are large; the manifest and the
// tokens pin what was dumped). The path form opens the dump first (its errors).
nlohmann::ordered_json DescribeReferenceLogitsInput(const std::string& role,
                                                    const ReferenceLogitsDump& dump);
nlohmann::ordered_json DescribeReferenceLogitsInput(const std::string& role,
                                                    const std::filesystem::path& dir);
// A located model (`path`: its directory or .gguf file): a .gguf is a file input ("kind":
// "model-file", "bytes", "sha256"); a directory lists every regular file directly in it with
// its bytes and sha256 ("kind": "model-directory", "files": [...]). `spec` keeps what the user
// passed.
nlohmann::ordered_json DescribeModelFiles(const std::string& role, const std::string& spec,
                                          const std::filesystem::path& path);
// DescribeModelFiles of a spec resolved with LocateModel (model/load.h); a spec that is not a
// model on disk (a synthetic name) gives {"role", "kind": "unresolved", "spec"}.
nlohmann::ordered_json DescribeModelInput(const std::string& role, const std::string& spec);

// A run's inputs are hashed after its own clock stopped (hashing is not scoring): when `wanted`,
// runs `describe` (which appends Describe*Input entries) timed as timings.hash_seconds; that
// time is then added to timings.total_seconds.
template <class Describe>
void DescribeInputsAfterRun(bool wanted, ResultsTimings& timings, Describe&& describe) {
  if (wanted) {
    ScopedSeconds hashing(&timings.hash_seconds);
    describe();
  }
  timings.total_seconds += timings.hash_seconds;
}

// The whole document: {"schema", "schema_version", "command", "proctor_version", "threads",
// "command_line", "created" (UTC), "inputs", "settings", "results", "timings", "warnings",
// "outputs"}.
nlohmann::ordered_json ResultsEnvelopeToJson(const ResultsEnvelope& envelope);

// Writes ResultsEnvelopeToJson(envelope) pretty-printed, atomically (temp file + rename).
void WriteResultsJson(const std::filesystem::path& path, const ResultsEnvelope& envelope);

}  // namespace proctor
