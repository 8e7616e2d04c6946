// 8-bit activations (see activations_q8.h).
#include "ops/activations_q8.h"

#include <cstring>

#include "quant/ggml_blocks.h"
#include "util/error.h"
#include "util/half.h"

namespace proctor::ops {
namespace {

constexpr int64_t kBlock = quant::kQ8_0BlockElems;

// x[K] as Q8_0 blocks in a buffer reused by the calling thread.
const quant::BlockQ8_0* QuantizeBlocks(const float* x, int64_t K) {
  CHECK_MSG(K % kBlock == 0, "8-bit activations need rows of whole 32-value blocks, not {}", K);
  thread_local std::vector<quant::BlockQ8_0> blocks;
  blocks.resize(static_cast<size_t>(K / kBlock));
  quant::QuantizeQ8_0Ref(x, K / kBlock, reinterpret_cast<uint8_t*>(blocks.data()));
  return blocks.data();
}

}  // namespace

bool TakesQ8Activations(const LinearWeight& w) {
  return !w.is_mlx() && quant::FindBlockTraits(w.dense().type) != nullptr;
}

void ActivationsQ8::Quantize(const float* x, int64_t K) {
  const quant::BlockQ8_0* blocks = QuantizeBlocks(x, K);
  codes.resize(static_cast<size_t>(K));
  scale.resize(static_cast<size_t>(K / kBlock));
  sum16.resize(static_cast<size_t>(K / 16));
  sum32.resize(static_cast<size_t>(K / kBlock));
  for (int64_t b = 0; b < K / kBlock; ++b) {
    const quant::BlockQ8_0& block = blocks[b];
    const float d = F16ToF32(block.d);
    std::memcpy(&codes[b * kBlock], block.q, kBlock);
    int halves[2] = {0, 0};
    for (int i = 0; i < kBlock; ++i) halves[i / 16] += block.q[i];
    // d has 11 significant bits and a half's code sum at most 11, a block's 12: exact products.
    scale[b] = d;
    sum16[2 * b] = d * static_cast<float>(halves[0]);
    sum16[2 * b + 1] = d * static_cast<float>(halves[1]);
    sum32[b] = d * static_cast<float>(halves[0] + halves[1]);
  }
}

void RoundTripQ8Activations(const float* x, int64_t K, float* out) {
  const quant::BlockQ8_0* blocks = QuantizeBlocks(x, K);
  for (int64_t b = 0; b < K / kBlock; ++b) {
    const float d = F16ToF32(blocks[b].d);
    for (int i = 0; i < kBlock; ++i) out[b * kBlock + i] = d * static_cast<float>(blocks[b].q[i]);
  }
}

}  // namespace proctor::ops
