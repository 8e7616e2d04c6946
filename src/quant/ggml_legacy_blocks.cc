// Scalar references for ggml's legacy 32-value blocks, Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1
// (layouts in ggml_blocks.h): dequantizers, dot products and ggml's reference quantizers.
// Each formula is evaluated in f32 in the order ggml's dequantize_row_* / quantize_row_*_ref
// use, so values and bytes are identical to ggml's (the quant library is built with
// -ffp-contract=off: no fused multiply-adds).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "quant/ggml_blocks.h"
#include "quant/ggml_scalar_helpers.h"
#include "util/half.h"

namespace proctor::quant {

using scalar::LoadBlock;

void DequantizeQ8_0Ref(const uint8_t* blocks, int64_t n_blocks, float* out) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const auto block = LoadBlock<BlockQ8_0>(blocks, b);
    const float d = F16ToF32(block.d);
    for (int i = 0; i < kQ8_0BlockElems; ++i) out[b * kQ8_0BlockElems + i] = d * block.q[i];
  }
}

void DequantizeQ4_0Ref(const uint8_t* blocks, int64_t n_blocks, float* out) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const auto block = LoadBlock<BlockQ4_0>(blocks, b);
    const float d = F16ToF32(block.d);
    float* o = out + b * kQ4_0BlockElems;
    for (int j = 0; j < kQ4_0BlockElems / 2; ++j) {
      o[j] = static_cast<float>((block.qs[j] & 0x0F) - 8) * d;
      o[j + kQ4_0BlockElems / 2] = static_cast<float>((block.qs[j] >> 4) - 8) * d;
    }
  }
}

// Q8_0 and Q4_0 dots sum q * x within a block, then scale the block's sum by d once.
float DotQ8_0Ref(const uint8_t* blocks, int64_t n_blocks, const float* x) {
  float sum = 0.0f;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const auto block = LoadBlock<BlockQ8_0>(blocks, b);
    float block_sum = 0.0f;
    for (int i = 0; i < kQ8_0BlockElems; ++i) block_sum += block.q[i] * x[b * kQ8_0BlockElems + i];
    sum += F16ToF32(block.d) * block_sum;
  }
  return sum;
}

float DotQ4_0Ref(const uint8_t* blocks, int64_t n_blocks, const float* x) {
  float sum = 0.0f;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const auto block = LoadBlock<BlockQ4_0>(blocks, b);
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

namespace {

uint32_t LoadU32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// The 5-bit codes of a Q5_0 / Q5_1 block: q[j] for j in [0, 32).
void FiveBitCodes(const uint8_t* qs, const uint8_t* qh_bytes, int* q) {
  const uint32_t qh = LoadU32(qh_bytes);
  for (int j = 0; j < kQK / 2; ++j) {
    q[j] = (qs[j] & 0x0F) | static_cast<int>(((qh >> j) & 1u) << 4);
    q[j + kQK / 2] = (qs[j] >> 4) | static_cast<int>(((qh >> (j + kQK / 2)) & 1u) << 4);
  }
}

}  // namespace

void DequantizeQ4_1Ref(const uint8_t* blocks, int64_t n_blocks, float* out) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const auto block = LoadBlock<BlockQ4_1>(blocks, b);
    const float d = F16ToF32(block.d), m = F16ToF32(block.m);
    float* o = out + b * kQK;
    for (int j = 0; j < kQK / 2; ++j) {
      o[j] = static_cast<float>(block.qs[j] & 0x0F) * d + m;
      o[j + kQK / 2] = static_cast<float>(block.qs[j] >> 4) * d + m;
    }
  }
}

void DequantizeQ5_0Ref(const uint8_t* blocks, int64_t n_blocks, float* out) {
  int q[kQK];
  for (int64_t b = 0; b < n_blocks; ++b) {
    const auto block = LoadBlock<BlockQ5_0>(blocks, b);
    const float d = F16ToF32(block.d);
    FiveBitCodes(block.qs, block.qh, q);
    for (int j = 0; j < kQK; ++j) out[b * kQK + j] = static_cast<float>(q[j] - 16) * d;
  }
}

void DequantizeQ5_1Ref(const uint8_t* blocks, int64_t n_blocks, float* out) {
  int q[kQK];
  for (int64_t b = 0; b < n_blocks; ++b) {
    const auto block = LoadBlock<BlockQ5_1>(blocks, b);
    const float d = F16ToF32(block.d), m = F16ToF32(block.m);
    FiveBitCodes(block.qs, block.qh, q);
    for (int j = 0; j < kQK; ++j) out[b * kQK + j] = static_cast<float>(q[j]) * d + m;
  }
}

PROCTOR_DEFINE_DOT_VIA_DEQUANTIZE_REF(Q4_1, kQK)
PROCTOR_DEFINE_DOT_VIA_DEQUANTIZE_REF(Q5_0, kQK)
PROCTOR_DEFINE_DOT_VIA_DEQUANTIZE_REF(Q5_1, kQK)

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

