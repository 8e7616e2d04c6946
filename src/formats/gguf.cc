#include "formats/gguf.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

#include "util/error.h"

namespace proctor {
namespace {

constexpr uint64_t kDefaultAlignment = 32;
constexpr int kMaxArrayNesting = 8;
constexpr uint32_t kMaxDims = 8;  // GGML uses 4; a few more cost nothing

// Bytes of one packed element of a fixed-size metadata type (0 for string/array).
size_t FixedSize(GgufType type) {
  switch (type) {
    case GgufType::kUint8:
    case GgufType::kInt8:
    case GgufType::kBool:
      return 1;
    case GgufType::kUint16:
    case GgufType::kInt16:
      return 2;
    case GgufType::kUint32:
    case GgufType::kInt32:
    case GgufType::kFloat32:
      return 4;
    case GgufType::kUint64:
    case GgufType::kInt64:
    case GgufType::kFloat64:
      return 8;
    case GgufType::kString:
    case GgufType::kArray:
      return 0;
  }
  return 0;
}

bool IsSigned(GgufType type) {
  return type == GgufType::kInt8 || type == GgufType::kInt16 || type == GgufType::kInt32 ||
         type == GgufType::kInt64;
}

bool IsIntegerType(GgufType type) {
  return type == GgufType::kUint8 || type == GgufType::kInt8 || type == GgufType::kUint16 ||
         type == GgufType::kInt16 || type == GgufType::kUint32 || type == GgufType::kInt32 ||
         type == GgufType::kUint64 || type == GgufType::kInt64;
}

// Decodes one packed little-endian element: integers sign/zero-extended to 64 bits, floats as
// the bits of a double, bool as 0/1.
uint64_t DecodeElement(GgufType type, const uint8_t* p) {
  switch (type) {
    case GgufType::kUint8:
      return p[0];
    case GgufType::kBool:
      return p[0] != 0;
    case GgufType::kInt8:
      return static_cast<uint64_t>(static_cast<int64_t>(static_cast<int8_t>(p[0])));
    case GgufType::kUint16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case GgufType::kInt16: {
      int16_t v;
      std::memcpy(&v, p, 2);
      return static_cast<uint64_t>(static_cast<int64_t>(v));
    }
    case GgufType::kUint32: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case GgufType::kInt32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return static_cast<uint64_t>(static_cast<int64_t>(v));
    }
    case GgufType::kFloat32: {
      float v;
      std::memcpy(&v, p, 4);
      return std::bit_cast<uint64_t>(static_cast<double>(v));
    }
    case GgufType::kUint64:
    case GgufType::kInt64:
    case GgufType::kFloat64: {
      uint64_t v;
      std::memcpy(&v, p, 8);
      return v;
    }
    default:
      return 0;
  }
}

[[noreturn]] void TypeMismatch(GgufType seen, std::string_view expected) {
  Fail("gguf", "value is {}, expected {}", GgufTypeName(seen), expected);
}

}  // namespace

std::string_view GgufTypeName(GgufType type) {
  switch (type) {
    case GgufType::kUint8:
      return "uint8";
    case GgufType::kInt8:
      return "int8";
    case GgufType::kUint16:
      return "uint16";
    case GgufType::kInt16:
      return "int16";
    case GgufType::kUint32:
      return "uint32";
    case GgufType::kInt32:
      return "int32";
    case GgufType::kFloat32:
      return "float32";
    case GgufType::kBool:
      return "bool";
    case GgufType::kString:
      return "string";
    case GgufType::kArray:
      return "array";
    case GgufType::kUint64:
      return "uint64";
    case GgufType::kInt64:
      return "int64";
    case GgufType::kFloat64:
      return "float64";
  }
  return "unknown";
}

// ---- GgufValue ----

bool GgufValue::is_integer() const { return IsIntegerType(type_); }

int64_t GgufValue::AsInt() const {
  if (!IsIntegerType(type_)) TypeMismatch(type_, "an integer");
  if (type_ == GgufType::kUint64 && bits_ > static_cast<uint64_t>(INT64_MAX)) {
    Fail("gguf", "value {} does not fit a signed 64-bit integer", bits_);
  }
  return static_cast<int64_t>(bits_);
}

