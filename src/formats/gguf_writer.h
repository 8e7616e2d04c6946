// GGUF writer (version 3): metadata key/values and tensors, written atomically and streamed
// tensor by tensor (a tensor's bytes are asked for only when it is written).
//
// Layout written (ggml's gguf.h; docs/FORMATS.md): "GGUF", u32 version 3, u64 tensor count,
// u64 key/value count, the key/values (u64-length key, u32 type, value), the tensor infos (name,
// u32 dimension count, u64 dimensions contiguous first, u32 ggml type, u64 offset into the data
// section), zero padding to the alignment, then each tensor's bytes padded to the alignment.
// The alignment is the metadata's general.alignment when present (a power of two), else 32.
//
//   GgufMetadata metadata;
//   for (const auto& [key, value] : source.metadata()) metadata.Copy(key, value);
//   metadata.SetUint32("general.file_type", 15);   // replaces and moves the key to the end
//   WriteGguf(path, metadata, tensors, [&](const GgufTensorSpec& t, const TensorByteSink& sink) {
//     sink(bytes_of(t));
//   });
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "formats/gguf.h"
#include "tensor/dtype.h"

namespace proctor {

// The ggml type id of a DType a GGUF file can hold (F32 0, F16 1, Q4_0 2, ..., BF16 30); Error
// for the others.
uint32_t GgmlTypeOf(DType type);

// Metadata to write: keys in insertion order, each with its encoded value.
class GgufMetadata {
 public:
  // A value read from another GGUF file, re-encoded with its own type (arrays included).
  void Copy(std::string_view key, const GgufValue& value);
  void SetUint32(std::string_view key, uint32_t value);
  void SetFloat32(std::string_view key, float value);
  void SetBool(std::string_view key, bool value);
  void SetString(std::string_view key, std::string_view value);
  void SetStringArray(std::string_view key, std::span<const std::string> values);
  void SetInt32Array(std::string_view key, std::span<const int32_t> values);
  void SetFloat32Array(std::string_view key, std::span<const float> values);
  void Remove(std::string_view key);
  bool Contains(std::string_view key) const;
  size_t size() const { return entries_.size(); }
  // general.alignment when set (Error unless a power of two), else 32.
  uint64_t Alignment() const;
  // "key, u32 type, value" bytes of every entry, in order.
  std::string Encoded() const;

 private:
  void Set(std::string_view key, GgufType type, std::string value_bytes);
  struct Entry {
    std::string key;
    GgufType type;
    std::string value;  // the bytes after the type
  };
  std::vector<Entry> entries_;
};

struct GgufTensorSpec {
  std::string name;
  std::vector<uint64_t> dims;  // contiguous dimension first (ggml ne[])
  DType type = DType::kF32;

  uint64_t Elements() const;
  uint64_t Bytes() const;  // Error when the rows are not whole blocks of `type`
};

using GgufByteSink = std::function<void(std::span<const uint8_t>)>;
// Writes one tensor: call `sink` with consecutive byte ranges totalling spec.Bytes().
using FillGgufTensor = std::function<void(const GgufTensorSpec& spec, const GgufByteSink& sink)>;

// Writes `path` atomically, tensors in the given order. Returns the file size. Error (and no
// file) on duplicate tensor names, a tensor whose fill produces the wrong byte count, or a fill
// that throws.
uint64_t WriteGguf(const std::filesystem::path& path, const GgufMetadata& metadata,
                   const std::vector<GgufTensorSpec>& tensors, const FillGgufTensor& fill);

}  // namespace proctor
