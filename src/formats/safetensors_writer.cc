#include "formats/safetensors_writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/file.h"

namespace proctor {

uint64_t SafetensorsTensorSpec::Bytes() const {
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) Fail("safetensors", "tensor \"{}\": negative dimension {}", name, d);
    n *= static_cast<uint64_t>(d);
  }
  return BytesFor(dtype, n);
}

std::string_view SafetensorsDTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF64:
      return "F64";
    case DType::kF32:
      return "F32";
    case DType::kF16:
      return "F16";
    case DType::kBF16:
      return "BF16";
    case DType::kI64:
      return "I64";
    case DType::kI32:
      return "I32";
    case DType::kI16:
      return "I16";
    case DType::kI8:
      return "I8";
    case DType::kU64:
      return "U64";
    case DType::kU32:
      return "U32";
    case DType::kU16:
      return "U16";
    case DType::kU8:
      return "U8";
    case DType::kBool:
      return "BOOL";
    default:
      break;
  }
  Fail("safetensors", "dtype {} cannot be stored in safetensors (plain types only)", Name(dtype));
}

namespace {

void SortAndCheck(std::vector<SafetensorsTensorSpec>& tensors) {
  std::sort(tensors.begin(), tensors.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].name.empty() || tensors[i].name == "__metadata__") {
      Fail("safetensors", "invalid tensor name \"{}\"", tensors[i].name);
    }
    if (i > 0 && tensors[i].name == tensors[i - 1].name) {
      Fail("safetensors", "tensor \"{}\" listed twice", tensors[i].name);
    }
    SafetensorsDTypeName(tensors[i].dtype);
  }
}

std::string HeaderOfSorted(const std::vector<SafetensorsTensorSpec>& tensors,
                           const std::map<std::string, std::string>& metadata) {
  // nlohmann::json objects are std::map-backed: keys come out in byte order.
  nlohmann::json header = nlohmann::json::object();
  uint64_t offset = 0;
  for (const SafetensorsTensorSpec& t : tensors) {
    const uint64_t bytes = t.Bytes();
    header[t.name] = {{"dtype", SafetensorsDTypeName(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string json = header.dump();
  json.append((8 - json.size() % 8) % 8, ' ');  // 8 + N is a multiple of 8
  std::string out(8, '\0');
  const uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
  return out + json;
}

}  // namespace

std::string SafetensorsHeaderBytes(std::vector<SafetensorsTensorSpec> tensors,
                                   const std::map<std::string, std::string>& metadata) {
  SortAndCheck(tensors);
  return HeaderOfSorted(tensors, metadata);
}

uint64_t WriteSafetensors(const std::filesystem::path& path,
                          std::vector<SafetensorsTensorSpec> tensors,
                          const std::map<std::string, std::string>& metadata,
                          const FillTensor& fill) {
  SortAndCheck(tensors);
  AtomicFileWriter writer(path);
  writer.Write(HeaderOfSorted(tensors, metadata));
  // Small pieces are gathered into one buffer so the file sees few large writes.
  constexpr size_t kBufferBytes = 4 << 20;
  std::vector<uint8_t> buffer;
  buffer.reserve(kBufferBytes);
  auto flush = [&] {
    writer.Write(std::span<const uint8_t>(buffer.data(), buffer.size()));
    buffer.clear();
  };
  for (const SafetensorsTensorSpec& t : tensors) {
    const uint64_t expected = t.Bytes();
    uint64_t got = 0;
    fill(t, [&](std::span<const uint8_t> bytes) {
      got += bytes.size();
      if (got > expected) return;  // reported below
      if (bytes.size() >= kBufferBytes) {
        flush();
        writer.Write(bytes);
        return;
      }
      if (buffer.size() + bytes.size() > kBufferBytes) flush();
      buffer.insert(buffer.end(), bytes.begin(), bytes.end());
    });
    if (got != expected) {
      Fail("safetensors", "{}: tensor \"{}\" ({} {}) produced {} bytes, expected {}", path.string(),
           t.name, SafetensorsDTypeName(t.dtype), nlohmann::json(t.shape).dump(), got, expected);
    }
  }
  flush();
  const uint64_t size = writer.bytes_written();
  writer.Commit();
  return size;
}

}  // namespace proctor