uint64_t GgufValue::AsUint() const {
  if (!IsIntegerType(type_)) TypeMismatch(type_, "an integer");
  if (IsSigned(type_) && static_cast<int64_t>(bits_) < 0) {
    Fail("gguf", "value {} is negative, expected a non-negative integer",
         static_cast<int64_t>(bits_));
  }
  return bits_;
}

double GgufValue::AsDouble() const {
  if (type_ == GgufType::kFloat32 || type_ == GgufType::kFloat64) {
    return std::bit_cast<double>(bits_);
  }
  if (IsIntegerType(type_)) {
    return IsSigned(type_) ? static_cast<double>(static_cast<int64_t>(bits_))
                           : static_cast<double>(bits_);
  }
  TypeMismatch(type_, "a number");
}

bool GgufValue::AsBool() const {
  if (type_ != GgufType::kBool) TypeMismatch(type_, "bool");
  return bits_ != 0;
}

std::string_view GgufValue::AsString() const {
  if (type_ != GgufType::kString) TypeMismatch(type_, "string");
  return string_;
}

size_t GgufValue::size() const {
  if (type_ != GgufType::kArray) TypeMismatch(type_, "an array");
  return count_;
}

std::span<const std::string_view> GgufValue::Strings() const {
  if (type_ != GgufType::kArray || array_type_ != GgufType::kString) {
    TypeMismatch(type_ == GgufType::kArray ? array_type_ : type_, "an array of strings");
  }
  return strings_;
}

std::vector<float> GgufValue::Floats() const {
  if (type_ != GgufType::kArray || FixedSize(array_type_) == 0 || array_type_ == GgufType::kBool) {
    TypeMismatch(type_ == GgufType::kArray ? array_type_ : type_, "an array of numbers");
  }
  std::vector<float> out(count_);
  const size_t element = FixedSize(array_type_);
  if (array_type_ == GgufType::kFloat32) {
    std::memcpy(out.data(), raw_.data(), count_ * 4);
    return out;
  }
  for (size_t i = 0; i < count_; ++i) {
    const uint64_t bits = DecodeElement(array_type_, raw_.data() + i * element);
    if (array_type_ == GgufType::kFloat64) {
      out[i] = static_cast<float>(std::bit_cast<double>(bits));
    } else {
      out[i] = IsSigned(array_type_) ? static_cast<float>(static_cast<int64_t>(bits))
                                     : static_cast<float>(bits);
    }
  }
  return out;
}

std::vector<int64_t> GgufValue::Ints() const {
  if (type_ != GgufType::kArray ||
      (!IsIntegerType(array_type_) && array_type_ != GgufType::kBool)) {
    TypeMismatch(type_ == GgufType::kArray ? array_type_ : type_, "an array of integers");
  }
  std::vector<int64_t> out(count_);
  const size_t element = FixedSize(array_type_);
  for (size_t i = 0; i < count_; ++i) {
    const uint64_t bits = DecodeElement(array_type_, raw_.data() + i * element);
    if (array_type_ == GgufType::kUint64 && bits > static_cast<uint64_t>(INT64_MAX)) {
      Fail("gguf", "array element {} = {} does not fit a signed 64-bit integer", i, bits);
    }
    out[i] = static_cast<int64_t>(bits);
  }
  return out;
}

std::span<const GgufValue> GgufValue::Arrays() const {
  if (type_ != GgufType::kArray || array_type_ != GgufType::kArray) {
    TypeMismatch(type_ == GgufType::kArray ? array_type_ : type_, "an array of arrays");
  }
  return arrays_;
}

// ---- GGML types ----

std::optional<DType> DTypeFromGgml(uint32_t ggml_type) {
  switch (ggml_type) {
    case 0:
      return DType::kF32;
    case 1:
      return DType::kF16;
    case 2:
      return DType::kQ4_0;
    case 3:
      return DType::kQ4_1;
    case 6:
      return DType::kQ5_0;
    case 7:
      return DType::kQ5_1;
    case 8:
      return DType::kQ8_0;
    case 10:
      return DType::kQ2_K;
    case 11:
      return DType::kQ3_K;
    case 12:
      return DType::kQ4_K;
    case 13:
      return DType::kQ5_K;
    case 14:
      return DType::kQ6_K;
    case 20:
      return DType::kIQ4_NL;
    case 24:
      return DType::kI8;
    case 25:
      return DType::kI16;
    case 26:
      return DType::kI32;
    case 27:
      return DType::kI64;
    case 28:
      return DType::kF64;
    case 30:
      return DType::kBF16;
    default:
      return std::nullopt;
  }
}

