#include "formats/safetensors.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <set>

#include "util/error.h"
#include "util/json_file.h"

namespace proctor {
namespace {

using nlohmann::json;

std::optional<DType> SafetensorsDType(std::string_view name) {
  static const std::map<std::string_view, DType> kTypes = {
      {"F64", DType::kF64},   {"F32", DType::kF32}, {"F16", DType::kF16}, {"BF16", DType::kBF16},
      {"I64", DType::kI64},   {"I32", DType::kI32}, {"I16", DType::kI16}, {"I8", DType::kI8},
      {"U64", DType::kU64},   {"U32", DType::kU32}, {"U16", DType::kU16}, {"U8", DType::kU8},
      {"BOOL", DType::kBool},
  };
  auto it = kTypes.find(name);
  if (it == kTypes.end()) return std::nullopt;
  return it->second;
}

// A json unsigned integer (shapes and offsets), else Error.
uint64_t GetUnsigned(const json& value, std::string_view file, std::string_view tensor,
                     std::string_view what) {
  if (!value.is_number_unsigned() && !(value.is_number_integer() && value.get<int64_t>() >= 0)) {
    Fail("safetensors", "{}: tensor \"{}\": {} should be a non-negative integer, got {}", file,
         tensor, what, value.dump());
  }
  return value.get<uint64_t>();
}

}  // namespace

SafetensorsHeader ParseSafetensors(std::span<const uint8_t> file_bytes,
                                   std::string_view file_name) {
  if (file_bytes.size() < 8) {
    Fail("safetensors", "{}: file is {} bytes, too short for the 8-byte header length", file_name,
         file_bytes.size());
  }
  uint64_t header_length = 0;
  std::memcpy(&header_length, file_bytes.data(), 8);  // little-endian host (x86-64, arm64)
  if (header_length > file_bytes.size() - 8) {
    Fail("safetensors", "{}: header length {} runs past the end of the file ({} bytes)", file_name,
         header_length, file_bytes.size());
  }
  const char* header_begin = reinterpret_cast<const char*>(file_bytes.data() + 8);
  json header;
  try {
    header = json::parse(header_begin, header_begin + header_length);
  } catch (const json::exception& e) {
    Fail("safetensors", "{}: the header is not valid JSON: {}", file_name, e.what());
  }
  if (!header.is_object()) {
    Fail("safetensors", "{}: the header should be a JSON object", file_name);
  }
  const uint8_t* data = file_bytes.data() + 8 + header_length;
  const uint64_t data_size = file_bytes.size() - 8 - header_length;

  SafetensorsHeader out;
  struct Range {
    uint64_t begin, end;
    size_t index;
  };
  std::vector<Range> ranges;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      // null is "no metadata": MLX's mx.save_safetensors writes it when given none.
      if (entry.is_null()) continue;
      if (!entry.is_object()) {
        Fail("safetensors", "{}: __metadata__ should be an object of strings (or null)", file_name);
      }
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) {
          Fail("safetensors", "{}: __metadata__[\"{}\"] should be a string, got {}", file_name, key,
               value.dump());
        }
        out.metadata[key] = value.get<std::string>();
      }
      continue;
    }
    if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") ||
        !entry.contains("data_offsets")) {
      Fail("safetensors", "{}: tensor \"{}\" should have dtype, shape and data_offsets", file_name,
           name);
    }
    const json& dtype_json = entry["dtype"];
    if (!dtype_json.is_string()) {
      Fail("safetensors", "{}: tensor \"{}\": dtype should be a string", file_name, name);
    }
    const std::string dtype_name = dtype_json.get<std::string>();
    const std::optional<DType> dtype = SafetensorsDType(dtype_name);
    if (!dtype) {
      Fail("safetensors",
           "{}: tensor \"{}\" has dtype \"{}\", which is not supported (F64, F32, "
           "F16, BF16, I64, I32, I16, I8, U64, U32, U16, U8, BOOL)",
           file_name, name, dtype_name);
    }
    const json& shape_json = entry["shape"];
    if (!shape_json.is_array()) {
      Fail("safetensors", "{}: tensor \"{}\": shape should be an array", file_name, name);
    }
    TensorInfo info;
    info.name = name;
    info.source_name = name;
    info.type = *dtype;
    info.file = std::string(file_name);
    uint64_t elements = 1;
    for (const json& dim_json : shape_json) {
      const uint64_t dim = GetUnsigned(dim_json, file_name, name, "a dimension");
      // Every tensor must fit in the data section, so a product past it is already an error;
      // checking against data_size first also rules out overflow.
      if (dim != 0 && elements > data_size / dim + 1) {
        Fail("safetensors", "{}: tensor \"{}\" shape {} has more elements than the file has bytes",
             file_name, name, shape_json.dump());
      }
      elements *= dim;
      info.shape.push_back(static_cast<int64_t>(dim));
    }
    const json& offsets = entry["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2) {
      Fail("safetensors", "{}: tensor \"{}\": data_offsets should be [begin, end], got {}",
           file_name, name, offsets.dump());
    }
    const uint64_t begin = GetUnsigned(offsets[0], file_name, name, "data_offsets[0]");
    const uint64_t end = GetUnsigned(offsets[1], file_name, name, "data_offsets[1]");
    if (begin > end || end > data_size) {
      Fail("safetensors",
           "{}: tensor \"{}\" data_offsets [{}, {}] are outside the data section "
           "({} bytes)",
           file_name, name, begin, end, data_size);
    }
    const uint64_t element_size = Info(*dtype).block_bytes;
    if (elements > data_size || elements * element_size != end - begin) {
      Fail("safetensors",
           "{}: tensor \"{}\": shape {} x {} ({} bytes each) does not match its "
           "{} bytes",
           file_name, name, shape_json.dump(), dtype_name, element_size, end - begin);
    }
    info.data = data + begin;
    info.bytes = static_cast<size_t>(end - begin);
    ranges.push_back({begin, end, out.tensors.size()});
    out.tensors.push_back(std::move(info));
  }
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) {
    return a.begin < b.begin || (a.begin == b.begin && a.end < b.end);
  });
  for (size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].begin < ranges[i - 1].end) {
      Fail("safetensors", "{}: tensors \"{}\" [{}, {}] and \"{}\" [{}, {}] overlap", file_name,
           out.tensors[ranges[i - 1].index].name, ranges[i - 1].begin, ranges[i - 1].end,
           out.tensors[ranges[i].index].name, ranges[i].begin, ranges[i].end);
    }
  }
  // The tensors tile the data section, as the safetensors library requires (its InvalidOffset
  // and MetadataIncompleteBuffer): no bytes before, between or after them.
  uint64_t covered = 0;
  for (const Range& r : ranges) {
    if (r.begin != covered) {
      Fail("safetensors",
           "{}: tensor \"{}\" starts at byte {} of the data section, but the bytes before it end "
           "at {}: the data section has a hole",
           file_name, out.tensors[r.index].name, r.begin, covered);
    }
    covered = r.end;
  }
  if (covered != data_size) {
    Fail("safetensors",
         "{}: the tensors end at byte {} of the data section, but it holds {} bytes: the data "
         "section has bytes no tensor describes",
         file_name, covered, data_size);
  }
  return out;
}

