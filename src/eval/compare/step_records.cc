#include "eval/compare/step_records.h"

#include "util/file.h"

namespace proctor {

std::optional<nlohmann::ordered_json> StepRecords::Find(const std::string& step,
                                                        const nlohmann::ordered_json& key) const {
  const std::filesystem::path path = PathOf(step);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return std::nullopt;
  const nlohmann::ordered_json record =
      nlohmann::ordered_json::parse(ReadFileToString(path), nullptr, /*allow_exceptions=*/false);
  if (!record.is_object() || !record.contains("key") || !record.contains("result") ||
      record["key"] != key) {
    return std::nullopt;
  }
  return record["result"];
}

void StepRecords::Record(const std::string& step, const nlohmann::ordered_json& key,
                         const nlohmann::ordered_json& result) const {
  std::filesystem::create_directories(dir_);
  const nlohmann::ordered_json record = {{"key", key}, {"result", result}};
  WriteFileAtomic(PathOf(step), record.dump(1) + "\n");
}

}  // namespace proctor
