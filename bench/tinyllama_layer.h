// One TinyLlama-1.1B layer's projections and the timed MatMul loop over them, shared by
// ops_bench (bf16 and GGUF weights) and mlx_bench (MLX weights): q, k, v, o (2048 in), gate, up
// (2048 -> 5632), down (5632 -> 2048).
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "ops/matmul.h"
#include "ops/test_util.h"
#include "util/thread_pool.h"

namespace proctor::ops {

struct Projection {
  int64_t in, out;
};
inline constexpr Projection kLayer[] = {{2048, 2048}, {2048, 256},  {2048, 256}, {2048, 2048},
                                        {2048, 5632}, {2048, 5632}, {5632, 2048}};

// Times MatMul(x [T, in], weights[i]) -> [T, out] for every projection of kLayer (weights in
// that order; anything with View()) per iteration and sets the counters FLOPS,
// weight_bytes_per_second (`weight_bytes` streamed per iteration) and
// tokens_per_second_22_layers (this layer's projections only, x 22).
template <typename Weight>
void TimeLayerMatMuls(benchmark::State& state, int64_t T, const std::vector<Weight>& weights,
                      double weight_bytes, ComputeMode mode, ThreadPool& pool) {
  std::vector<Tensor> outs;
  double flops = 0.0;
  for (size_t i = 0; i < weights.size(); ++i) {
    const Projection& p = kLayer[i];
    outs.push_back(Tensor::F32(T, p.out));
    flops += 2.0 * static_cast<double>(T * p.in * p.out);
  }
  const Tensor x = testing::RandomMatrix(DType::kF32, T, 5632, 1);
  for (auto _ : state) {
    for (size_t i = 0; i < weights.size(); ++i) {
      const MatView xv{DType::kF32, T, kLayer[i].in, 5632 * 4, x.bytes()};
      MatMul(xv, weights[i].View(), outs[i].MutF32(), mode, pool);
    }
  }
  state.counters["FLOPS"] =
      benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["weight_bytes_per_second"] =
      benchmark::Counter(weight_bytes, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["tokens_per_second_22_layers"] = benchmark::Counter(
      static_cast<double>(T) / 22.0, benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace proctor::ops