std::string GgmlTypeName(uint32_t ggml_type) {
  static constexpr std::string_view kNames[] = {"F32",
                                                "F16",
                                                "Q4_0",
                                                "Q4_1",
                                                "Q4_2 (removed)",
                                                "Q4_3 (removed)",
                                                "Q5_0",
                                                "Q5_1",
                                                "Q8_0",
                                                "Q8_1",
                                                "Q2_K",
                                                "Q3_K",
                                                "Q4_K",
                                                "Q5_K",
                                                "Q6_K",
                                                "Q8_K",
                                                "IQ2_XXS",
                                                "IQ2_XS",
                                                "IQ3_XXS",
                                                "IQ1_S",
                                                "IQ4_NL",
                                                "IQ3_S",
                                                "IQ2_S",
                                                "IQ4_XS",
                                                "I8",
                                                "I16",
                                                "I32",
                                                "I64",
                                                "F64",
                                                "IQ1_M",
                                                "BF16",
                                                "Q4_0_4_4 (removed)",
                                                "Q4_0_4_8 (removed)",
                                                "Q4_0_8_8 (removed)",
                                                "TQ1_0",
                                                "TQ2_0",
                                                "IQ4_NL_4_4 (removed)",
                                                "IQ4_NL_4_8 (removed)",
                                                "IQ4_NL_8_8 (removed)",
                                                "MXFP4"};
  if (ggml_type < std::size(kNames)) return std::string(kNames[ggml_type]);
  return fmt::format("type {}", ggml_type);
}

// ---- Parser ----

class GgufParser {
 public:
  GgufParser(std::span<const uint8_t> bytes, GgufFile& file) : bytes_(bytes), file_(file) {}

  void Parse() {
    if (bytes_.size() < 4 || std::memcmp(bytes_.data(), "GGUF", 4) != 0) {
      Fail("gguf", "{}: not a GGUF file (the first 4 bytes are not \"GGUF\")", name());
    }
    pos_ = 4;
    const uint32_t version = ReadU32("the version");
    if (version == 1) {
      Fail("gguf",
           "{}: GGUF version 1 is not supported (versions 2 and 3 are); re-convert the "
           "model with a current llama.cpp",
           name());
    }
    if (version != 2 && version != 3) {
      Fail("gguf", "{}: GGUF version {} is not supported (versions 2 and 3{})", name(), version,
           __builtin_bswap32(version) <= 3 ? "; this looks like a big-endian file" : "");
    }
    file_.version_ = version;
    const uint64_t tensor_count = ReadU64("the tensor count");
    const uint64_t kv_count = ReadU64("the metadata count");
    // Each key/value needs >= 13 bytes (key length, one key byte, type, 1-byte value); each
    // tensor info >= 29 (name length, 1 byte, n_dims, type, offset): bound counts by the file.
    if (kv_count > Remaining() / 13) {
      Fail("gguf", "{}: metadata count {} cannot fit in the {} bytes left", name(), kv_count,
           Remaining());
    }
    file_.metadata_.reserve(kv_count);
    for (uint64_t i = 0; i < kv_count; ++i) {
      const std::string_view key = ReadString("a metadata key");
      const uint32_t type = ReadU32("a metadata value type");
      GgufValue value = ReadValue(type, key, 0);
      if (!file_.metadata_index_.emplace(key, file_.metadata_.size()).second) {
        Fail("gguf", "{}: metadata key \"{}\" appears twice", name(), key);
      }
      file_.metadata_.emplace_back(key, std::move(value));
    }
    if (const GgufValue* alignment = file_.Find("general.alignment")) {
      if (alignment->type() != GgufType::kUint32) {
        Fail("gguf", "{}: general.alignment is {}, expected uint32", name(),
             GgufTypeName(alignment->type()));
      }
      const uint64_t a = alignment->AsUint();
      if (a == 0 || (a & (a - 1)) != 0) {
        Fail("gguf", "{}: general.alignment {} is not a power of two", name(), a);
      }
      file_.alignment_ = a;
    } else {
      file_.alignment_ = kDefaultAlignment;
    }
    if (tensor_count > Remaining() / 29) {
      Fail("gguf", "{}: tensor count {} cannot fit in the {} bytes left", name(), tensor_count,
           Remaining());
    }
    file_.tensors_.reserve(tensor_count);
    for (uint64_t i = 0; i < tensor_count; ++i) ReadTensorInfo();
    // The data section starts at the next multiple of the alignment (it may be empty).
    const uint64_t alignment = file_.alignment_;
    const uint64_t padded = pos_ + (alignment - pos_ % alignment) % alignment;
    const uint64_t data_start = std::min<uint64_t>(padded, bytes_.size());
    if (padded > bytes_.size() && !file_.tensors_.empty()) {
      Fail("gguf",
           "{}: the tensor data section (at byte {}) starts past the end of the file ({} "
           "bytes)",
           name(), padded, bytes_.size());
    }
    file_.data_offset_ = data_start;
    PlaceTensors(data_start);
  }

