// MatMul with every GGUF block type (Q4_1, Q5_x, K-quants dispatch through quant's traits
// table): the blocked path (T > 1) and the matrix-vector path (T == 1) against a double-precision
// sum over the reference-dequantized weights.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "ops/convert.h"
#include "ops/matmul.h"
#include "quant/test_blocks.h"

namespace proctor::ops {
namespace {

TEST(MatMulGguf, EveryBlockTypeMatchesTheDequantizedProduct) {
  ThreadPool pool(2);
  for (DType type : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1,
                     DType::kQ2_K, DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    ASSERT_TRUE(IsSupportedWeightType(type)) << Name(type);
    const int64_t K = 512, N = 7;
    const int64_t blocks_per_row = K / static_cast<int64_t>(Info(type).block_elems);
    const auto raw = quant::testing::RandomBlocks(type, static_cast<int>(N * blocks_per_row), 3);
    const MatView w{type, N, K, BytesFor(type, K), raw.data()};
    for (int64_t T : {1, 3}) {
      const auto x = quant::testing::RandomWeights(T * K, 9);
      const MatView xv{DType::kF32, T, K, static_cast<size_t>(K) * 4,
                       reinterpret_cast<const uint8_t*>(x.data())};
      Tensor out = Tensor::F32(T, N);
      MatMul(xv, w, out.MutF32(), ComputeMode::kF32, pool);
      std::vector<float> w_row(K);
      for (int64_t n = 0; n < N; ++n) {
        DecodeRowSegmentRef(w, n, 0, K, w_row.data());
        for (int64_t t = 0; t < T; ++t) {
          double exact = 0.0, magnitude = 0.0;
          for (int64_t k = 0; k < K; ++k) {
            exact += static_cast<double>(x[t * K + k]) * w_row[k];
            magnitude += std::fabs(static_cast<double>(x[t * K + k]) * w_row[k]);
          }
          ASSERT_NEAR(out.RowF32(t)[n], exact, 2e-6 * magnitude + 1e-30)
              << Name(type) << " T=" << T << " t=" << t << " n=" << n;
        }
      }
    }
  }
}

}  // namespace
}  // namespace proctor::ops
