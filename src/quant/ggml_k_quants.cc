// Scalar references for ggml's K-quants, Q2_K, Q3_K, Q4_K, Q5_K and Q6_K: 256-value super-blocks
// of 16 or 32-value sub-blocks with packed sub-block scales (layouts in ggml_blocks.h). Each
// formula is evaluated in f32 in the order ggml's dequantize_row_* uses, so the values are
// bit-identical to ggml's (the quant library is built with -ffp-contract=off: no fused
// multiply-adds). proctor has no K-quant quantizer: ggml's are search-based.
#include "quant/ggml_blocks.h"
#include "quant/ggml_scalar_helpers.h"
#include "util/half.h"

namespace proctor::quant {

using scalar::LoadBlock;

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
          const int8_t scale = sc[l / 16 + 2 * i];  // one scale per 16 weights
          o[l + 32 * i] = d * static_cast<float>(scale) * static_cast<float>(code);
        }
      }
    }
  }
}

PROCTOR_DEFINE_DOT_VIA_DEQUANTIZE_REF(Q2_K, kQK_K)
PROCTOR_DEFINE_DOT_VIA_DEQUANTIZE_REF(Q3_K, kQK_K)
PROCTOR_DEFINE_DOT_VIA_DEQUANTIZE_REF(Q4_K, kQK_K)
PROCTOR_DEFINE_DOT_VIA_DEQUANTIZE_REF(Q5_K, kQK_K)
PROCTOR_DEFINE_DOT_VIA_DEQUANTIZE_REF(Q6_K, kQK_K)

}  // namespace proctor::quant
