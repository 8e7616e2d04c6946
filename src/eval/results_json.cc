#include "eval/results_json.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>

#include "model/load.h"
#include "util/error.h"
#include "util/file.h"
#include "util/sha256.h"
#include "util/thread_pool.h"

namespace proctor {
namespace {

constexpr const char* kComponent = "results";

nlohmann::json ParseManifest(const std::filesystem::path& path) {
  if (!std::filesystem::exists(path)) Fail(kComponent, "missing '{}'", path.string());
  auto j = nlohmann::json::parse(ReadFileToString(path), nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    Fail(kComponent, "'{}' is not a JSON object", path.string());
  }
  return j;
}

nlohmann::ordered_json Copy(const nlohmann::json& j, const char* key) {
  return j.contains(key) ? nlohmann::ordered_json(j[key]) : nlohmann::ordered_json(nullptr);
}

}  // namespace

double ResultsTimings::other_seconds() const {
  return std::max(0.0, total_seconds - forward_seconds - scoring_seconds - io_seconds);
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

nlohmann::ordered_json DescribeCorpusInput(const std::string& role,
                                           const std::filesystem::path& dir) {
  const auto manifest_path = dir / "manifest.json";
  const nlohmann::json m = ParseManifest(manifest_path);
  nlohmann::ordered_json j;
  j["role"] = role;
  j["kind"] = "corpus";
  j["path"] = dir.string();
  j["tokens_sha256"] = Copy(m, "tokens_sha256");
  j["manifest_sha256"] = Sha256FileHex(manifest_path);
  j["tokenizer"] = Copy(m, "tokenizer");
  j["vocab_size"] = Copy(m, "vocab_size");
  j["n_seqs"] = Copy(m, "n_seqs");
  j["ctx_len"] = Copy(m, "ctx_len");
  return j;
}

nlohmann::ordered_json DescribeReferenceLogitsInput(const std::string& role,
                                                    const std::filesystem::path& dir) {
  const auto manifest_path = dir / "manifest.json";
  const nlohmann::json m = ParseManifest(manifest_path);
  nlohmann::ordered_json j;
  j["role"] = role;
  j["kind"] = "reference-logits";
  j["path"] = dir.string();
  j["manifest_sha256"] = Sha256FileHex(manifest_path);
  j["tokens_sha256"] = std::filesystem::exists(dir / "tokens.bin")
                           ? nlohmann::ordered_json(Sha256FileHex(dir / "tokens.bin"))
                           : nlohmann::ordered_json(nullptr);
  j["corpus_sha256"] = Copy(m, "corpus_sha256");
  j["model"] = Copy(m, "model");
  j["top_k"] = Copy(m, "top_k");
  j["n_seqs"] = Copy(m, "n_seqs");
  j["ctx_len"] = Copy(m, "ctx_len");
  return j;
}

nlohmann::ordered_json DescribeModelInput(const std::string& role, const std::string& spec) {
  nlohmann::ordered_json j;
  j["role"] = role;
  LocatedModel located;
  try {
    located = LocateModel(spec);
  } catch (const Error&) {
    j["kind"] = "unresolved";
    j["spec"] = spec;
    return j;
  }
  j["spec"] = spec;
  j["path"] = located.path.string();
  if (std::filesystem::is_regular_file(located.path)) {
    j["kind"] = "model-file";
    j["bytes"] = std::filesystem::file_size(located.path);
    j["sha256"] = Sha256FileHex(located.path);
    return j;
  }
  j["kind"] = "model-directory";
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(located.path)) {
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

ScopedSeconds::ScopedSeconds(double* sink)
    : sink_(sink),
      start_ns_(std::chrono::duration_cast<std::chrono::nanoseconds>(
                    std::chrono::steady_clock::now().time_since_epoch())
                    .count()) {}

ScopedSeconds::~ScopedSeconds() {
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  *sink_ += static_cast<double>(now - start_ns_) * 1e-9;
}

std::string UtcNow() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

double MonotonicSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace proctor
