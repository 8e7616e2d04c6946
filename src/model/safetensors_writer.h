// safetensors writer: the inverse of safetensors.h. Tensors of plain types (F32, F16, BF16, the
// integer types) are written in the order given, back to back after a JSON header padded with
// spaces to a multiple of 8 bytes (as the Python `safetensors` library writes it), atomically
// (temp file + rename).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "tensor/dtype.h"

namespace proctor {

struct SafetensorsEntry {
  std::string name;
  DType type = DType::kF32;
  std::vector<int64_t> shape;     // outermost first
  std::span<const uint8_t> data;  // exactly product(shape) elements of `type`
};

// The safetensors dtype name of a plain type ("F32", "BF16", "U32", ...); Error for block types.
std::string SafetensorsDTypeName(DType type);

// Error("[safetensors] ...") for a block type, a data size that does not match the shape, or a
// repeated name.
void WriteSafetensors(const std::filesystem::path& path,
                      const std::vector<SafetensorsEntry>& tensors,
                      const std::map<std::string, std::string>& metadata = {{"format", "pt"}});

}  // namespace proctor
