#include "model/safetensors_writer.h"

#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "util/error.h"
#include "util/file.h"

namespace proctor {

std::string SafetensorsDTypeName(DType type) {
  switch (type) {
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
  Fail("safetensors", "type {} cannot be stored in a safetensors file", Name(type));
}

void WriteSafetensors(const std::filesystem::path& path,
                      const std::vector<SafetensorsEntry>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    uint64_t elements = 1;
    for (const int64_t d : t.shape) {
      if (d < 0)
        Fail("safetensors", "'{}': tensor {} has a negative dimension", path.string(), t.name);
      elements *= static_cast<uint64_t>(d);
    }
    const std::string dtype = SafetensorsDTypeName(t.type);
    const uint64_t bytes = BytesFor(t.type, elements);
    if (bytes != t.data.size()) {
      Fail("safetensors", "'{}': tensor {} ({} x {} elements) needs {} bytes, got {}",
           path.string(), t.name, dtype, elements, bytes, t.data.size());
    }
    if (!names.insert(t.name).second) {
      Fail("safetensors", "'{}': tensor {} is listed twice", path.string(), t.name);
    }
    header[t.name] = {
        {"dtype", dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  uint8_t length[8];
  const uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) length[i] = static_cast<uint8_t>(n >> (8 * i));
  AtomicFileWriter out(path);
  out.Write(std::span<const uint8_t>(length, 8));
  out.Write(text);
  for (const auto& t : tensors) out.Write(t.data);
  out.Commit();
}

}  // namespace proctor
