// safetensors reader: a u64 header length, a JSON header, then the tensor bytes (mmapped).
//
// Every header field is validated before any pointer is formed: the header length lies within the
// file, each dtype is known, shape x dtype size equals the byte range, ranges lie inside the data
// section and do not overlap. Data may be unaligned (MLX's writer does not align). Integer dtypes
// (U32, I32, U8, ...) load as raw tensors: MLX quantized weights are packed U32 plus scales.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "formats/weights.h"
#include "util/file.h"

namespace proctor {

struct SafetensorsHeader {
  std::vector<TensorInfo> tensors;  // data pointers into the parsed buffer; file = `file_name`
  std::map<std::string, std::string> metadata;  // "__metadata__" (string -> string)
};

// Parses and validates a whole safetensors file held in memory. `file_name` names the file in
// errors and in TensorInfo::file.
SafetensorsHeader ParseSafetensors(std::span<const uint8_t> file_bytes, std::string_view file_name);

// Maps `path` and adds its tensors to `store` (which keeps the mapping alive). Error if a tensor
// name is already in the store (a tensor listed in two shards).
void LoadSafetensorsInto(const std::filesystem::path& path, WeightStore& store);

// Loads model.safetensors or the shards named by model.safetensors.index.json in `dir` (every
// tensor of the index must be in the file it names). Error when neither exists.
void LoadSafetensorsDirectory(const std::filesystem::path& dir, WeightStore& store);

}  // namespace proctor
