// Element types of stored tensors and their size rules.
//
// Plain types (F32, F16, BF16, I32, U32, U8...) have one element per "block". Block-quantized
// types (GGUF Q8_0, Q4_0, ...) store `block_elems` values in `block_bytes` bytes; a row's length
// must be a multiple of block_elems. MLX affine quantization is not a dtype here: its packed
// words are U32 tensors plus scales/biases tensors (see quant/).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace proctor {

enum class DType : uint8_t {
  kF32,
  kF16,
  kBF16,
  kF64,
  kI8,
  kU8,
  kI16,
  kU16,
  kI32,
  kU32,
  kI64,
  kU64,
  kBool,
  // GGUF block types (more are added by the quantization work).
  kQ8_0,
  kQ4_0,
  kQ4_1,
  kQ5_0,
  kQ5_1,
  kQ2_K,
  kQ3_K,
  kQ4_K,
  kQ5_K,
  kQ6_K,
  kIQ4_NL,
  kCount,
};

struct DTypeInfo {
  std::string_view name;  // "f32", "bf16", "q8_0", ...
  size_t block_elems;     // values per block (1 for plain types)
  size_t block_bytes;     // bytes per block
  bool is_float;          // a plain floating type usable directly as weights
};

const DTypeInfo& Info(DType t);
inline std::string_view Name(DType t) { return Info(t).name; }

// Bytes needed for n elements; n must be a multiple of the block size (CHECKed).
size_t BytesFor(DType t, uint64_t n);
// True when n elements fit whole blocks of t.
bool FitsBlocks(DType t, uint64_t n);

// Parses "f32", "F32", "bf16", "BF16", "q8_0", ... (case-insensitive).
std::optional<DType> ParseDType(std::string_view name);

// Element i of float data stored as `type` (f32, f16 or bf16; CHECKed), as a float.
float FloatElement(DType type, const uint8_t* data, size_t i);

}  // namespace proctor
