// MatMul with MLX quantized weights for TinyLlama-1.1B layer shapes (q, k, v, o, gate, up, down):
// decode (T = 1, the matrix-vector kernel) and prefill (T = 512, the blocked kernel over decoded
// panels), f32 compute, 1 and 2 threads. Counters: weight_bytes_per_second (packed codes + scales
// + biases streamed per second: decode is memory-bound, compare with ops_bench's StreamRead),
// prefill on AMX or the f32 FMA kernel (arg amx), f32 or bf16 compute (arg bf16),
// FLOPS, and tokens_per_second_22_layers (this layer's projections only, x 22).
//   build/bench/mlx_bench
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <vector>

#include "ops/matmul.h"
#include "ops/test_util.h"
#include "quant/mlx_quant.h"
#include "tinyllama_layer.h"  // same folder

namespace proctor::ops {
namespace {

struct Format {
  quant::MlxMode mode;
  int bits, group;
};
constexpr Format kFormats[] = {{quant::MlxMode::kAffine, 4, 64}, {quant::MlxMode::kAffine, 8, 64},
                               {quant::MlxMode::kAffine, 2, 64}, {quant::MlxMode::kAffine, 3, 64},
                               {quant::MlxMode::kAffine, 6, 64}, {quant::MlxMode::kMxfp4, 4, 32}};

// Quantized once per format (the quantizer is slow) and shared by every benchmark of it.
const std::vector<quant::MlxQuantizedTensor>& LayerWeights(int format) {
  static std::vector<std::vector<quant::MlxQuantizedTensor>> cache(std::size(kFormats));
  auto& weights = cache[static_cast<size_t>(format)];
  if (weights.empty()) {
    const Format& f = kFormats[format];
    for (const Projection& p : kLayer) {
      const auto w = testing::RandomFloats(static_cast<size_t>(p.out * p.in),
                                           static_cast<uint32_t>(p.out), 0.05f);
      weights.push_back(
          quant::QuantizeMlx(w.data(), p.out, p.in, f.mode, f.bits, f.group, DType::kBF16));
    }
  }
  return weights;
}

void BM_MlxMatMulLayer(benchmark::State& state) {
  const int format = static_cast<int>(state.range(0));
  const int64_t T = state.range(1);
  const int threads = static_cast<int>(state.range(2));
  const auto mode = state.range(3) == 0 ? ComputeMode::kF32 : ComputeMode::kBF16;
  const bool amx = state.range(4) != 0;  // prefill on AMX (when the CPU has it) or FMA
  SetKernelOverridesForTesting(
      {.bf16_family = amx ? BF16Kernel::kAuto : BF16Kernel::kF32Fallback, .amx_in_f32_mode = amx});
  ThreadPool pool(threads);
  const auto& weights = LayerWeights(format);
  double weight_bytes = 0.0;
  for (const auto& w : weights) {
    weight_bytes += static_cast<double>(LinearWeight(w.View()).StoredBytes());
  }
  TimeLayerMatMuls(state, T, weights, weight_bytes, mode, pool);
  const Format& f = kFormats[format];
  state.SetLabel(fmt::format("{} T={} threads={} {} {}", MlxTypeName(f.mode, f.bits, f.group), T,
                             threads, mode == ComputeMode::kF32 ? "f32" : "bf16",
                             T == 1 ? "matvec"
                             : amx  ? "amx"
                                    : "fma"));
  SetKernelOverridesForTesting({});
}
BENCHMARK(BM_MlxMatMulLayer)
    ->ArgNames({"format", "T", "threads", "bf16", "amx"})
    ->ArgsProduct({{0, 1}, {1}, {1, 2}, {0}, {1}})
    ->ArgsProduct({{0, 1}, {512}, {1, 2}, {0, 1}, {0, 1}})
    ->ArgsProduct({{2, 3, 4, 5}, {1, 512}, {1}, {0}, {1}})
    ->Unit(benchmark::kMillisecond);

// One 1024 x 2048 matrix (1 MiB at 4 bits: stays in L2), T = 1, one thread: the kernel's compute
// rate without the memory system.
void BM_MlxMatVecInCache(benchmark::State& state) {
  const Format& f = kFormats[state.range(0)];
  constexpr int64_t N = 1024, K = 2048;
  const auto w = testing::RandomFloats(static_cast<size_t>(N * K), 7, 0.05f);
  const quant::MlxQuantizedTensor q =
      quant::QuantizeMlx(w.data(), N, K, f.mode, f.bits, f.group, DType::kBF16);
  const Tensor x = testing::RandomMatrix(DType::kF32, 1, K, 1);
  Tensor out = Tensor::F32(1, N);
  ThreadPool pool(1);
  for (auto _ : state) MatMul(x.View(), q.View(), out.MutF32(), ComputeMode::kF32, pool);
  state.counters["weight_bytes_per_second"] =
      benchmark::Counter(static_cast<double>(LinearWeight(q.View()).StoredBytes()),
                         benchmark::Counter::kIsIterationInvariantRate);
  state.counters["weights_per_second"] =
      benchmark::Counter(static_cast<double>(N * K), benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(MlxTypeName(f.mode, f.bits, f.group));
}
BENCHMARK(BM_MlxMatVecInCache)
    ->DenseRange(0, std::size(kFormats) - 1)
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace proctor::ops

BENCHMARK_MAIN();
