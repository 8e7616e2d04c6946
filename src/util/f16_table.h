// The f32 value of every fp16 bit pattern, as a table built once per process: hot loops (GGUF
// block scales, fp16 log-probabilities of reference-logits records) pay one load instead of a
// conversion. Exact (F16ToF32 of util/half.h: subnormals, infinities, NaN).
#pragma once

#include <cstdint>
#include <vector>

#include "util/half.h"

namespace proctor {

// [65536]: F16ToF32Table()[h] == F16ToF32(h).
inline const float* F16ToF32Table() {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (uint32_t h = 0; h < 65536; ++h) t[h] = F16ToF32(static_cast<uint16_t>(h));
    return t;
  }();
  return table.data();
}

}  // namespace proctor
