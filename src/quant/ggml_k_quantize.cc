// ggml's reference quantizers for the K-quant super-blocks (what llama-quantize runs without an
// importance matrix), byte-identical to libggml's quantize_row_q{2,3,4,5,6}_K_ref, and its Q8_K
// activation blocks (quantize_row_q8_K_ref).
// Each 16- or 32-value sub-block gets its own scale (and minimum) by a small search that
// minimizes a weighted error; the sub-block scales are then quantized to 6 or 8 bits
// against the super-block's largest, and every value is re-coded against its decoded scale.
// Every f32 operation is ggml's, in ggml's order (the layer compiles with -ffp-contract=off).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/ggml_blocks.h"
#include "util/half.h"

namespace proctor::quant {
namespace {

// Rounds to the nearest integer, ties to even, as ggml's nearest_int: adding 1.5 * 2^23 leaves
// the rounded integer in the low mantissa bits (|value| <= 2^22).
int NearestInt(float value) {
  const float shifted = value + 12582912.0f;
  int bits;
  std::memcpy(&bits, &shifted, sizeof(bits));
  return (bits & 0x007fffff) - 0x00400000;
}

// The value of largest magnitude (the first of equal magnitudes), with its sign.
float SignedLargest(int n, const float* x) {
  float max = 0.0f, amax = 0.0f;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  return max;
}

// Signed codes in [-nmax, nmax) for n values (stored as code + nmax in `codes`) and their scale:
// the scale through the value of largest magnitude, then 18 nearby scales, keeping the one
// whose least-squares rescaling (weights x^2) explains the most. ggml's make_qx_quants with
// rmse_type 1 and no importance weights.
float SignedCodesWithScale(int n, int nmax, const float* x, int8_t* codes) {
  const float max = SignedLargest(n, x);
  if (std::fabs(max) < 1e-15f) {  // all zero, as ggml's GROUP_MAX_EPS
    std::memset(codes, 0, static_cast<size_t>(n));
    return 0.0f;
  }
  auto code_at = [&](float iscale, int i) {
    const int l = NearestInt(iscale * x[i]);
    return l < -nmax ? -nmax : (l > nmax - 1 ? nmax - 1 : l);
  };
  float iscale = -static_cast<float>(nmax) / max;
  float sumlx = 0.0f, suml2 = 0.0f;
  for (int i = 0; i < n; ++i) {
    const int l = code_at(iscale, i);
    codes[i] = static_cast<int8_t>(l + nmax);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * static_cast<float>(l);
    suml2 += w * static_cast<float>(l) * static_cast<float>(l);
  }
  float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int step = -9; step <= 9; ++step) {
    if (step == 0) continue;
    iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(step)) / max;
    sumlx = suml2 = 0.0f;
    for (int i = 0; i < n; ++i) {
      const int l = code_at(iscale, i);
      const float w = x[i] * x[i];
      sumlx += w * x[i] * static_cast<float>(l);
      suml2 += w * static_cast<float>(l) * static_cast<float>(l);
    }
    if (suml2 > 0.0f && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) codes[i] = static_cast<int8_t>(nmax + code_at(iscale, i));
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// Signed codes in [-nmax, nmax) for 16 values (stored as code + nmax; all zero for an all-zero
// input) and their scale: through the value of largest magnitude, then up to 5 passes that
// re-code one value at a time when that raises (sum w x l)^2 / sum w l^2 (weights x^2).
// ggml's make_q3_quants with do_rmse.
float SignedCodesRefined(int n, int nmax, const float* x, int8_t* codes) {
  const float max = SignedLargest(n, x);
  if (std::fabs(max) < 1e-15f) {  // all zero, as ggml's GROUP_MAX_EPS
    std::memset(codes, 0, static_cast<size_t>(n));
    return 0.0f;
  }
  auto clamp = [&](int l) { return l < -nmax ? -nmax : (l > nmax - 1 ? nmax - 1 : l); };
  const float iscale = -static_cast<float>(nmax) / max;
  float sumlx = 0.0f, suml2 = 0.0f;
  for (int i = 0; i < n; ++i) {
    const int l = clamp(NearestInt(iscale * x[i]));
    codes[i] = static_cast<int8_t>(l);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * static_cast<float>(l);
    suml2 += w * static_cast<float>(l) * static_cast<float>(l);
  }
  for (int pass = 0; pass < 5; ++pass) {
    int changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      const float li = static_cast<float>(codes[i]);
      float slx = sumlx - w * x[i] * li;
      if (slx > 0) {
        float sl2 = suml2 - w * li * li;
        const int new_l = clamp(NearestInt(x[i] * sl2 / slx));
        if (new_l != codes[i]) {
          const float nl = static_cast<float>(new_l);
          slx += w * x[i] * nl;
          sl2 += w * nl * nl;
          if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
            codes[i] = static_cast<int8_t>(new_l);
            sumlx = slx;
            suml2 = sl2;
            ++changed;
          }
        }
      }
    }
    if (changed == 0) break;
  }
  for (int i = 0; i < n; ++i) codes[i] = static_cast<int8_t>(codes[i] + nmax);
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

// Codes in [0, nmax] for n (16 or 32) values with a scale and a minimum (value ~ scale * code -
// min_out): min/max first, then nstep + 1 candidate scales around nmax / (max - min), each with
// its weighted least-squares scale and minimum, keeping the smallest weighted error (squared, or
// absolute with `absolute_error`). ggml's make_qkx2_quants.
float UnsignedCodesWithScaleAndMin(int n, int nmax, const float* x, const float* weights,
                                   uint8_t* codes, float* min_out, float rmin, float rdelta,
                                   int nstep, bool absolute_error) {
  float min = x[0], max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    const float w = weights[i];
    sum_w += w;
    sum_x += w * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    std::memset(codes, 0, static_cast<size_t>(n));
    *min_out = -min;
    return 0.0f;
  }
  auto code_at = [&](float iscale, int i) {
    const int l = NearestInt(iscale * (x[i] - min));
    return l < 0 ? 0 : (l > nmax ? nmax : l);
  };
  float iscale = static_cast<float>(nmax) / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    codes[i] = static_cast<uint8_t>(code_at(iscale, i));
    float diff = scale * static_cast<float>(codes[i]) + min - x[i];
    diff = absolute_error ? std::fabs(diff) : diff * diff;
    best_error += weights[i] * diff;
  }
  uint8_t trial[32];
  for (int step = 0; step <= nstep; ++step) {
    iscale = (rmin + rdelta * static_cast<float>(step) + static_cast<float>(nmax)) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = code_at(iscale, i);
      trial[i] = static_cast<uint8_t>(l);
      const float w = weights[i];
      const float lf = static_cast<float>(l);
      sum_l += w * lf;
      sum_l2 += w * lf * lf;
      sum_xl += w * lf * x[i];
    }
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (det > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float error = 0;
      for (int i = 0; i < n; ++i) {
        float diff = this_scale * static_cast<float>(trial[i]) + this_min - x[i];
        diff = absolute_error ? std::fabs(diff) : diff * diff;
        error += weights[i] * diff;
      }
      if (error < best_error) {
        std::memcpy(codes, trial, static_cast<size_t>(n));
        best_error = error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *min_out = -min;
  return scale;
}

// 256 2-bit codes into 64 bytes: in each 128-value half h, byte 32h + l holds values
// 128h + l + 32k at bits 2k (k = 0..3).
void PackTwoBitCodes(const uint8_t* codes, uint8_t* qs) {
  for (int h = 0; h < kQK_K / 128; ++h) {
    const uint8_t* c = codes + 128 * h;
    for (int l = 0; l < 32; ++l) {
      qs[32 * h + l] =
          static_cast<uint8_t>(c[l] | (c[l + 32] << 2) | (c[l + 64] << 4) | (c[l + 96] << 6));
    }
  }
}

// The shared part of Q4_K and Q5_K: per 32-value sub-block a scale and minimum (weights
// sqrt(mean x^2) + |x|), packed as 6-bit codes against the super-block's largest (d = max
// scale / 63, dmin = max min / 63), then every value re-coded in [0, nmax] against its decoded
// scale and minimum. Writes d, dmin and the 12 scale bytes, returns the codes in `codes`.
void QuantizeScaledMinSuperBlock(const float* x, int nmax, float rmin, int nstep, uint16_t* d_out,
                                 uint16_t* dmin_out, uint8_t* packed, uint8_t* codes) {
  constexpr int kSub = kQK_K / 32;
  float scales[kSub], mins[kSub], weights[32];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < kSub; ++j) {
    const float* xs = x + 32 * j;
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(xs[l]);
    scales[j] = UnsignedCodesWithScaleAndMin(32, nmax, xs, weights, codes + 32 * j, &mins[j], rmin,
                                             0.1f, nstep, false);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  std::memset(packed, 0, 12);
  for (int j = 0; j < kSub; ++j) {
    // ggml stores the rounded code in a uint8_t before clamping to 63.
    uint8_t ls = static_cast<uint8_t>(NearestInt(inv_scale * scales[j]));
    uint8_t lm = static_cast<uint8_t>(NearestInt(inv_min * mins[j]));
    ls = ls < 63 ? ls : 63;
    lm = lm < 63 ? lm : 63;
    if (j < 4) {
      packed[j] = ls;
      packed[j + 4] = lm;
    } else {
      packed[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
      packed[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
      packed[j] |= static_cast<uint8_t>((lm >> 4) << 6);
    }
  }
  *d_out = F32ToF16(max_scale / 63.f);
  *dmin_out = F32ToF16(max_min / 63.f);
  for (int j = 0; j < kSub; ++j) {
    uint8_t sc, m;
    UnpackScaleMinK4(packed, j, &sc, &m);
    const float d = F16ToF32(*d_out) * static_cast<float>(sc);
    if (d == 0.0f) continue;
    const float dm = F16ToF32(*dmin_out) * static_cast<float>(m);
    for (int i = 0; i < 32; ++i) {
      const int l = NearestInt((x[32 * j + i] + dm) / d);
      codes[32 * j + i] = static_cast<uint8_t>(l < 0 ? 0 : (l > nmax ? nmax : l));
    }
  }
}

}  // namespace

void QuantizeQ2_KRef(const float* x, int64_t n_blocks, uint8_t* blocks) {
  constexpr int kSub = kQK_K / 16;
  constexpr float kScaleMax = 15.f;
  for (int64_t b = 0; b < n_blocks; ++b, x += kQK_K) {
    BlockQ2_K block;
    uint8_t codes[kQK_K];
    float scales[kSub], mins[kSub], weights[16];
    float max_scale = 0, max_min = 0;
    for (int s = 0; s < kSub; ++s) {
      for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * s + l]);
      scales[s] = UnsignedCodesWithScaleAndMin(16, 3, x + 16 * s, weights, codes + 16 * s, &mins[s],
                                               -0.5f, 0.1f, 15, true);
      if (scales[s] > max_scale) max_scale = scales[s];
      if (mins[s] > max_min) max_min = mins[s];
    }
    // ggml stores the rounded codes into the uint8_t scale bytes as they come.
    if (max_scale > 0) {
      const float iscale = kScaleMax / max_scale;
      for (int s = 0; s < kSub; ++s) {
        block.scales[s] = static_cast<uint8_t>(NearestInt(iscale * scales[s]));
      }
      block.d = F32ToF16(max_scale / kScaleMax);
    } else {
      std::memset(block.scales, 0, sizeof(block.scales));
      block.d = F32ToF16(0.f);
    }
    if (max_min > 0) {
      const float iscale = kScaleMax / max_min;
      for (int s = 0; s < kSub; ++s) {
        block.scales[s] |= static_cast<uint8_t>(NearestInt(iscale * mins[s]) << 4);
      }
      block.dmin = F32ToF16(max_min / kScaleMax);
    } else {
      block.dmin = F32ToF16(0.f);
    }
    for (int s = 0; s < kSub; ++s) {
      const float d = F16ToF32(block.d) * static_cast<float>(block.scales[s] & 0xF);
      if (d == 0.0f) continue;
      const float dm = F16ToF32(block.dmin) * static_cast<float>(block.scales[s] >> 4);
      for (int i = 0; i < 16; ++i) {
        const int l = NearestInt((x[16 * s + i] + dm) / d);
        codes[16 * s + i] = static_cast<uint8_t>(l < 0 ? 0 : (l > 3 ? 3 : l));
      }
    }
    PackTwoBitCodes(codes, block.qs);
    std::memcpy(blocks + b * sizeof(BlockQ2_K), &block, sizeof(block));
  }
}

