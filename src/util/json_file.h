// A JSON file read whole (config.json, tokenizer.json, an index), with the one error a user sees
// for a file that is not JSON.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string_view>

namespace proctor {

// The parsed file; Error("[component] <path>: not valid JSON: <parser message>") when it does not
// parse, and ReadFileToString's Error when it cannot be read.
nlohmann::json ReadJsonFile(const std::filesystem::path& path, std::string_view component);

}  // namespace proctor
