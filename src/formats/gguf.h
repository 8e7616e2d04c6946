// GGUF reader (versions 2 and 3): header, metadata key/values, tensor infos, tensor data.
//
// The file is memory-mapped and parsed once; every count, length and offset is checked against
// the file before use, so a truncated or hostile file gives an Error naming the file, never a
// crash or a huge allocation. Strings and scalar arrays are views into the mapping (no copies);
// string arrays are indexed once into a vector of string_views.
//
// Metadata access for other layers (the tokenizer reads tokenizer.ggml.*):
//   const GgufValue* v = gguf.Find("tokenizer.ggml.tokens");        // nullptr when absent
//   std::span<const std::string_view> tokens = gguf.GetStringArray("tokenizer.ggml.tokens");
//   std::vector<float> scores = gguf.GetFloatArray("tokenizer.ggml.scores");
//   std::vector<int64_t> types = gguf.GetIntArray("tokenizer.ggml.token_type");
//   int64_t bos = gguf.GetInt("tokenizer.ggml.bos_token_id");
// Typed getters throw Error("[gguf] <file>: key \"...\" ...") when the key is missing or has
// another type. Integer getters accept any integer type whose value fits.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tensor/dtype.h"
#include "util/file.h"

namespace proctor {

// The 13 GGUF metadata value types (ids as stored in the file).
enum class GgufType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};
std::string_view GgufTypeName(GgufType type);  // "uint8", ..., "array"

// One metadata value. Scalars hold their value; strings view the mapping; arrays keep their
// element type, and either a view of the packed elements (numbers, bools), string_views
// (strings) or nested values (arrays of arrays).
class GgufValue {
 public:
  GgufType type() const { return type_; }
  bool is_array() const { return type_ == GgufType::kArray; }
  bool is_integer() const;  // any of the 8 integer types
  bool is_float() const { return type_ == GgufType::kFloat32 || type_ == GgufType::kFloat64; }

  // Scalars. Errors (without the key; GgufFile's getters add it) when the type does not fit.
  int64_t AsInt() const;    // any integer type; uint64 above INT64_MAX is an error
  uint64_t AsUint() const;  // any integer type >= 0
  double AsDouble() const;  // any integer or float type
  float AsFloat() const { return static_cast<float>(AsDouble()); }
  bool AsBool() const;
  std::string_view AsString() const;

  // Arrays.
  GgufType array_type() const { return array_type_; }  // element type (arrays only)
  size_t size() const;                                 // element count (arrays only)
  std::span<const std::string_view> Strings() const;   // array of strings, no copy
  std::vector<float> Floats() const;          // array of float32/float64 (or integers), converted
  std::vector<int64_t> Ints() const;          // array of any integer type (or bool), converted
  std::span<const GgufValue> Arrays() const;  // array of arrays
  // The packed elements of a numeric/bool array as stored (little-endian, maybe unaligned).
  std::span<const uint8_t> RawElements() const { return raw_; }

 private:
  friend class GgufParser;
  GgufType type_ = GgufType::kUint8;
  GgufType array_type_ = GgufType::kUint8;
  uint64_t bits_ = 0;  // scalar payload (integers zero/sign-extended, floats as double bits)
  std::string_view string_;
  std::span<const uint8_t> raw_;
  std::vector<std::string_view> strings_;
  std::vector<GgufValue> arrays_;
  size_t count_ = 0;
};

struct GgufTensorInfo {
  std::string_view name;       // as stored ("blk.0.attn_q.weight")
  std::vector<uint64_t> dims;  // contiguous dimension FIRST (GGML ne[])
  uint32_t ggml_type = 0;      // the GGML type id
  DType type = DType::kF32;
  uint64_t offset = 0;  // relative to the data section
  const uint8_t* data = nullptr;
  size_t bytes = 0;
};

// GGML type id -> DType (nullopt for types proctor cannot size), and a printable name.
std::optional<DType> DTypeFromGgml(uint32_t ggml_type);
std::string GgmlTypeName(uint32_t ggml_type);  // "Q4_K", "IQ2_XXS", or "type 99"

class GgufFile {
 public:
  // Maps and parses a file (the object keeps the mapping alive).
  static std::shared_ptr<GgufFile> Open(const std::filesystem::path& path);
  // Parses bytes the caller keeps alive (fuzzing, tests). `file_name` names them in errors.
  static std::shared_ptr<GgufFile> Parse(std::span<const uint8_t> bytes, std::string file_name);

  const std::string& file_name() const { return file_name_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // start of the tensor data section

  // Metadata, in file order.
  const std::vector<std::pair<std::string_view, GgufValue>>& metadata() const { return metadata_; }
  const GgufValue* Find(std::string_view key) const;  // nullptr when absent
  const GgufValue& Get(std::string_view key) const;   // Error naming file and key when absent
  std::string_view GetString(std::string_view key) const;
  int64_t GetInt(std::string_view key) const;
  uint64_t GetUint(std::string_view key) const;
  float GetFloat(std::string_view key) const;
  bool GetBool(std::string_view key) const;
  std::span<const std::string_view> GetStringArray(std::string_view key) const;
  std::vector<float> GetFloatArray(std::string_view key) const;
  std::vector<int64_t> GetIntArray(std::string_view key) const;
  // Optional variants: nullopt when absent (still an Error when present with another type).
  std::optional<int64_t> FindInt(std::string_view key) const;
  std::optional<float> FindFloat(std::string_view key) const;
  std::optional<std::string_view> FindString(std::string_view key) const;

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* FindTensor(std::string_view name) const;

 private:
  friend class GgufParser;
  template <typename T, typename F>
  T Typed(std::string_view key, std::string_view expected, F&& read) const;

  std::shared_ptr<MappedFile> mapping_;  // null for Parse()
  std::string file_name_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string_view, GgufValue>> metadata_;
  std::unordered_map<std::string_view, size_t> metadata_index_;
  std::vector<GgufTensorInfo> tensors_;
  std::unordered_map<std::string_view, size_t> tensor_index_;
};

}  // namespace proctor
