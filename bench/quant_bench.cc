// Quant kernel benchmarks: dequantization and dot products (decode, one 4096-wide row at a time,
// so the weights stay in L2) for every GGUF block type and MLX mode, scalar reference vs SIMD.
// Counters: bytes_per_second = packed weight bytes read; items_per_second = weights decoded.
//   build/bench/quant_bench --benchmark_filter=Gguf|Mlx
#include <benchmark/benchmark.h>

#include <vector>

#include "quant/ggml_blocks.h"
#include "quant/mlx_quant.h"
#include "quant/test_blocks.h"

namespace proctor::quant {
namespace {

constexpr int64_t kWidth = 4096;

void GgufKernel(benchmark::State& state, DType type, bool dot, bool simd) {
  const BlockTraits* traits = FindBlockTraits(type);
  const int n_blocks = static_cast<int>(kWidth / traits->block_elems);
  const auto raw = testing::RandomBlocks(type, n_blocks, 1);
  const auto x = testing::RandomWeights(kWidth, 2);
  std::vector<float> out(kWidth);
  for (auto _ : state) {
    if (dot) {
      benchmark::DoNotOptimize(
          (simd ? traits->dot_fast : traits->dot_ref)(raw.data(), n_blocks, x.data()));
    } else {
      (simd ? traits->dequantize_fast : traits->dequantize_ref)(raw.data(), n_blocks, out.data());
      benchmark::ClobberMemory();
    }
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(raw.size()));
  state.SetItemsProcessed(state.iterations() * kWidth);
}

void MlxKernel(benchmark::State& state, MlxMode mode, int bits, int group, bool dot, bool simd) {
  const auto w = testing::RandomWeights(kWidth, 3);
  const auto x = testing::RandomWeights(kWidth, 4);
  const MlxQuantizedTensor q = QuantizeMlx(w.data(), 1, kWidth, mode, bits, group, DType::kBF16);
  const MlxQuantizedMatrix m = q.View();
  std::vector<float> out(kWidth);
  for (auto _ : state) {
    if (dot) {
      benchmark::DoNotOptimize(simd ? DotMlxRow(m, 0, x.data()) : DotMlxRowRef(m, 0, x.data()));
    } else {
      (simd ? DecodeMlxRowSegment : DecodeMlxRowSegmentRef)(m, 0, 0, kWidth, out.data());
      benchmark::ClobberMemory();
    }
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(q.packed.size_bytes()));
  state.SetItemsProcessed(state.iterations() * kWidth);
}

void RegisterAll() {
  for (DType type : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1,
                     DType::kQ2_K, DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    for (bool dot : {false, true}) {
      for (bool simd : {false, true}) {
        const std::string name = std::string("Gguf/") + std::string(Name(type)) +
                                 (dot ? "/dot" : "/dequant") + (simd ? "/simd" : "/ref");
        benchmark::RegisterBenchmark(name.c_str(), GgufKernel, type, dot, simd);
      }
    }
  }
  struct M {
    MlxMode mode;
    int bits, group;
  };
  std::vector<M> modes = {
      {MlxMode::kMxfp4, 4, 32}, {MlxMode::kMxfp8, 8, 32}, {MlxMode::kNvfp4, 4, 16}};
  for (int bits : {2, 3, 4, 5, 6, 8}) modes.push_back({MlxMode::kAffine, bits, 64});
  for (const M& mm : modes) {
    for (bool dot : {false, true}) {
      for (bool simd : {false, true}) {
        const std::string name = "Mlx/" + std::string(MlxModeName(mm.mode)) + "/" +
                                 std::to_string(mm.bits) + "bit/g" + std::to_string(mm.group) +
                                 (dot ? "/dot" : "/dequant") + (simd ? "/simd" : "/ref");
        benchmark::RegisterBenchmark(name.c_str(), MlxKernel, mm.mode, mm.bits, mm.group, dot,
                                     simd);
      }
    }
  }
}

}  // namespace
}  // namespace proctor::quant

int main(int argc, char** argv) {
  proctor::quant::RegisterAll();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
