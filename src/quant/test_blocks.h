// Helpers shared by the quant tests: random weights and random (but finite-scaled) GGUF blocks.
#pragma once

#include <cstring>
#include <random>
#include <vector>

#include "quant/ggml_blocks.h"
#include "tensor/dtype.h"
#include "util/half.h"

namespace proctor::quant::testing {

// Normal weights with a different spread per 32 values and a few outliers, deterministic.
inline std::vector<float> RandomWeights(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::uniform_real_distribution<float> spread(0.01f, 2.0f);
  std::vector<float> w(static_cast<size_t>(n));
  float scale = 1.0f;
  for (int64_t i = 0; i < n; ++i) {
    if (i % 32 == 0) scale = spread(rng);
    w[i] = normal(rng) * scale;
    if (i % 97 == 13) w[i] *= 8.0f;
  }
  return w;
}

// Byte offsets of the fp16 scale fields inside one block of `type`.
inline std::vector<int> HalfFieldOffsets(DType type) {
  switch (type) {
    case DType::kQ8_0:
    case DType::kQ4_0:
    case DType::kQ5_0:
    case DType::kIQ4_NL:
      return {0};
    case DType::kQ4_1:
    case DType::kQ5_1:
    case DType::kQ4_K:
    case DType::kQ5_K:
      return {0, 2};
    case DType::kQ2_K:
      return {80, 82};
    case DType::kQ3_K:
      return {108};
    case DType::kQ6_K:
      return {208};
    default:
      return {};
  }
}

// Random bytes with finite fp16 scales (some negative, zero or subnormal).
inline std::vector<uint8_t> RandomBlocks(DType type, int n_blocks, uint32_t seed) {
  const size_t block_bytes = Info(type).block_bytes;
  std::mt19937 rng(seed);
  std::vector<uint8_t> raw(block_bytes * n_blocks);
  for (auto& b : raw) b = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
  for (int b = 0; b < n_blocks; ++b) {
    for (int offset : HalfFieldOffsets(type)) {
      uint16_t d = F32ToF16(scale(rng));
      if (b % 7 == 3) d = 0x0003;   // subnormal
      if (b % 11 == 5) d = 0x8000;  // negative zero
      std::memcpy(&raw[b * block_bytes + offset], &d, 2);
    }
  }
  return raw;
}

}  // namespace proctor::quant::testing
