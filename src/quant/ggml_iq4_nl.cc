// Scalar reference of ggml's IQ4_NL blocks (layout in ggml_blocks.h): the dequantizer, the dot
// product, and ggml's two quantizers (quantize_iq4_nl and quantize_row_iq4_nl_ref), each
// evaluated in f32 in ggml's order so values and bytes are identical to ggml's (the quant
// library is built with -ffp-contract=off).
#include <cmath>
#include <cstring>

#include "quant/ggml_blocks.h"
#include "quant/ggml_scalar_helpers.h"
#include "util/half.h"

namespace proctor::quant {

using scalar::LoadBlock;

void DequantizeIQ4_NLRef(const uint8_t* blocks, int64_t n_blocks, float* out) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const auto block = LoadBlock<BlockIQ4_NL>(blocks, b);
    const float d = F16ToF32(block.d);
    float* o = out + b * kQK;
    for (int j = 0; j < kQK / 2; ++j) {
      o[j] = d * static_cast<float>(kIQ4_NLValues[block.qs[j] & 0x0F]);
      o[j + kQK / 2] = d * static_cast<float>(kIQ4_NLValues[block.qs[j] >> 4]);
    }
  }
}

PROCTOR_DEFINE_DOT_VIA_DEQUANTIZE_REF(IQ4_NL, kQK)

namespace {

constexpr int kLevels = 16;
constexpr float kGroupMaxEps = 1e-15f;  // ggml's GROUP_MAX_EPS

// The index of the level nearest x, ggml's best_index_int8 (a tie goes to the upper level).
int NearestLevel(float x) {
  if (x <= kIQ4_NLValues[0]) return 0;
  if (x >= kIQ4_NLValues[kLevels - 1]) return kLevels - 1;
  int lo = 0, hi = kLevels - 1;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (x < kIQ4_NLValues[mid]) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return x - kIQ4_NLValues[hi - 1] < kIQ4_NLValues[hi] - x ? hi - 1 : hi;
}

// Weighted least-squares fit of one block's values to the levels chosen with 1 / d = inv_d
// (weights x^2): sum(w q x) and sum(w q q), and the levels in `codes` when it is not null.
struct Fit {
  float sum_qx = 0.0f;
  float sum_q2 = 0.0f;
};

Fit FitLevels(const float* xb, float inv_d, uint8_t* codes) {
  Fit fit;
  for (int j = 0; j < kQK; ++j) {
    const int l = NearestLevel(inv_d * xb[j]);
    if (codes != nullptr) codes[j] = static_cast<uint8_t>(l);
    const float q = kIQ4_NLValues[l];
    const float w = xb[j] * xb[j];
    fit.sum_qx += w * q * xb[j];
    fit.sum_q2 += w * q * q;
  }
  return fit;
}

// One block, as ggml's quantize_row_iq4_nl_impl with one 32-value block per super-block and no
// importance matrix. `tries` is ggml's ntry: 7 for quantize_iq4_nl, -1 for the row quantizer.
// `codes` keeps its contents for a block below kGroupMaxEps when tries <= 0 (ggml's behaviour).
void QuantizeBlock(const float* xb, int tries, uint8_t* codes, BlockIQ4_NL* block) {
  float amax = 0.0f, max = 0.0f;  // max: the signed value of largest magnitude
  for (int j = 0; j < kQK; ++j) {
    const float ax = std::fabs(xb[j]);
    if (ax > amax) {
      amax = ax;
      max = xb[j];
    }
  }
  float d = 0.0f;
  if (amax >= kGroupMaxEps) {
    const auto first_level = static_cast<float>(kIQ4_NLValues[0]);
    d = tries > 0 ? -max / first_level : max / first_level;
    const Fit first = FitLevels(xb, 1.0f / d, codes);
    d = first.sum_q2 > 0.0f ? first.sum_qx / first.sum_q2 : 0.0f;
    float best = d * first.sum_qx;
    for (int t = -tries; t <= tries; ++t) {
      const Fit fit = FitLevels(xb, static_cast<float>(t + kIQ4_NLValues[0]) / max, nullptr);
      if (fit.sum_q2 > 0.0f && fit.sum_qx * fit.sum_qx > best * fit.sum_q2) {
        d = fit.sum_qx / fit.sum_q2;
        best = d * fit.sum_qx;
      }
    }
  }
  block->d = F32ToF16(d);
  if (tries > 0) {
    const float inv_d = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < kQK; ++j) codes[j] = static_cast<uint8_t>(NearestLevel(inv_d * xb[j]));
  }
  for (int j = 0; j < kQK / 2; ++j) {
    block->qs[j] = static_cast<uint8_t>(codes[j] | (codes[j + kQK / 2] << 4));
  }
}

void QuantizeBlocks(const float* x, int64_t n_blocks, uint8_t* blocks, int tries) {
  uint8_t codes[kQK] = {};
  for (int64_t b = 0; b < n_blocks; ++b) {
    BlockIQ4_NL block;
    QuantizeBlock(x + b * kQK, tries, codes, &block);
    std::memcpy(blocks + b * sizeof(BlockIQ4_NL), &block, sizeof(block));
  }
}

}  // namespace

void QuantizeIQ4_NLRef(const float* x, int64_t n_blocks, uint8_t* blocks) {
  QuantizeBlocks(x, n_blocks, blocks, /*tries=*/7);
}

void QuantizeIQ4_NLRowRef(const float* x, int64_t n_blocks, uint8_t* blocks) {
  QuantizeBlocks(x, n_blocks, blocks, /*tries=*/-1);
}

}  // namespace proctor::quant
