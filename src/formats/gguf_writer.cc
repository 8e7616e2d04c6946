#include "formats/gguf_writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <unordered_set>

#include "util/error.h"
#include "util/file.h"

namespace proctor {
namespace {

template <typename T>
void Append(std::string* out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out->append(bytes, sizeof(T));
}

void AppendString(std::string* out, std::string_view s) {
  Append<uint64_t>(out, s.size());
  out->append(s);
}

// An array value of numbers: element type, count, the elements.
template <typename T>
std::string NumberArray(GgufType type, std::span<const T> values) {
  std::string bytes;
  Append(&bytes, static_cast<uint32_t>(type));
  Append<uint64_t>(&bytes, values.size());
  for (const T v : values) Append(&bytes, v);
  return bytes;
}

void AppendScalar(std::string* out, const GgufValue& v) {
  switch (v.type()) {
    case GgufType::kUint8:
      return Append(out, static_cast<uint8_t>(v.AsUint()));
    case GgufType::kInt8:
      return Append(out, static_cast<int8_t>(v.AsInt()));
    case GgufType::kUint16:
      return Append(out, static_cast<uint16_t>(v.AsUint()));
    case GgufType::kInt16:
      return Append(out, static_cast<int16_t>(v.AsInt()));
    case GgufType::kUint32:
      return Append(out, static_cast<uint32_t>(v.AsUint()));
    case GgufType::kInt32:
      return Append(out, static_cast<int32_t>(v.AsInt()));
    case GgufType::kUint64:
      return Append(out, v.AsUint());
    case GgufType::kInt64:
      return Append(out, v.AsInt());
    case GgufType::kFloat32:
      return Append(out, static_cast<float>(v.AsDouble()));  // exact: it was read as float32
    case GgufType::kFloat64:
      return Append(out, v.AsDouble());
    case GgufType::kBool:
      return Append(out, static_cast<uint8_t>(v.AsBool() ? 1 : 0));
    case GgufType::kString:
      return AppendString(out, v.AsString());
    case GgufType::kArray:
      break;
  }
  Fail("gguf", "cannot write a value of type {}", GgufTypeName(v.type()));
}

// Element type, count and elements of an array value (nested arrays recursively).
void AppendArray(std::string* out, const GgufValue& v) {
  Append(out, static_cast<uint32_t>(v.array_type()));
  Append<uint64_t>(out, v.size());
  switch (v.array_type()) {
    case GgufType::kString:
      for (const std::string_view s : v.Strings()) AppendString(out, s);
      return;
    case GgufType::kArray:
      for (const GgufValue& nested : v.Arrays()) AppendArray(out, nested);
      return;
    default: {
      const std::span<const uint8_t> raw = v.RawElements();
      out->append(reinterpret_cast<const char*>(raw.data()), raw.size());
    }
  }
}

uint64_t PadTo(uint64_t n, uint64_t alignment) {
  return (n + alignment - 1) / alignment * alignment;
}

}  // namespace

uint32_t GgmlTypeOf(DType type) {
  for (uint32_t id = 0; id < 64; ++id) {
    const std::optional<DType> t = DTypeFromGgml(id);
    if (t && *t == type) return id;
  }
  Fail("gguf", "type {} has no GGUF tensor type", Name(type));
}

void GgufMetadata::Set(std::string_view key, GgufType type, std::string value_bytes) {
  Remove(key);
  entries_.push_back(Entry{std::string(key), type, std::move(value_bytes)});
}

void GgufMetadata::Copy(std::string_view key, const GgufValue& value) {
  std::string bytes;
  if (value.is_array()) {
    AppendArray(&bytes, value);
  } else {
    AppendScalar(&bytes, value);
  }
  Set(key, value.type(), std::move(bytes));
}

void GgufMetadata::SetUint32(std::string_view key, uint32_t value) {
  std::string bytes;
  Append(&bytes, value);
  Set(key, GgufType::kUint32, std::move(bytes));
}

void GgufMetadata::SetFloat32(std::string_view key, float value) {
  std::string bytes;
  Append(&bytes, value);
  Set(key, GgufType::kFloat32, std::move(bytes));
}

void GgufMetadata::SetBool(std::string_view key, bool value) {
  std::string bytes;
  Append(&bytes, static_cast<uint8_t>(value ? 1 : 0));
  Set(key, GgufType::kBool, std::move(bytes));
}

void GgufMetadata::SetStringArray(std::string_view key, std::span<const std::string> values) {
  std::string bytes;
  Append(&bytes, static_cast<uint32_t>(GgufType::kString));
  Append<uint64_t>(&bytes, values.size());
  for (const std::string& v : values) AppendString(&bytes, v);
  Set(key, GgufType::kArray, std::move(bytes));
}

void GgufMetadata::SetInt32Array(std::string_view key, std::span<const int32_t> values) {
  Set(key, GgufType::kArray, NumberArray(GgufType::kInt32, values));
}

void GgufMetadata::SetFloat32Array(std::string_view key, std::span<const float> values) {
  Set(key, GgufType::kArray, NumberArray(GgufType::kFloat32, values));
}

void GgufMetadata::SetString(std::string_view key, std::string_view value) {
  std::string bytes;
  AppendString(&bytes, value);
  Set(key, GgufType::kString, std::move(bytes));
}

void GgufMetadata::Remove(std::string_view key) {
  std::erase_if(entries_, [&](const Entry& e) { return e.key == key; });
}

bool GgufMetadata::Contains(std::string_view key) const {
  return std::any_of(entries_.begin(), entries_.end(),
                     [&](const Entry& e) { return e.key == key; });
}

uint64_t GgufMetadata::Alignment() const {
  for (const Entry& e : entries_) {
    if (e.key != "general.alignment") continue;
    uint32_t alignment = 0;
    if (e.type != GgufType::kUint32 || e.value.size() != 4) {
      Fail("gguf", "general.alignment must be a uint32 (it is a {})", GgufTypeName(e.type));
    }
    std::memcpy(&alignment, e.value.data(), 4);
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
      Fail("gguf", "general.alignment {} is not a power of two", alignment);
    }
    return alignment;
  }
  return 32;
}