void QuantizeQ8_0X86(const float* x, int64_t n_blocks, uint8_t* blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float* xb = x + b * kQ8_0BlockElems;
    float amax = 0.0f;
    for (int i = 0; i < kQ8_0BlockElems; ++i) amax = std::max(amax, std::fabs(xb[i]));
    const float inv_d = amax != 0.0f ? 127.0f / amax : 0.0f;
    BlockQ8_0 block;
    block.d = F32ToF16(amax / 127.0f);
    for (int i = 0; i < kQ8_0BlockElems; ++i) {
      // Ties to even; what vcvtps2dq and the saturating packs make of anything else: a block
      // whose absmax is below 127 / FLT_MAX has an infinite 127 / absmax (and d 0 as f16), and
      // its products (inf or NaN) become -128.
      const float v = std::nearbyint(xb[i] * inv_d);
      block.q[i] = std::isfinite(v) ? static_cast<int8_t>(std::clamp(v, -128.0f, 127.0f))
                                    : static_cast<int8_t>(-128);
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

namespace {

// Q4_1 / Q5_1: codes relative to the block minimum; returns d and min of the block.
void MinMaxCodes(const float* xb, int max_code, int* q, float* d_out, float* min_out) {
  float min = FLT_MAX, max = -FLT_MAX;
  for (int j = 0; j < kQK; ++j) {
    min = std::min(min, xb[j]);
    max = std::max(max, xb[j]);
  }
  const float d = (max - min) / static_cast<float>(max_code);
  const float inv_d = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < kQK; ++j) {
    // ggml's rounding (truncation of x + 0.5, x >= 0): the bytes must match its quantizer.
    // NOLINTNEXTLINE(bugprone-incorrect-roundings)
    q[j] = std::min(max_code, static_cast<int>(static_cast<int8_t>((xb[j] - min) * inv_d + 0.5f)));
  }
  *d_out = d;
  *min_out = min;
}

void PackFiveBitCodes(const int* q, uint8_t* qs, uint8_t* qh_bytes) {
  uint32_t qh = 0;
  for (int j = 0; j < kQK / 2; ++j) {
    qs[j] = static_cast<uint8_t>((q[j] & 0x0F) | ((q[j + kQK / 2] & 0x0F) << 4));
    qh |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
    qh |= static_cast<uint32_t>((q[j + kQK / 2] >> 4) & 1) << (j + kQK / 2);
  }
  std::memcpy(qh_bytes, &qh, 4);
}

// Q4_1 / Q5_1: min-relative codes in [0, max_code]; pack(q, block) stores the codes.
template <typename Block, int kMaxCode, typename PackCodes>
void QuantizeMinBlocksRef(const float* x, int64_t n_blocks, uint8_t* blocks, PackCodes pack) {
  int q[kQK];
  for (int64_t b = 0; b < n_blocks; ++b) {
    float d, min;
    MinMaxCodes(x + b * kQK, kMaxCode, q, &d, &min);
    Block block;
    block.d = F32ToF16(d);
    block.m = F32ToF16(min);
    pack(q, &block);
    std::memcpy(blocks + b * sizeof(Block), &block, sizeof(block));
  }
}

}  // namespace

void QuantizeQ4_1Ref(const float* x, int64_t n_blocks, uint8_t* blocks) {
  QuantizeMinBlocksRef<BlockQ4_1, 15>(x, n_blocks, blocks, [](const int* q, BlockQ4_1* block) {
    for (int j = 0; j < kQK / 2; ++j) {
      block->qs[j] = static_cast<uint8_t>(q[j] | (q[j + kQK / 2] << 4));
    }
  });
}

void QuantizeQ5_1Ref(const float* x, int64_t n_blocks, uint8_t* blocks) {
  QuantizeMinBlocksRef<BlockQ5_1, 31>(x, n_blocks, blocks, [](const int* q, BlockQ5_1* block) {
    PackFiveBitCodes(q, block->qs, block->qh);
  });
}

void QuantizeQ5_0Ref(const float* x, int64_t n_blocks, uint8_t* blocks) {
  int q[kQK];
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float* xb = x + b * kQK;
    float amax = 0.0f, max = 0.0f;  // max: the signed value of largest magnitude
    for (int j = 0; j < kQK; ++j) {
      if (amax < std::fabs(xb[j])) {
        amax = std::fabs(xb[j]);
        max = xb[j];
      }
    }
    const float d = max / -16.0f;
    const float inv_d = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < kQK; ++j) {
      q[j] = std::min(31, static_cast<int>(static_cast<int8_t>(xb[j] * inv_d + 16.5f)));
    }
    BlockQ5_0 block;
    block.d = F32ToF16(d);
    PackFiveBitCodes(q, block.qs, block.qh);
    std::memcpy(blocks + b * sizeof(BlockQ5_0), &block, sizeof(block));
  }
}

}  // namespace proctor::quant
