// libFuzzer target: the safetensors header parser must reject any input with an Error, never
// crash, read out of bounds or allocate without bound. Every accepted tensor is read in full.
#include <cstddef>
#include <cstdint>

#include "formats/safetensors.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const proctor::SafetensorsHeader header =
        proctor::ParseSafetensors(std::span<const uint8_t>(data, size), "fuzz.safetensors");
    volatile uint8_t sink = 0;
    for (const proctor::TensorInfo& t : header.tensors) {
      for (size_t i = 0; i < t.bytes; ++i) sink = sink ^ t.data[i];
    }
  } catch (const proctor::Error&) {
  }
  return 0;
}
