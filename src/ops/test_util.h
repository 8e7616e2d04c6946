// Helpers shared by the ops tests: random matrices in every weight type.
#pragma once

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "ops/convert.h"
#include "ops/linear_weight.h"
#include "quant/ggml_blocks.h"
#include "quant/mlx_quant.h"
#include "quant/test_blocks.h"
#include "tensor/tensor.h"
#include "util/half.h"

namespace proctor::ops::testing {

// Random normal f32 values (scaled), deterministic per seed.
inline std::vector<float> RandomFloats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

// A [rows, cols] tensor of `type` holding (quantized / rounded) copies of random values.
inline Tensor RandomMatrix(DType type, int64_t rows, int64_t cols, uint32_t seed,
                           float scale = 1.0f) {
  const auto values = RandomFloats(static_cast<size_t>(rows * cols), seed, scale);
  Tensor t(type, rows, cols);
  const size_t row_bytes = BytesFor(type, static_cast<uint64_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    const float* src = values.data() + r * cols;
    uint8_t* dst = t.bytes() + r * row_bytes;
    switch (type) {
      case DType::kF32:
        std::memcpy(dst, src, static_cast<size_t>(cols) * 4);
        break;
      case DType::kF16:
      case DType::kBF16:
        for (int64_t c = 0; c < cols; ++c) {
          const uint16_t h = type == DType::kF16 ? F32ToF16(src[c]) : F32ToBF16(src[c]);
          std::memcpy(dst + c * 2, &h, 2);
        }
        break;
      case DType::kQ8_0:
        quant::QuantizeQ8_0Ref(src, cols / 32, dst);
        break;
      case DType::kQ4_0:
        quant::QuantizeQ4_0Ref(src, cols / 32, dst);
        break;
      default: {  // other GGUF block types: random codes with finite scales
        const auto blocks =
            quant::testing::RandomBlocks(type, static_cast<int>(row_bytes / Info(type).block_bytes),
                                         seed + static_cast<uint32_t>(r));
        std::memcpy(dst, blocks.data(), row_bytes);
        break;
      }
    }
  }
  return t;
}

// Row n of w split as value = a - b, b being the part a block minimum / MLX bias contributes
// (zero for types without one): GGUF blocks are decoded (reference decoder) with the minimum's
// fp16 field zeroed for a and with the scale zeroed for b; MLX affine a = s * q, b = -bias. The
// quantized kernels apply scales to partial sums, so their error is bounded by f32 rounding of
// sum |x| (|a| + |b|), which tests use as the tolerance scale.
inline void SplitWeightRow(const LinearWeight& w, int64_t n, std::vector<float>& a,
                           std::vector<float>& b) {
  const int64_t K = w.cols();
  a.assign(static_cast<size_t>(K), 0.0f);
  b.assign(static_cast<size_t>(K), 0.0f);
  if (w.is_mlx()) {
    const quant::MlxQuantizedMatrix& m = w.mlx();
    DecodeWeightRowRef(w, n, 0, K, a.data());
    for (int64_t k = 0; k < K; ++k) {
      const float bias = quant::internal::MlxGroupBias(m, n, k / m.group_size);
      a[k] -= bias;
      b[k] = -bias;
    }
    return;
  }
  const MatView& d = w.dense();
  const size_t block_bytes = Info(d.type).block_bytes;
  const size_t row_bytes = d.RowBytes();
  const std::vector<int> fields = quant::testing::HalfFieldOffsets(d.type);
  std::vector<uint8_t> copy(d.Row(n), d.Row(n) + row_bytes);
  const MatView view{d.type, 1, K, row_bytes, copy.data()};
  if (fields.size() == 2) {
    for (size_t o = 0; o < row_bytes; o += block_bytes) std::memset(&copy[o + fields[1]], 0, 2);
  }
  DecodeRowSegmentRef(view, 0, 0, K, a.data());
  if (fields.size() == 2) {
    std::copy(d.Row(n), d.Row(n) + row_bytes, copy.begin());
    for (size_t o = 0; o < row_bytes; o += block_bytes) std::memset(&copy[o + fields[0]], 0, 2);
    DecodeRowSegmentRef(view, 0, 0, K, b.data());
    for (float& v : b) v = -v;
  }
}

// Row n of w times x[K] summed in double from the exactly decoded weights (`exact`), and the
// tolerance scale sum |x| (|a| + |b|) of SplitWeightRow (`magnitude`).
struct RowProduct {
  double exact = 0.0;
  double magnitude = 0.0;
};
inline RowProduct ExactRowProduct(const LinearWeight& w, int64_t n, const float* x) {
  std::vector<float> a, b;
  SplitWeightRow(w, n, a, b);
  RowProduct p;
  for (size_t k = 0; k < a.size(); ++k) {
    p.exact += static_cast<double>(x[k]) * (static_cast<double>(a[k]) - b[k]);
    p.magnitude += std::fabs(static_cast<double>(x[k])) * (std::fabs(a[k]) + std::fabs(b[k]));
  }
  return p;
}

}  // namespace proctor::ops::testing
