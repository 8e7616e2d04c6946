// 8-bit activations (see activations_q8.h).
#include "ops/activations_q8.h"

#include <algorithm>
#include <cstring>

#include "ops/matmul_kernel_choice.h"
#include "quant/ggml_blocks.h"
#include "util/error.h"
#include "util/half.h"

namespace proctor::ops {
namespace {

// x[K] as `blocks`, decoded to one block view: per block its d as f32 and its codes, in buffers
// reused by the calling thread.
struct QuantizedRow {
  int64_t block_elems;
  std::vector<float> d;       // [K / block_elems]
  std::vector<int8_t> codes;  // [K]
};

// The values per block of `blocks`; K must be a whole number of blocks (CHECKed).
int64_t WholeBlocksOf(Q8Blocks blocks, int64_t K) {
  const bool k_quant = blocks == Q8Blocks::kQ8_K;
  const int64_t block_elems = k_quant ? quant::kQK_K : quant::kQ8_0BlockElems;
  CHECK_MSG(K % block_elems == 0,
            "8-bit activations ({}) need rows of whole {}-value blocks, not {}",
            k_quant ? "Q8_K" : "Q8_0", block_elems, K);
  return block_elems;
}

const QuantizedRow& QuantizeRow(const float* x, int64_t K, Q8Blocks blocks) {
  thread_local QuantizedRow row;
  thread_local std::vector<uint8_t> bytes;
  const bool k_quant = blocks == Q8Blocks::kQ8_K;
  row.block_elems = WholeBlocksOf(blocks, K);
  const int64_t n_blocks = K / row.block_elems;
  row.d.resize(static_cast<size_t>(n_blocks));
  row.codes.resize(static_cast<size_t>(K));
  if (k_quant) {
    bytes.resize(static_cast<size_t>(n_blocks) * sizeof(quant::BlockQ8_K));
    quant::QuantizeQ8_KRef(x, n_blocks, bytes.data());
    for (int64_t b = 0; b < n_blocks; ++b) {
      quant::BlockQ8_K block;
      std::memcpy(&block, bytes.data() + b * sizeof(block), sizeof(block));
      row.d[b] = block.d;
      std::memcpy(&row.codes[b * quant::kQK_K], block.q, quant::kQK_K);
    }
  } else {
    bytes.resize(static_cast<size_t>(n_blocks) * sizeof(quant::BlockQ8_0));
    quant::QuantizeQ8_0X86(x, n_blocks, bytes.data());
    for (int64_t b = 0; b < n_blocks; ++b) {
      quant::BlockQ8_0 block;
      std::memcpy(&block, bytes.data() + b * sizeof(block), sizeof(block));
      row.d[b] = F16ToF32(block.d);
      std::memcpy(&row.codes[b * quant::kQ8_0BlockElems], block.q, quant::kQ8_0BlockElems);
    }
  }
  return row;
}

}  // namespace

bool TakesQ8Activations(const LinearWeight& w) {
  return !w.is_mlx() && quant::FindBlockTraits(w.dense().type) != nullptr;
}

Q8Blocks Q8BlocksFor(DType weight_type) {
  switch (weight_type) {
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
      return Q8Blocks::kQ8_K;
    default:
      return Q8Blocks::kQ8_0;
  }
}

void ActivationsQ8::Resize(int64_t K, Q8Blocks blocks) {
  WholeBlocksOf(blocks, K);
  this->blocks = blocks;
  codes.resize(static_cast<size_t>(K));
  scale.resize(static_cast<size_t>(K / 32));
  sum16.resize(static_cast<size_t>(K / 16));
  sum32.resize(static_cast<size_t>(K / 32));
  code_sum16.resize(static_cast<size_t>(K / 16));
  code_sum32.resize(static_cast<size_t>(K / 32));
}

void ActivationsQ8::SetSlice(int64_t s, float d, int half0, int half1) {
  // Q8_0: d has 11 significant bits and a half's code sum at most 11, a slice's 12, so the
  // products are exact; Q8_K's f32 d rounds them once.
  scale[s] = d;
  sum16[2 * s] = d * static_cast<float>(half0);
  sum16[2 * s + 1] = d * static_cast<float>(half1);
  sum32[s] = d * static_cast<float>(half0 + half1);
  // |code| <= 127: at most 4064 over 32 values.
  code_sum16[2 * s] = static_cast<int16_t>(half0);
  code_sum16[2 * s + 1] = static_cast<int16_t>(half1);
  code_sum32[s] = static_cast<int16_t>(half0 + half1);
}

void ActivationsQ8::QuantizeRef(const float* x, int64_t K, Q8Blocks blocks) {
  const QuantizedRow& row = QuantizeRow(x, K, blocks);
  Resize(K, blocks);
  std::copy(row.codes.begin(), row.codes.end(), codes.begin());
  for (int64_t s = 0; s < K / 32; ++s) {
    int halves[2] = {0, 0};
    for (int i = 0; i < 32; ++i) halves[i / 16] += codes[s * 32 + i];
    SetSlice(s, row.d[static_cast<size_t>(s * 32 / row.block_elems)], halves[0], halves[1]);
  }
}

void ActivationsQ8::Quantize(const float* x, int64_t K, Q8Blocks blocks) {
  if (CpuFeatures::Host().avx2_fma) {
    internal::QuantizeActivationsQ8Avx2(x, K, blocks, *this);
  } else {
    QuantizeRef(x, K, blocks);
  }
}

void RoundTripQ8Activations(const float* x, int64_t K, Q8Blocks blocks, float* out) {
  const QuantizedRow& row = QuantizeRow(x, K, blocks);
  for (int64_t k = 0; k < K; ++k) {
    out[k] = row.d[static_cast<size_t>(k / row.block_elems)] * static_cast<float>(row.codes[k]);
  }
}

}  // namespace proctor::ops