void QuantizeQ3_KRef(const float* x, int64_t n_blocks, uint8_t* blocks) {
  constexpr int kSub = kQK_K / 16;
  for (int64_t b = 0; b < n_blocks; ++b, x += kQK_K) {
    BlockQ3_K block;
    int8_t codes[kQK_K];
    float scales[kSub];
    float max_scale = 0, amax = 0;
    for (int s = 0; s < kSub; ++s) {
      scales[s] = SignedCodesRefined(16, 4, x + 16 * s, codes + 16 * s);
      if (std::fabs(scales[s]) > amax) {
        amax = std::fabs(scales[s]);
        max_scale = scales[s];
      }
    }
    // 16 6-bit scale codes: low nibbles in bytes 0..7 (sub-blocks 0..7 low, 8..15 high nibble),
    // the two high bits of sub-block s in byte 8 + s % 4 at bit 2 (s / 4).
    std::memset(block.scales, 0, sizeof(block.scales));
    if (max_scale != 0.0f) {
      const float iscale = -32.f / max_scale;
      for (int s = 0; s < kSub; ++s) {
        int l = static_cast<int8_t>(NearestInt(iscale * scales[s]));
        l = (l < -32 ? -32 : (l > 31 ? 31 : l)) + 32;
        if (s < 8) {
          block.scales[s] = static_cast<uint8_t>(l & 0xF);
        } else {
          block.scales[s - 8] |= static_cast<uint8_t>((l & 0xF) << 4);
        }
        block.scales[s % 4 + 8] |= static_cast<uint8_t>((l >> 4) << (2 * (s / 4)));
      }
      block.d = F32ToF16(1 / iscale);
    } else {
      block.d = F32ToF16(0.f);
    }
    int8_t unpacked[kSub];
    UnpackQ3_KScales(block.scales, unpacked);
    for (int s = 0; s < kSub; ++s) {
      const float d = F16ToF32(block.d) * static_cast<float>(unpacked[s]);
      if (d == 0.0f) continue;
      for (int i = 0; i < 16; ++i) {
        const int l = NearestInt(x[16 * s + i] / d);
        codes[16 * s + i] = static_cast<int8_t>((l < -4 ? -4 : (l > 3 ? 3 : l)) + 4);
      }
    }
    // The third bit of value j goes to hmask[j % 32] bit j / 32; the low two bits are packed.
    std::memset(block.hmask, 0, sizeof(block.hmask));
    uint8_t low[kQK_K];
    for (int j = 0; j < kQK_K; ++j) {
      if (codes[j] > 3) block.hmask[j % 32] |= static_cast<uint8_t>(1u << (j / 32));
      low[j] = static_cast<uint8_t>(codes[j] & 3);
    }
    PackTwoBitCodes(low, block.qs);
    std::memcpy(blocks + b * sizeof(BlockQ3_K), &block, sizeof(block));
  }
}

