// libFuzzer target: the GGUF parser must reject any input with an Error, never crash, read out
// of bounds or allocate without bound. Accepted files are walked: every metadata value through
// the typed accessors, every tensor's bytes, and the HF-name mapping and config derivation.
#include <cstddef>
#include <cstdint>

#include "formats/gguf.h"
#include "formats/gguf_model.h"
#include "util/error.h"

namespace {

void Walk(const proctor::GgufValue& value) {
  using proctor::GgufType;
  try {
    if (!value.is_array()) {
      (void)(value.type() == GgufType::kString ? value.AsString().size() : 0);
      if (value.is_integer()) (void)value.AsDouble();
      return;
    }
    switch (value.array_type()) {
      case GgufType::kString:
        (void)value.Strings().size();
        break;
      case GgufType::kArray:
        for (const proctor::GgufValue& inner : value.Arrays()) Walk(inner);
        break;
      case GgufType::kFloat32:
      case GgufType::kFloat64:
        (void)value.Floats();
        break;
      default:
        (void)value.Ints();
        break;
    }
  } catch (const proctor::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto gguf = proctor::GgufFile::Parse(std::span<const uint8_t>(data, size), "fuzz.gguf");
    for (const auto& [key, value] : gguf->metadata()) Walk(value);
    volatile uint8_t sink = 0;
    for (const proctor::GgufTensorInfo& t : gguf->tensors()) {
      for (size_t i = 0; i < t.bytes; ++i) sink = sink ^ t.data[i];
    }
    proctor::WeightStore store("fuzz.gguf");
    proctor::AddGgufTensors(gguf, store);
    (void)proctor::ConfigFromGguf(*gguf, store);
  } catch (const proctor::Error&) {
  }
  return 0;
}
