// The K-quants: hand-worked Q4_K (packed 6-bit scales and mins) and Q6_K blocks. (Every type's
// SIMD and dot kernels are in ggml_blocks_test.cc; bit-identity with ggml in ggml_oracle_test.cc.)
#include <gtest/gtest.h>

#include "quant/ggml_blocks.h"
#include "util/half.h"

namespace proctor::quant {
namespace {

TEST(GgmlKQuants, HandWorkedQ4_KScalesAndValues) {
  BlockQ4_K block{};
  block.d = F32ToF16(0.5f);
  block.dmin = F32ToF16(0.25f);
  // Sub-block 0: scale 3, min 4 (bytes 0 and 4); sub-block 5: scale 0x2A = 42 (low nibble in
  // byte 9, top two bits in byte 1), min 0x11 = 17 (high nibble of byte 9, top bits in byte 5).
  block.scales[0] = 3;
  block.scales[4] = 4;
  block.scales[9] = 0x1A;  // scale low 0xA, min low 0x1
  block.scales[1] = 0x80;  // scale bits 4-5 = 2 -> 0x2A
  block.scales[5] = 0x40;  // min bits 4-5 = 1 -> 0x11
  uint8_t sc, m;
  UnpackScaleMinK4(block.scales, 5, &sc, &m);
  EXPECT_EQ(sc, 42);
  EXPECT_EQ(m, 17);
  block.qs[0] = 0x07;   // value 0: code 7 in sub-block 0 -> 0.5*3*7 - 0.25*4 = 9.5
  block.qs[64] = 0x90;  // value 160 (chunk 2, high nibble, sub-block 5): code 9
  float out[256];
  DequantizeQ4_KRef(reinterpret_cast<const uint8_t*>(&block), 1, out);
  EXPECT_EQ(out[0], 9.5f);
  EXPECT_EQ(out[160], 0.5f * 42 * 9 - 0.25f * 17);
}

TEST(GgmlKQuants, HandWorkedQ6_K) {
  BlockQ6_K block{};
  block.d = F32ToF16(0.125f);
  block.scales[2] = -3;  // sub-block of values 32..47
  block.ql[0] = 0x05;    // value 32 (i = 1) uses ql[32]; value 0 uses ql[0] low nibble
  block.ql[32] = 0x0A;   // value 32 low nibble 10
  block.qh[0] = 0x0C;    // value 32 high bits (qh[0] >> 2) & 3 = 3 -> q = 10 | 48 = 58 - 32 = 26
  float out[256];
  DequantizeQ6_KRef(reinterpret_cast<const uint8_t*>(&block), 1, out);
  EXPECT_EQ(out[32], 0.125f * -3 * 26);
  EXPECT_EQ(out[0], 0.125f * 0 * (5 - 32));  // scales[0] is 0
}

}  // namespace
}  // namespace proctor::quant