std::string GgufMetadata::Encoded() const {
  std::string out;
  for (const Entry& e : entries_) {
    AppendString(&out, e.key);
    Append(&out, static_cast<uint32_t>(e.type));
    out += e.value;
  }
  return out;
}

uint64_t GgufTensorSpec::Elements() const {
  uint64_t n = 1;
  for (const uint64_t d : dims) n *= d;
  return n;
}

uint64_t GgufTensorSpec::Bytes() const {
  const uint64_t row = dims.empty() ? 1 : dims[0];
  if (!FitsBlocks(type, row)) {
    Fail("gguf", "tensor \"{}\": rows of {} values are not whole {} blocks of {}", name, row,
         Name(type), Info(type).block_elems);
  }
  return BytesFor(type, Elements());
}

uint64_t WriteGguf(const std::filesystem::path& path, const GgufMetadata& metadata,
                   const std::vector<GgufTensorSpec>& tensors, const FillGgufTensor& fill) {
  const uint64_t alignment = metadata.Alignment();
  std::unordered_set<std::string_view> names;
  std::string header = "GGUF";
  Append<uint32_t>(&header, 3);
  Append<uint64_t>(&header, tensors.size());
  Append<uint64_t>(&header, metadata.size());
  header += metadata.Encoded();
  uint64_t offset = 0;
  for (const GgufTensorSpec& t : tensors) {
    if (!names.insert(t.name).second) {
      Fail("gguf", "{}: tensor \"{}\" is listed twice", path.string(), t.name);
    }
    AppendString(&header, t.name);
    Append<uint32_t>(&header, static_cast<uint32_t>(t.dims.size()));
    for (const uint64_t d : t.dims) Append(&header, d);
    Append(&header, GgmlTypeOf(t.type));
    Append(&header, offset);
    offset += PadTo(t.Bytes(), alignment);
  }
  header.append(PadTo(header.size(), alignment) - header.size(), '\0');

  AtomicFileWriter writer(path);
  writer.Write(header);
  const std::string zeros(alignment, '\0');
  for (const GgufTensorSpec& t : tensors) {
    const uint64_t expected = t.Bytes();
    uint64_t got = 0;
    fill(t, [&](std::span<const uint8_t> bytes) {
      got += bytes.size();
      if (got <= expected) writer.Write(bytes);
    });
    if (got != expected) {
      Fail("gguf", "{}: tensor \"{}\" ({}) produced {} bytes, expected {}", path.string(), t.name,
           Name(t.type), got, expected);
    }
    writer.Write(std::string_view(zeros.data(), PadTo(expected, alignment) - expected));
  }
  const uint64_t size = writer.bytes_written();
  writer.Commit();
  return size;
}

}  // namespace proctor
