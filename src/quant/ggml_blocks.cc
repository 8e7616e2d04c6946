#include "quant/ggml_blocks.h"

#include <cmath>
#include <cstring>

#include "util/half.h"

namespace proctor::quant {

void DequantizeQ8_0Ref(const uint8_t* blocks, int64_t n_blocks, float* out) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    BlockQ8_0 block;
    std::memcpy(&block, blocks + b * sizeof(BlockQ8_0), sizeof(block));
    const float d = F16ToF32(block.d);
    for (int i = 0; i < kQ8_0BlockElems; ++i) out[b * kQ8_0BlockElems + i] = d * block.q[i];
  }
}

void DequantizeQ4_0Ref(const uint8_t* blocks, int64_t n_blocks, float* out) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    BlockQ4_0 block;
    std::memcpy(&block, blocks + b * sizeof(BlockQ4_0), sizeof(block));
    const float d = F16ToF32(block.d);
    float* o = out + b * kQ4_0BlockElems;
    for (int j = 0; j < kQ4_0BlockElems / 2; ++j) {
      o[j] = static_cast<float>((block.qs[j] & 0x0F) - 8) * d;
      o[j + kQ4_0BlockElems / 2] = static_cast<float>((block.qs[j] >> 4) - 8) * d;
    }
  }
}

float DotQ8_0Ref(const uint8_t* blocks, int64_t n_blocks, const float* x) {
  float sum = 0.0f;
  for (int64_t b = 0; b < n_blocks; ++b) {
    BlockQ8_0 block;
    std::memcpy(&block, blocks + b * sizeof(BlockQ8_0), sizeof(block));
    float block_sum = 0.0f;
    for (int i = 0; i < kQ8_0BlockElems; ++i) block_sum += block.q[i] * x[b * kQ8_0BlockElems + i];
    sum += F16ToF32(block.d) * block_sum;
  }
  return sum;
}

float DotQ4_0Ref(const uint8_t* blocks, int64_t n_blocks, const float* x) {
  float sum = 0.0f;
  for (int64_t b = 0; b < n_blocks; ++b) {
    BlockQ4_0 block;
    std::memcpy(&block, blocks + b * sizeof(BlockQ4_0), sizeof(block));
    const float* xb = x + b * kQ4_0BlockElems;
    float block_sum = 0.0f;
    for (int j = 0; j < kQ4_0BlockElems / 2; ++j) {
      block_sum += static_cast<float>((block.qs[j] & 0x0F) - 8) * xb[j];
      block_sum += static_cast<float>((block.qs[j] >> 4) - 8) * xb[j + kQ4_0BlockElems / 2];
    }
    sum += F16ToF32(block.d) * block_sum;
  }
  return sum;
}

void QuantizeQ8_0Ref(const float* x, int64_t n_blocks, uint8_t* blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float* xb = x + b * kQ8_0BlockElems;
    float amax = 0.0f;
    for (int i = 0; i < kQ8_0BlockElems; ++i) amax = std::max(amax, std::fabs(xb[i]));
    const float d = amax / 127.0f;
    const float inv_d = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ8_0 block;
    block.d = F32ToF16(d);
    for (int i = 0; i < kQ8_0BlockElems; ++i) {
      block.q[i] = static_cast<int8_t>(std::lround(xb[i] * inv_d));
    }
    std::memcpy(blocks + b * sizeof(BlockQ8_0), &block, sizeof(block));
  }
}

void QuantizeQ4_0Ref(const float* x, int64_t n_blocks, uint8_t* blocks) {
  constexpr int kHalf = kQ4_0BlockElems / 2;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float* xb = x + b * kQ4_0BlockElems;
    float amax = 0.0f, max = 0.0f;  // max: the signed value of largest magnitude
    for (int i = 0; i < kQ4_0BlockElems; ++i) {
      if (std::fabs(xb[i]) > amax) {
        amax = std::fabs(xb[i]);
        max = xb[i];
      }
    }
    const float d = max / -8.0f;
    const float inv_d = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ4_0 block;
    block.d = F32ToF16(d);
    for (int j = 0; j < kHalf; ++j) {
      const int lo = std::min(15, static_cast<int>(xb[j] * inv_d + 8.5f));
      const int hi = std::min(15, static_cast<int>(xb[j + kHalf] * inv_d + 8.5f));
      block.qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
    std::memcpy(blocks + b * sizeof(BlockQ4_0), &block, sizeof(block));
  }
}

const BlockTraits* FindBlockTraits(DType type) {
#define PROCTOR_TRAITS(T, kElems)                                                        \
  {DType::k##T, kElems, sizeof(Block##T), Dequantize##T##Ref, Dequantize##T, Dot##T##Ref, \
   Dot##T}
  static const BlockTraits kTraits[] = {
      PROCTOR_TRAITS(Q8_0, kQ8_0BlockElems), PROCTOR_TRAITS(Q4_0, kQ4_0BlockElems),
      PROCTOR_TRAITS(Q4_1, kQK),             PROCTOR_TRAITS(Q5_0, kQK),
      PROCTOR_TRAITS(Q5_1, kQK),             PROCTOR_TRAITS(Q2_K, kQK_K),
      PROCTOR_TRAITS(Q3_K, kQK_K),           PROCTOR_TRAITS(Q4_K, kQK_K),
      PROCTOR_TRAITS(Q5_K, kQK_K),           PROCTOR_TRAITS(Q6_K, kQK_K),
  };
#undef PROCTOR_TRAITS
  for (const BlockTraits& traits : kTraits) {
    if (traits.type == type) return &traits;
  }
  return nullptr;
}

}  // namespace proctor::quant
