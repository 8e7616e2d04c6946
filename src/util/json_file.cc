#include "util/json_file.h"

#include "util/error.h"
#include "util/file.h"

namespace proctor {

nlohmann::json ReadJsonFile(const std::filesystem::path& path, std::string_view component) {
  const std::string text = ReadFileToString(path);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    Fail(component, "{}: not valid JSON: {}", path.string(), e.what());
  }
}

}  // namespace proctor
