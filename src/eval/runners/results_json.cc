#include "eval/runners/results_json.h"

#include <fmt/format.h>

#include <algorithm>

#include "eval/formats/corpus.h"
#include "eval/formats/ref_logits.h"
#include "model/load.h"
#include "util/error.h"
#include "util/file.h"
#include "util/sha256.h"
#include "util/thread_pool.h"

namespace proctor {

double ResultsTimings::other_seconds() const {
  return std::max(0.0, total_seconds - forward_seconds - scoring_seconds - io_seconds);
}

ResultsTimings& ResultsTimings::operator+=(const ResultsTimings& other) {
  total_seconds += other.total_seconds;
  forward_seconds += other.forward_seconds;
  scoring_seconds += other.scoring_seconds;
  io_seconds += other.io_seconds;
  load_seconds += other.load_seconds;
  hash_seconds += other.hash_seconds;
  return *this;
}

ResultsTimings ResultsTimingsFromJson(const nlohmann::json& j) {
  return {.total_seconds = j.at("total_seconds").get<double>(),
          .forward_seconds = j.at("forward_seconds").get<double>(),
          .scoring_seconds = j.at("scoring_seconds").get<double>(),
          .io_seconds = j.at("io_seconds").get<double>(),
          .load_seconds = j.at("load_seconds").get<double>(),
          .hash_seconds = j.at("hash_seconds").get<double>()};
}

nlohmann::ordered_json ResultsTimingsToJson(const ResultsTimings& t) {
  nlohmann::ordered_json j;
  j["total_seconds"] = t.total_seconds;
  j["forward_seconds"] = t.forward_seconds;
  j["scoring_seconds"] = t.scoring_seconds;
  j["io_seconds"] = t.io_seconds;
  j["other_seconds"] = t.other_seconds();
  j["load_seconds"] = t.load_seconds;
  j["hash_seconds"] = t.hash_seconds;
  return j;
}

std::string FormatTimings(const ResultsTimings& t, std::string_view work) {
  return fmt::format(
      "time: {:.2f} s total = forward {:.2f} s + {} {:.3f} s + I/O {:.3f} s + other {:.2f} s "
      "(loading {:.2f} s)\n",
      t.total_seconds, t.forward_seconds, work, t.scoring_seconds, t.io_seconds, t.other_seconds(),
      t.load_seconds);
}

std::vector<std::string> ProcessCommandLine() {
  std::vector<std::string> args;
  std::string bytes;
  try {
    bytes = ReadFileToString("/proc/self/cmdline");
  } catch (const Error&) {
    return args;
  }
  size_t pos = 0;
  while (pos < bytes.size()) {
    const size_t end = std::min(bytes.find('\0', pos), bytes.size());
    args.push_back(bytes.substr(pos, end - pos));
    pos = end + 1;
  }
  return args;
}

nlohmann::ordered_json DescribeFileInput(const std::string& role,
                                         const std::filesystem::path& path) {
  nlohmann::ordered_json j;
  j["role"] = role;
  j["kind"] = "file";
  j["path"] = path.string();
  j["bytes"] = std::filesystem::file_size(path);
  j["sha256"] = Sha256FileHex(path);
  return j;
}

nlohmann::ordered_json DescribeCorpusInput(const std::string& role, const Corpus& corpus) {
  nlohmann::ordered_json j;
  j["role"] = role;
  j["kind"] = "corpus";
  j["path"] = corpus.dir.string();
  j["tokens_sha256"] = corpus.tokens_sha256;
  j["manifest_sha256"] = Sha256FileHex(corpus.dir / "manifest.json");
  j["tokenizer"] = corpus.tokenizer.empty() ? nlohmann::ordered_json(nullptr)
                                            : nlohmann::ordered_json(corpus.tokenizer);
  j["vocab_size"] = corpus.vocab_size > 0 ? nlohmann::ordered_json(corpus.vocab_size)
                                          : nlohmann::ordered_json(nullptr);
  j["n_seqs"] = corpus.n_seqs;
  j["ctx_len"] = corpus.ctx_len;
  return j;
}

nlohmann::ordered_json DescribeCorpusInput(const std::string& role,
                                           const std::filesystem::path& dir) {
  return DescribeCorpusInput(role, ReadCorpus(dir));
}

nlohmann::ordered_json DescribeReferenceLogitsInput(const std::string& role,
                                                    const ReferenceLogitsDump& dump) {
  const ReferenceLogitsManifest& m = dump.manifest();
  nlohmann::ordered_json j;
  j["role"] = role;
  j["kind"] = "reference-logits";
  j["path"] = dump.dir().string();
  j["manifest_sha256"] = Sha256FileHex(dump.ManifestPath());
  j["tokens_sha256"] = Sha256FileHex(dump.TokensPath());
  j["corpus_sha256"] = m.corpus_sha256;
  j["model"] = m.model;
  j["top_k"] = m.top_k;
  j["n_seqs"] = m.n_seqs;
  j["ctx_len"] = m.ctx_len;
  return j;
}

nlohmann::ordered_json DescribeReferenceLogitsInput(const std::string& role,
                                                    const std::filesystem::path& dir) {
  return DescribeReferenceLogitsInput(role, ReferenceLogitsDump::Open(dir));
}

nlohmann::ordered_json DescribeModelFiles(const std::string& role, const std::string& spec,
                                          const std::filesystem::path& path) {
  nlohmann::ordered_json j;
  j["role"] = role;
  j["spec"] = spec;
  j["path"] = path.string();
  if (std::filesystem::is_regular_file(path)) {
    j["kind"] = "model-file";
    j["bytes"] = std::filesystem::file_size(path);
    j["sha256"] = Sha256FileHex(path);
    return j;
  }
  j["kind"] = "model-directory";
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(path)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const auto& f : files) {
    list.push_back({{"name", f.filename().string()},
                    {"bytes", std::filesystem::file_size(f)},
                    {"sha256", Sha256FileHex(f)}});
  }
  j["files"] = list;
  return j;
}

nlohmann::ordered_json DescribeModelInput(const std::string& role, const std::string& spec) {
  LocatedModel located;
  try {
    located = LocateModel(spec);
  } catch (const Error&) {  // not a model on disk (a synthetic name): nothing to hash
    return {{"role", role}, {"kind", "unresolved"}, {"spec", spec}};
  }
  return DescribeModelFiles(role, spec, located.path);
}

nlohmann::ordered_json ResultsEnvelopeToJson(const ResultsEnvelope& e) {
  nlohmann::ordered_json j;
  j["schema"] = kResultsSchema;
  j["schema_version"] = kResultsSchemaVersion;
  j["command"] = e.command;
  j["proctor_version"] = PROCTOR_VERSION;
  j["threads"] = e.threads > 0 ? e.threads : ThreadPool::Global().num_threads();
  j["command_line"] = e.command_line.empty() ? ProcessCommandLine() : e.command_line;
  j["created"] = UtcNow();
  j["inputs"] = e.inputs;
  j["settings"] = e.settings;
  j["results"] = e.results;
  j["timings"] = ResultsTimingsToJson(e.timings);
  j["warnings"] = e.warnings;
  j["outputs"] = e.outputs;
  return j;
}

void WriteResultsJson(const std::filesystem::path& path, const ResultsEnvelope& envelope) {
  WriteFileAtomic(path, ResultsEnvelopeToJson(envelope).dump(2) + "\n");
}

}  // namespace proctor
