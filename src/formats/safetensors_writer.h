// safetensors writer: a u64 header length, a JSON header, then the tensor bytes, written
// atomically (temporary file + rename) and streamed tensor by tensor (a tensor's bytes are asked
// for only when it is written, so a whole model never has to sit in memory).
//
// Layout written (docs/FORMATS.md section 7; huggingface/safetensors' format description):
//   u64 N (little-endian) | N bytes of JSON | data
// The JSON object lists every tensor as `name: {"dtype", "shape", "data_offsets": [begin, end]}`
// (offsets relative to the start of the data, end exclusive) plus "__metadata__" (string ->
// string) when given; keys are sorted (byte order) and the data of the tensors follows in that
// same order, back to back with no holes. The header is padded with spaces (0x20) so that
// 8 + N is a multiple of 8, as the format allows. Tensors are not aligned beyond that (as MLX's
// own writer does); readers must accept unaligned data.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/dtype.h"

namespace proctor {

struct SafetensorsTensorSpec {
  std::string name;
  DType dtype = DType::kF32;   // a plain type (F32, F16, BF16, U32, U8, I32, ...)
  std::vector<int64_t> shape;  // outermost first; {} is a scalar

  uint64_t Bytes() const;  // product of shape x element size
};

// The safetensors spelling of a plain dtype ("F32", "BF16", "U32", ...); Error for block types.
std::string_view SafetensorsDTypeName(DType dtype);

// Writes one tensor's bytes, in pieces if it likes: call `sink` with consecutive byte ranges
// whose total is exactly spec.Bytes() (the writer checks and fails otherwise).
using TensorByteSink = std::function<void(std::span<const uint8_t>)>;
using FillTensor =
    std::function<void(const SafetensorsTensorSpec& spec, const TensorByteSink& sink)>;

// The header bytes (u64 length + padded JSON) for these tensors, sorted by name. Error on
// duplicate names or non-plain dtypes.
std::string SafetensorsHeaderBytes(std::vector<SafetensorsTensorSpec> tensors,
                                   const std::map<std::string, std::string>& metadata);

// Writes `path` atomically. `fill` is called once per tensor, in sorted-name order. Returns the
// file size in bytes. Error (and no file) when fill produces the wrong byte count or throws.
uint64_t WriteSafetensors(const std::filesystem::path& path,
                          std::vector<SafetensorsTensorSpec> tensors,
                          const std::map<std::string, std::string>& metadata,
                          const FillTensor& fill);

}  // namespace proctor