void QuantizeQ4_KRef(const float* x, int64_t n_blocks, uint8_t* blocks) {
  for (int64_t b = 0; b < n_blocks; ++b, x += kQK_K) {
    BlockQ4_K block;
    uint8_t codes[kQK_K];
    QuantizeScaledMinSuperBlock(x, 15, -1.0f, 20, &block.d, &block.dmin, block.scales, codes);
    for (int c = 0; c < kQK_K / 64; ++c) {
      for (int l = 0; l < 32; ++l) {
        block.qs[32 * c + l] =
            static_cast<uint8_t>(codes[64 * c + l] | (codes[64 * c + 32 + l] << 4));
      }
    }
    std::memcpy(blocks + b * sizeof(BlockQ4_K), &block, sizeof(block));
  }
}

void QuantizeQ5_KRef(const float* x, int64_t n_blocks, uint8_t* blocks) {
  for (int64_t b = 0; b < n_blocks; ++b, x += kQK_K) {
    BlockQ5_K block;
    uint8_t codes[kQK_K];
    QuantizeScaledMinSuperBlock(x, 31, -0.5f, 15, &block.d, &block.dmin, block.scales, codes);
    std::memset(block.qh, 0, sizeof(block.qh));
    for (int c = 0; c < kQK_K / 64; ++c) {
      for (int l = 0; l < 32; ++l) {
        const int lo = codes[64 * c + l], hi = codes[64 * c + 32 + l];
        if (lo > 15) block.qh[l] |= static_cast<uint8_t>(1u << (2 * c));
        if (hi > 15) block.qh[l] |= static_cast<uint8_t>(2u << (2 * c));
        block.qs[32 * c + l] = static_cast<uint8_t>((lo & 15) | ((hi & 15) << 4));
      }
    }
    std::memcpy(blocks + b * sizeof(BlockQ5_K), &block, sizeof(block));
  }
}