void LoadSafetensorsInto(const std::filesystem::path& path, WeightStore& store) {
  auto mapped = std::make_shared<MappedFile>(path);
  SafetensorsHeader header = ParseSafetensors(mapped->bytes(), path.string());
  for (TensorInfo& info : header.tensors) {
    if (const TensorInfo* existing = store.Find(info.name)) {
      Fail("safetensors", "{}: tensor \"{}\" is also in {}", path.string(), info.name,
           existing->file);
    }
    store.AddView(std::move(info));
  }
  store.KeepAlive(std::move(mapped));
}

void LoadSafetensorsDirectory(const std::filesystem::path& dir, WeightStore& store) {
  const std::filesystem::path index_path = dir / "model.safetensors.index.json";
  const std::filesystem::path single_path = dir / "model.safetensors";
  if (std::filesystem::exists(index_path)) {
    const json index = ReadJsonFile(index_path, "safetensors");
    if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object()) {
      Fail("safetensors", "{}: should hold an object with a \"weight_map\" object",
           index_path.string());
    }
    std::set<std::string> shards;
    for (const auto& [name, file] : index["weight_map"].items()) {
      if (!file.is_string()) {
        Fail("safetensors", "{}: weight_map[\"{}\"] should be a file name", index_path.string(),
             name);
      }
      const std::string shard = file.get<std::string>();
      if (shard.empty() || shard.find('/') != std::string::npos || shard == "." || shard == "..") {
        Fail("safetensors", "{}: weight_map[\"{}\"] = \"{}\" is not a file name in {}",
             index_path.string(), name, shard, dir.string());
      }
      shards.insert(shard);
    }
    for (const std::string& shard : shards) LoadSafetensorsInto(dir / shard, store);
    for (const auto& [name, file] : index["weight_map"].items()) {
      const TensorInfo* info = store.Find(name);
      const std::string expected = (dir / file.get<std::string>()).string();
      if (info == nullptr || info->file != expected) {
        Fail("safetensors", "{}: tensor \"{}\" should be in {} but {}", index_path.string(), name,
             expected, info == nullptr ? "no shard has it" : "it is in " + info->file);
      }
    }
    return;
  }
  if (std::filesystem::exists(single_path)) {
    LoadSafetensorsInto(single_path, store);
    return;
  }
  // A single file under another name (rare): accept exactly one *.safetensors.
  std::vector<std::filesystem::path> found;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".safetensors") found.push_back(entry.path());
  }
  if (found.size() != 1) {
    Fail("safetensors",
         "{}: no model.safetensors or model.safetensors.index.json (found {} other "
         "*.safetensors files)",
         dir.string(), found.size());
  }
  LoadSafetensorsInto(found.front(), store);
}

}  // namespace proctor
