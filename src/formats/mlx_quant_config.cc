// Parsing of config.json's MLX quantization block (see mlx_quant_config.h).
#include "formats/mlx_quant_config.h"

#include <fmt/format.h>

#include "util/error.h"

namespace proctor {
namespace {

using nlohmann::json;

int ReadInt(const json& value, std::string_view origin, std::string_view where) {
  if (!value.is_number_integer()) {
    Fail("model", "{}: {} should be an integer, got {}", origin, where, value.dump());
  }
  return value.get<int>();
}

quant::MlxMode ReadMode(const json& value, std::string_view origin, std::string_view where) {
  const std::optional<quant::MlxMode> mode =
      value.is_string() ? quant::ParseMlxMode(value.get<std::string>()) : std::nullopt;
  if (!mode) {
    Fail("model", "{}: {} is {}; expected \"affine\", \"mxfp4\", \"mxfp8\" or \"nvfp4\"", origin,
         where, value.dump());
  }
  return *mode;
}

// A module's parameters: the override object's own fields, the defaults for the missing ones.
MlxQuantParams ReadOverride(const json& object, const MlxQuantization& q, std::string_view origin,
                            const std::string& module) {
  const std::string where = fmt::format("\"{}\".\"{}\"", q.key, module);
  MlxQuantParams params;
  params.mode = q.mode;
  std::optional<int> bits = q.bits, group_size = q.group_size;
  for (const auto& [field, value] : object.items()) {
    if (field == "bits") {
      bits = ReadInt(value, origin, where + ".bits");
    } else if (field == "group_size") {
      group_size = ReadInt(value, origin, where + ".group_size");
    } else if (field == "mode") {
      params.mode = ReadMode(value, origin, where + ".mode");
    } else {
      Fail("model", "{}: {} has an unknown field \"{}\" (expected bits, group_size, mode)", origin,
           where, field);
    }
  }
  if (!bits || !group_size) {
    Fail("model", "{}: {} gives no {} and the block has no default", origin, where,
         !bits ? "bits" : "group_size");
  }
  params.bits = *bits;
  params.group_size = *group_size;
  quant::CheckMlxParams(params.mode, params.bits, params.group_size,
                        fmt::format("{}: {}", origin, where));
  return params;
}

}  // namespace

std::optional<MlxQuantization> ParseMlxQuantization(const json& config_json,
                                                    std::string_view origin) {
  MlxQuantization q;
  const json* block = nullptr;
  for (const char* key : {"quantization", "quantization_config"}) {
    auto it = config_json.find(key);
    if (it != config_json.end() && !it->is_null()) {
      block = &*it;
      q.key = key;
      break;
    }
  }
  if (block == nullptr) return std::nullopt;
  if (!block->is_object()) {
    Fail("model", "{}: \"{}\" should be an object, got {}", origin, q.key, block->dump());
  }
  if (auto it = block->find("quant_method"); it != block->end()) {
    Fail("model",
         "{}: \"{}\" has quant_method {}: only MLX quantization (packed .weight with .scales / "
         ".biases) is supported",
         origin, q.key, it->dump());
  }
  // Defaults first: overrides fall back to them.
  for (const auto& [field, value] : block->items()) {
    if (field == "bits") q.bits = ReadInt(value, origin, fmt::format("\"{}\".bits", q.key));
    if (field == "group_size") {
      q.group_size = ReadInt(value, origin, fmt::format("\"{}\".group_size", q.key));
    }
    if (field == "mode") q.mode = ReadMode(value, origin, fmt::format("\"{}\".mode", q.key));
  }
  if (q.bits && q.group_size) {
    quant::CheckMlxParams(q.mode, *q.bits, *q.group_size,
                          fmt::format("{}: \"{}\" defaults", origin, q.key));
  }
  for (const auto& [field, value] : block->items()) {
    if (field == "bits" || field == "group_size" || field == "mode") continue;
    if (value.is_object()) {
      q.overrides[field] = ReadOverride(value, q, origin, field);
    } else if (value.is_boolean()) {
      q.overrides[field] = value.get<bool>()
                               ? std::optional(ReadOverride(json::object(), q, origin, field))
                               : std::nullopt;
    } else {
      Fail("model",
           "{}: \"{}\".\"{}\" is {}; a module override is an object (bits, group_size, mode) or "
           "false",
           origin, q.key, field, value.dump());
    }
  }
  return q;
}

}  // namespace proctor
