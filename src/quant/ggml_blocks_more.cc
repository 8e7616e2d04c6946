// Scalar references for GGUF Q4_1, Q5_0, Q5_1 and the K-quants (see ggml_blocks.h for layouts).
// Each formula is evaluated in f32 in the order ggml's dequantize_row_* uses, so the values are
// bit-identical to ggml's (the quant library is built with -ffp-contract=off: no fused
// multiply-adds).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "quant/ggml_blocks.h"
#include "util/half.h"

namespace proctor::quant {
namespace {

template <typename Block>
Block LoadBlock(const uint8_t* blocks, int64_t b) {
  Block block;
  std::memcpy(&block, blocks + b * static_cast<int64_t>(sizeof(Block)), sizeof(Block));
  return block;
}

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

// Reference dot: dequantize one block at a time, then sum value * x in element order.
template <DequantizeBlocksFn kDequantize, int kElems>
float DotViaDequantizeRef(const uint8_t* blocks, int64_t n_blocks, const float* x,
                          int block_bytes) {
  float values[kElems];
  float sum = 0.0f;
  for (int64_t b = 0; b < n_blocks; ++b) {
    kDequantize(blocks + b * block_bytes, 1, values);
    for (int i = 0; i < kElems; ++i) sum += values[i] * x[b * kElems + i];
  }
  return sum;
}

}  // namespace

void UnpackScaleMinK4(const uint8_t* packed, int j, uint8_t* scale, uint8_t* min) {
  if (j < 4) {
    *scale = packed[j] & 63;
    *min = packed[j + 4] & 63;
  } else {
    *scale = static_cast<uint8_t>((packed[j + 4] & 0x0F) | ((packed[j - 4] >> 6) << 4));
    *min = static_cast<uint8_t>((packed[j + 4] >> 4) | ((packed[j] >> 6) << 4));
  }
}

void UnpackQ3_KScales(const uint8_t* packed, int8_t* scales) {
  for (int s = 0; s < 16; ++s) {
    const int low = s < 8 ? (packed[s] & 0x0F) : (packed[s - 8] >> 4);
    const int high = (packed[8 + s % 4] >> (2 * (s / 4))) & 3;
    scales[s] = static_cast<int8_t>((low | (high << 4)) - 32);
  }
}

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

void DequantizeQ2_KRef(const uint8_t* blocks, int64_t n_blocks, float* out) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const auto block = LoadBlock<BlockQ2_K>(blocks, b);
    const float d = F16ToF32(block.d), dmin = F16ToF32(block.dmin);
    float* o = out + b * kQK_K;
    for (int h = 0; h < 2; ++h) {
      const uint8_t* q = block.qs + 32 * h;
      for (int shift_index = 0; shift_index < 4; ++shift_index) {
        for (int p = 0; p < 2; ++p) {
          const uint8_t sc = block.scales[8 * h + 2 * shift_index + p];
          const float dl = d * static_cast<float>(sc & 0x0F);
          const float ml = dmin * static_cast<float>(sc >> 4);
          for (int l = 0; l < 16; ++l) {
            const int code = (q[16 * p + l] >> (2 * shift_index)) & 3;
            *o++ = dl * static_cast<float>(code) - ml;
          }
        }
      }
    }
  }
}

void DequantizeQ3_KRef(const uint8_t* blocks, int64_t n_blocks, float* out) {
  int8_t scales[16];
  for (int64_t b = 0; b < n_blocks; ++b) {
    const auto block = LoadBlock<BlockQ3_K>(blocks, b);
    const float d = F16ToF32(block.d);
    UnpackQ3_KScales(block.scales, scales);
    float* o = out + b * kQK_K;
    for (int h = 0; h < 2; ++h) {
      const uint8_t* q = block.qs + 32 * h;
      for (int shift_index = 0; shift_index < 4; ++shift_index) {
        const int high_bit = 4 * h + shift_index;
        for (int p = 0; p < 2; ++p) {
          const float dl = d * static_cast<float>(scales[8 * h + 2 * shift_index + p]);
          for (int l = 0; l < 16; ++l) {
            const int low = (q[16 * p + l] >> (2 * shift_index)) & 3;
            const int high_set = (block.hmask[16 * p + l] >> high_bit) & 1;
            *o++ = dl * static_cast<float>(low - (high_set ? 0 : 4));
          }
        }
      }
    }
  }
}

