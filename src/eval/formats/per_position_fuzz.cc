// Fuzz target: the per-position scores reader (eval/formats/per_position.h) on arbitrary bytes. Any
// input must give a file or a proctor::Error, never a crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "eval/formats/per_position.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const proctor::PerPositionFile file = proctor::ParsePerPositionFile(
        std::string_view(reinterpret_cast<const char*>(data), size), "fuzz-input");
    volatile uint64_t sink = file.records.size();
    (void)sink;
  } catch (const proctor::Error&) {
  }
  return 0;
}