 private:
  const std::string& name() const { return file_.file_name_; }
  uint64_t Remaining() const { return bytes_.size() - pos_; }

  void Need(uint64_t n, std::string_view what) {
    if (n > Remaining()) {
      Fail("gguf", "{}: truncated: {} needs {} bytes at offset {} but the file has {} bytes",
           name(), what, n, pos_, bytes_.size());
    }
  }
  uint32_t ReadU32(std::string_view what) {
    Need(4, what);
    uint32_t v;
    std::memcpy(&v, bytes_.data() + pos_, 4);
    pos_ += 4;
    return v;
  }
  uint64_t ReadU64(std::string_view what) {
    Need(8, what);
    uint64_t v;
    std::memcpy(&v, bytes_.data() + pos_, 8);
    pos_ += 8;
    return v;
  }
  std::string_view ReadString(std::string_view what) {
    const uint64_t length = ReadU64(what);
    if (length > Remaining()) {
      Fail("gguf", "{}: {} at offset {} has length {}, past the end of the file ({} bytes)", name(),
           what, pos_ - 8, length, bytes_.size());
    }
    std::string_view s(reinterpret_cast<const char*>(bytes_.data() + pos_), length);
    pos_ += length;
    return s;
  }

  GgufValue ReadValue(uint32_t raw_type, std::string_view key, int depth) {
    if (raw_type > static_cast<uint32_t>(GgufType::kFloat64)) {
      Fail("gguf", "{}: metadata \"{}\" has unknown value type {}", name(), key, raw_type);
    }
    GgufValue value;
    value.type_ = static_cast<GgufType>(raw_type);
    if (value.type_ == GgufType::kString) {
      value.string_ = ReadString(fmt::format("the string value of \"{}\"", key));
      return value;
    }
    if (value.type_ != GgufType::kArray) {
      const size_t size = FixedSize(value.type_);
      Need(size, fmt::format("the value of \"{}\"", key));
      value.bits_ = DecodeElement(value.type_, bytes_.data() + pos_);
      if (value.type_ == GgufType::kBool && bytes_[pos_] > 1) {
        Fail("gguf", "{}: metadata \"{}\" is a bool with byte value {}", name(), key, bytes_[pos_]);
      }
      pos_ += size;
      return value;
    }
    if (depth >= kMaxArrayNesting) {
      Fail("gguf", "{}: metadata \"{}\" nests arrays more than {} deep", name(), key,
           kMaxArrayNesting);
    }
    const uint32_t element_type = ReadU32(fmt::format("the array type of \"{}\"", key));
    if (element_type > static_cast<uint32_t>(GgufType::kFloat64)) {
      Fail("gguf", "{}: metadata \"{}\" is an array of unknown type {}", name(), key, element_type);
    }
    value.array_type_ = static_cast<GgufType>(element_type);
    const uint64_t count = ReadU64(fmt::format("the array length of \"{}\"", key));
    const size_t element_size = FixedSize(value.array_type_);
    // Minimum bytes per element: fixed size, 8 for a string length, 12 for a nested array header.
    const uint64_t min_bytes = element_size != 0                        ? element_size
                               : value.array_type_ == GgufType::kString ? 8
                                                                        : 12;
    if (count > Remaining() / min_bytes) {
      Fail("gguf",
           "{}: metadata \"{}\" is an array of {} {} values, more than the {} bytes left "
           "can hold",
           name(), key, count, GgufTypeName(value.array_type_), Remaining());
    }
    value.count_ = count;
    if (element_size != 0) {
      value.raw_ = bytes_.subspan(pos_, count * element_size);
      if (value.array_type_ == GgufType::kBool) {
        for (uint8_t b : value.raw_) {
          if (b > 1)
            Fail("gguf", "{}: metadata \"{}\" holds a bool of byte value {}", name(), key, b);
        }
      }
      pos_ += count * element_size;
    } else if (value.array_type_ == GgufType::kString) {
      value.strings_.reserve(count);
      for (uint64_t i = 0; i < count; ++i) {  // hot for 150k-token vocabularies: no formatting
        uint64_t length = ~uint64_t{0};
        if (Remaining() >= 8) std::memcpy(&length, bytes_.data() + pos_, 8);
        if (Remaining() < 8 || length > Remaining() - 8) {
          ReadString(fmt::format("string {} of \"{}\"", i, key));  // throws the detailed Error
        }
        pos_ += 8;
        value.strings_.emplace_back(reinterpret_cast<const char*>(bytes_.data() + pos_), length);
        pos_ += length;
      }
    } else {
      value.arrays_.reserve(count);
      for (uint64_t i = 0; i < count; ++i) {
        value.arrays_.push_back(ReadValue(static_cast<uint32_t>(GgufType::kArray), key, depth + 1));
      }
    }
    return value;
  }

