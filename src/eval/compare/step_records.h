// What a resumable run has finished: one small JSON file per step in a directory,
// {"key": K, "result": R}. K holds everything the step's result depends on (sha256 of its
// inputs, its settings); a later run asking for the same K takes R instead of redoing the step.
// Records are written atomically, so a run killed at any moment leaves each one whole or absent.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace proctor {

class StepRecords {
 public:
  explicit StepRecords(std::filesystem::path dir) : dir_(std::move(dir)) {}

  // The recorded result of `step` when its record exists, parses and holds exactly `key`.
  std::optional<nlohmann::ordered_json> Find(const std::string& step,
                                             const nlohmann::ordered_json& key) const;
  // Records (replaces) the step's key and result.
  void Record(const std::string& step, const nlohmann::ordered_json& key,
              const nlohmann::ordered_json& result) const;

 private:
  std::filesystem::path PathOf(const std::string& step) const { return dir_ / (step + ".json"); }

  std::filesystem::path dir_;
};

}  // namespace proctor
