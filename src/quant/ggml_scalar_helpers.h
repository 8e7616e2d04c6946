// Helpers shared by the scalar references of the GGUF block formats (ggml_legacy_blocks.cc and
// ggml_k_quants.cc): loading a block without alignment assumptions, and the reference dot
// product that dequantizes a block and sums value * x in element order.
#pragma once

#include <cstdint>
#include <cstring>

#include "quant/ggml_blocks.h"

namespace proctor::quant::scalar {

// Block b of a row of blocks, copied out (rows in a GGUF file are not aligned for Block).
template <typename Block>
Block LoadBlock(const uint8_t* blocks, int64_t b) {
  Block block;
  std::memcpy(&block, blocks + b * static_cast<int64_t>(sizeof(Block)), sizeof(Block));
  return block;
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

}  // namespace proctor::quant::scalar

// Defines Dot<T>Ref (declared in ggml_blocks.h) as DotViaDequantizeRef over Dequantize<T>Ref.
#define PROCTOR_DEFINE_DOT_VIA_DEQUANTIZE_REF(T, kElems)                                \
  float Dot##T##Ref(const uint8_t* blocks, int64_t n_blocks, const float* x) {          \
    return scalar::DotViaDequantizeRef<Dequantize##T##Ref, kElems>(blocks, n_blocks, x, \
                                                                   sizeof(Block##T));   \
  }
