// The quality database: every task-eval run kept in one SQLite file (docs/task-evals.md), one
// row per (run, task) with its per-item outcomes, so two runs can be paired on the same items
// later (`proctor runs compare`). Safe for concurrent writers: WAL journal, a 30 s busy
// timeout, each run written in one IMMEDIATE transaction.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

struct sqlite3;

namespace proctor {

struct RunRecord {
  int64_t id = 0;       // assigned by Insert
  std::string created;  // UTC "YYYY-MM-DDTHH:MM:SSZ"
  std::string task;
  std::string model;         // the model spec, or the endpoint URL
  std::string model_sha256;  // of the file, or of a folder's sha256sum listing; "" for a server
  std::string proctor_version;
  nlohmann::ordered_json settings = nlohmann::ordered_json::object();
  int64_t n = 0;
  int64_t correct = 0;
  double accuracy = 0;
  double standard_error = 0;
  nlohmann::ordered_json kl;          // KL statistics when a KL ran; null otherwise
  std::optional<double> capability;   // the capability score when one was computed
  std::optional<int64_t> disk_bytes;  // the weights' size on disk; unset for a server
  std::string machine;                // DescribeMachine()
  // (item id, outcome name: correct, wrong, unscorable, request_error), in task order.
  std::vector<std::pair<std::string, std::string>> items;
};

class RunDatabase {
 public:
  // Opens or creates `path` (its folder too). Error("[runs] ...") naming the file when it is not
  // a proctor run database or was written by a newer schema.
  static RunDatabase Open(const std::filesystem::path& path);
  RunDatabase(RunDatabase&&) noexcept;
  RunDatabase& operator=(RunDatabase&&) noexcept;
  ~RunDatabase();

  // Stores the run and its items; returns its id.
  int64_t Insert(const RunRecord& record);
  // The newest `limit` runs (0: all), newest first, without their items.
  std::vector<RunRecord> List(int64_t limit = 0) const;
  // One run with its items; nullopt when there is no such id.
  std::optional<RunRecord> Get(int64_t id) const;

  const std::filesystem::path& path() const { return path_; }

 private:
  RunDatabase() = default;
  sqlite3* db_ = nullptr;
  std::filesystem::path path_;
};

// $XDG_CACHE_HOME/proctor/runs.sqlite, else ~/.cache/proctor/runs.sqlite.
std::filesystem::path DefaultRunDatabasePath();

// The identity of a model as EvalModel::Describe gives it: {sha256, disk bytes of the weights}.
// A .gguf: its sha256 and size. A folder: the sha256 of its "SHA256  NAME\n" listing (sha256sum's
// form, files sorted) and the size of its .safetensors files.
std::pair<std::string, std::optional<int64_t>> ModelIdentity(
    const nlohmann::ordered_json& description);

}  // namespace proctor