namespace {

// Q4_K and Q5_K: 8 sub-blocks of 32 with 6-bit scales and mins; Q5_K codes take a fifth bit from
// qh (bit 2c + half of qh[l]).
template <typename Block, bool kFifthBit>
void DequantizeScaleMinKRef(const uint8_t* blocks, int64_t n_blocks, float* out) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const auto block = LoadBlock<Block>(blocks, b);
    const float d = F16ToF32(block.d), dmin = F16ToF32(block.dmin);
    float* o = out + b * kQK_K;
    for (int c = 0; c < 4; ++c) {
      const uint8_t* q = block.qs + 32 * c;
      for (int half = 0; half < 2; ++half) {
        uint8_t sc, m;
        UnpackScaleMinK4(block.scales, 2 * c + half, &sc, &m);
        const float dl = d * static_cast<float>(sc);
        const float ml = dmin * static_cast<float>(m);
        for (int l = 0; l < 32; ++l) {
          int code = half == 0 ? (q[l] & 0x0F) : (q[l] >> 4);
          if constexpr (kFifthBit) code += ((block.qh[l] >> (2 * c + half)) & 1) << 4;
          *o++ = dl * static_cast<float>(code) - ml;
        }
      }
    }
  }
}

}  // namespace

void DequantizeQ4_KRef(const uint8_t* blocks, int64_t n_blocks, float* out) {
  DequantizeScaleMinKRef<BlockQ4_K, /*kFifthBit=*/false>(blocks, n_blocks, out);
}

void DequantizeQ5_KRef(const uint8_t* blocks, int64_t n_blocks, float* out) {
  DequantizeScaleMinKRef<BlockQ5_K, /*kFifthBit=*/true>(blocks, n_blocks, out);
}

void DequantizeQ6_KRef(const uint8_t* blocks, int64_t n_blocks, float* out) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const auto block = LoadBlock<BlockQ6_K>(blocks, b);
    const float d = F16ToF32(block.d);
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = block.ql + 64 * h;
      const uint8_t* qh = block.qh + 32 * h;
      const int8_t* sc = block.scales + 8 * h;
      float* o = out + b * kQK_K + 128 * h;
      for (int l = 0; l < 32; ++l) {
        for (int i = 0; i < 4; ++i) {
          const int low = (ql[l + 32 * (i & 1)] >> (4 * (i >> 1))) & 0x0F;
          const int code = (low | (((qh[l] >> (2 * i)) & 3) << 4)) - 32;
          o[l + 32 * i] = d * static_cast<float>(sc[l / 16 + 2 * i]) * static_cast<float>(code);
        }
      }
    }
  }
}

#define PROCTOR_DEFINE_DOT_REF(T, kElems)                                                          \
  float Dot##T##Ref(const uint8_t* blocks, int64_t n_blocks, const float* x) {                     \
    return DotViaDequantizeRef<Dequantize##T##Ref, kElems>(blocks, n_blocks, x, sizeof(Block##T)); \
  }
PROCTOR_DEFINE_DOT_REF(Q4_1, kQK)
PROCTOR_DEFINE_DOT_REF(Q5_0, kQK)
PROCTOR_DEFINE_DOT_REF(Q5_1, kQK)
PROCTOR_DEFINE_DOT_REF(Q2_K, kQK_K)
PROCTOR_DEFINE_DOT_REF(Q3_K, kQK_K)
PROCTOR_DEFINE_DOT_REF(Q4_K, kQK_K)
PROCTOR_DEFINE_DOT_REF(Q5_K, kQK_K)
PROCTOR_DEFINE_DOT_REF(Q6_K, kQK_K)
#undef PROCTOR_DEFINE_DOT_REF

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

}  // namespace

namespace {

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