  void ReadTensorInfo() {
    GgufTensorInfo info;
    info.name = ReadString("a tensor name");
    const uint32_t n_dims = ReadU32(fmt::format("the dimension count of tensor \"{}\"", info.name));
    if (n_dims > kMaxDims) {
      Fail("gguf", "{}: tensor \"{}\" has {} dimensions (at most {})", name(), info.name, n_dims,
           kMaxDims);
    }
    uint64_t elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const uint64_t dim = ReadU64(fmt::format("a dimension of tensor \"{}\"", info.name));
      // No tensor can hold more elements than the file has bits (the smallest type, Q2_K, is
      // 2.6 bits per value), which also keeps the product from overflowing.
      const uint64_t limit = static_cast<uint64_t>(bytes_.size()) * 8 + 1;
      if (dim != 0 && elements > limit / dim) {
        Fail("gguf", "{}: tensor \"{}\" dimension {} = {} makes it larger than the file", name(),
             info.name, d, dim);
      }
      elements *= dim;
      info.dims.push_back(dim);
    }
    info.ggml_type = ReadU32(fmt::format("the type of tensor \"{}\"", info.name));
    info.offset = ReadU64(fmt::format("the data offset of tensor \"{}\"", info.name));
    const std::optional<DType> type = DTypeFromGgml(info.ggml_type);
    if (!type) {
      Fail("gguf", "{}: tensor \"{}\" has type {} ({}), which proctor cannot read", name(),
           info.name, GgmlTypeName(info.ggml_type), info.ggml_type);
    }
    info.type = *type;
    const uint64_t row = info.dims.empty() ? 1 : info.dims[0];
    if (!FitsBlocks(info.type, row)) {
      Fail("gguf", "{}: tensor \"{}\" rows of {} values are not whole {} blocks of {}", name(),
           info.name, row, GgmlTypeName(info.ggml_type), Info(info.type).block_elems);
    }
    info.bytes = BytesFor(info.type, elements);
    if (info.offset % file_.alignment_ != 0) {
      Fail("gguf", "{}: tensor \"{}\" data offset {} is not a multiple of the alignment {}", name(),
           info.name, info.offset, file_.alignment_);
    }
    if (!file_.tensor_index_.emplace(info.name, file_.tensors_.size()).second) {
      Fail("gguf", "{}: tensor \"{}\" appears twice", name(), info.name);
    }
    file_.tensors_.push_back(std::move(info));
  }

  void PlaceTensors(uint64_t data_start) {
    const uint64_t data_size = bytes_.size() - data_start;
    std::vector<size_t> order(file_.tensors_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    for (GgufTensorInfo& t : file_.tensors_) {
      if (t.offset > data_size || t.bytes > data_size - t.offset) {
        Fail("gguf",
             "{}: tensor \"{}\" bytes [{}, +{}) run past the end of the data section ({} "
             "bytes)",
             name(), t.name, t.offset, t.bytes, data_size);
      }
      t.data = bytes_.data() + data_start + t.offset;
    }
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return file_.tensors_[a].offset < file_.tensors_[b].offset;
    });
    for (size_t i = 1; i < order.size(); ++i) {
      const GgufTensorInfo& prev = file_.tensors_[order[i - 1]];
      const GgufTensorInfo& cur = file_.tensors_[order[i]];
      if (cur.offset < prev.offset + prev.bytes) {
        Fail("gguf", "{}: tensors \"{}\" [{}, +{}) and \"{}\" [{}, +{}) overlap", name(), prev.name,
             prev.offset, prev.bytes, cur.name, cur.offset, cur.bytes);
      }
    }
  }

  std::span<const uint8_t> bytes_;
  GgufFile& file_;
  uint64_t pos_ = 0;
};