void QuantizeQ6_KRef(const float* x, int64_t n_blocks, uint8_t* blocks) {
  constexpr int kSub = kQK_K / 16;
  for (int64_t b = 0; b < n_blocks; ++b, x += kQK_K) {
    BlockQ6_K block;
    std::memset(&block, 0, sizeof(block));
    int8_t codes[kQK_K];
    float scales[kSub];
    float max_scale = 0, max_abs_scale = 0;
    for (int s = 0; s < kSub; ++s) {
      scales[s] = SignedCodesWithScale(16, 32, x + 16 * s, codes + 16 * s);
      if (std::fabs(scales[s]) > max_abs_scale) {
        max_abs_scale = std::fabs(scales[s]);
        max_scale = scales[s];
      }
    }
    if (max_abs_scale >= 1e-15f) {
      const float iscale = -128.f / max_scale;
      block.d = F32ToF16(1 / iscale);
      for (int s = 0; s < kSub; ++s) {
        const int code = NearestInt(iscale * scales[s]);
        block.scales[s] = static_cast<int8_t>(code < 127 ? code : 127);
      }
      for (int s = 0; s < kSub; ++s) {
        const float d = F16ToF32(block.d) * static_cast<float>(block.scales[s]);
        if (d == 0.0f) continue;
        for (int i = 0; i < 16; ++i) {
          const int l = NearestInt(x[16 * s + i] / d);
          codes[16 * s + i] = static_cast<int8_t>((l < -32 ? -32 : (l > 31 ? 31 : l)) + 32);
        }
      }
      for (int h = 0; h < kQK_K / 128; ++h) {
        const int8_t* q = codes + 128 * h;
        uint8_t* ql = block.ql + 64 * h;
        uint8_t* qh = block.qh + 32 * h;
        for (int l = 0; l < 32; ++l) {
          ql[l] = static_cast<uint8_t>((q[l] & 0xF) | ((q[l + 64] & 0xF) << 4));
          ql[l + 32] = static_cast<uint8_t>((q[l + 32] & 0xF) | ((q[l + 96] & 0xF) << 4));
          qh[l] = static_cast<uint8_t>((q[l] >> 4) | ((q[l + 32] >> 4) << 2) |
                                       ((q[l + 64] >> 4) << 4) | ((q[l + 96] >> 4) << 6));
        }
      }
    }
    std::memcpy(blocks + b * sizeof(BlockQ6_K), &block, sizeof(block));
  }
}

void QuantizeQ8_KRef(const float* x, int64_t n_blocks, uint8_t* blocks) {
  for (int64_t b = 0; b < n_blocks; ++b, x += kQK_K) {
    BlockQ8_K block{};
    const float max = SignedLargest(kQK_K, x);
    if (max != 0.0f) {
      const float iscale = -127.0f / max;
      for (int i = 0; i < kQK_K; ++i) {
        block.q[i] = static_cast<int8_t>(std::min(127, NearestInt(iscale * x[i])));
      }
      for (int g = 0; g < kQK_K / 16; ++g) {
        int sum = 0;
        for (int i = 0; i < 16; ++i) sum += block.q[16 * g + i];
        block.bsums[g] = static_cast<int16_t>(sum);
      }
      block.d = 1.0f / iscale;
    }
    std::memcpy(blocks + b * sizeof(BlockQ8_K), &block, sizeof(block));
  }
}

}  // namespace proctor::quant