// ---- GgufFile ----

std::shared_ptr<GgufFile> GgufFile::Open(const std::filesystem::path& path) {
  auto mapping = std::make_shared<MappedFile>(path);
  auto file = Parse(mapping->bytes(), path.string());
  file->mapping_ = std::move(mapping);
  return file;
}

std::shared_ptr<GgufFile> GgufFile::Parse(std::span<const uint8_t> bytes, std::string file_name) {
  auto file = std::make_shared<GgufFile>();
  file->file_name_ = std::move(file_name);
  GgufParser parser(bytes, *file);
  parser.Parse();
  return file;
}

const GgufValue* GgufFile::Find(std::string_view key) const {
  auto it = metadata_index_.find(key);
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].second;
}

const GgufValue& GgufFile::Get(std::string_view key) const {
  const GgufValue* value = Find(key);
  if (value == nullptr) Fail("gguf", "{}: metadata key \"{}\" is missing", file_name_, key);
  return *value;
}

template <typename T, typename F>
T GgufFile::Typed(std::string_view key, std::string_view expected, F&& read) const {
  const GgufValue& value = Get(key);
  try {
    return read(value);
  } catch (const Error& e) {
    Fail("gguf", "{}: metadata \"{}\" ({}): {}", file_name_, key,
         value.is_array() ? fmt::format("array of {}", GgufTypeName(value.array_type()))
                          : std::string(GgufTypeName(value.type())),
         std::string_view(e.what()).substr(7));  // drop the inner "[gguf] "
  }
}

std::string_view GgufFile::GetString(std::string_view key) const {
  return Typed<std::string_view>(key, "string", [](const GgufValue& v) { return v.AsString(); });
}
int64_t GgufFile::GetInt(std::string_view key) const {
  return Typed<int64_t>(key, "integer", [](const GgufValue& v) { return v.AsInt(); });
}
uint64_t GgufFile::GetUint(std::string_view key) const {
  return Typed<uint64_t>(key, "integer", [](const GgufValue& v) { return v.AsUint(); });
}
float GgufFile::GetFloat(std::string_view key) const {
  return Typed<float>(key, "number", [](const GgufValue& v) { return v.AsFloat(); });
}
bool GgufFile::GetBool(std::string_view key) const {
  return Typed<bool>(key, "bool", [](const GgufValue& v) { return v.AsBool(); });
}
std::span<const std::string_view> GgufFile::GetStringArray(std::string_view key) const {
  return Typed<std::span<const std::string_view>>(key, "string array",
                                                  [](const GgufValue& v) { return v.Strings(); });
}
std::vector<float> GgufFile::GetFloatArray(std::string_view key) const {
  return Typed<std::vector<float>>(key, "number array",
                                   [](const GgufValue& v) { return v.Floats(); });
}
std::vector<int64_t> GgufFile::GetIntArray(std::string_view key) const {
  return Typed<std::vector<int64_t>>(key, "integer array",
                                     [](const GgufValue& v) { return v.Ints(); });
}
std::optional<int64_t> GgufFile::FindInt(std::string_view key) const {
  if (Find(key) == nullptr) return std::nullopt;
  return GetInt(key);
}
std::optional<float> GgufFile::FindFloat(std::string_view key) const {
  if (Find(key) == nullptr) return std::nullopt;
  return GetFloat(key);
}
std::optional<std::string_view> GgufFile::FindString(std::string_view key) const {
  if (Find(key) == nullptr) return std::nullopt;
  return GetString(key);
}

const GgufTensorInfo* GgufFile::FindTensor(std::string_view tensor_name) const {
  auto it = tensor_index_.find(tensor_name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace proctor
