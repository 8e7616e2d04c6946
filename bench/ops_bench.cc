// Kernel benchmarks: MatMul for TinyLlama-1.1B shapes (prefill T=512 and decode T=1, f32 and bf16
// compute modes, 1 and 2 threads) next to the machine's measured per-core peaks, so results can be
// stated as a fraction of peak:
//  - PeakF32Fma: 24 independent 512-bit FMA chains (vfmadd231ps), 32 FLOP per instruction.
//  - PeakBF16Dot: 24 independent vdpbf16ps chains, 64 FLOP per instruction (32 multiply-adds).
//  - StreamRead: sums a 1 GiB buffer with 512-bit loads (one thread per pool thread).
// Counters: FLOPS (per second) for compute, bytes_per_second for streaming; MatMul decode also
// reports weight bytes per second. Rates are per CPU second of the main thread (Google
// Benchmark's default), which keeps them meaningful on a shared machine.
//   build/bench/ops_bench --benchmark_filter=Peak|Stream|MatMul
#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <cstring>
#include <vector>

#include "ops/activations_q8.h"
#include "ops/attention.h"
#include "ops/matmul.h"
#include "ops/test_util.h"
#include "quant/mlx_quant.h"
#include "quant/turbo_quant.h"
#include "tinyllama_layer.h"  // same folder

namespace proctor::ops {
namespace {

#define PROCTOR_AVX512_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

PROCTOR_AVX512_TARGET __attribute__((noinline)) float FmaLoop(int64_t iters) {
  __m512 acc[24];
#pragma GCC unroll 24
  for (int i = 0; i < 24; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i) * 1e-3f);
  const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(1e-4f);
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 24
    for (int i = 0; i < 24; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
    __asm__ volatile("" : "+v"(acc[0]), "+v"(acc[1]), "+v"(acc[2]), "+v"(acc[3]));
  }
  __m512 sum = acc[0];
#pragma GCC unroll 24
  for (int i = 1; i < 24; ++i) sum = _mm512_add_ps(sum, acc[i]);
  return _mm512_cvtss_f32(sum);
}

PROCTOR_AVX512_TARGET __attribute__((noinline)) float Bf16DotLoop(int64_t iters) {
  __m512 acc[24];
#pragma GCC unroll 24
  for (int i = 0; i < 24; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i) * 1e-3f);
  const __m512i a = _mm512_set1_epi16(0x3F80), b = _mm512_set1_epi16(0x3A83);
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 24
    for (int i = 0; i < 24; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], (__m512bh)a, (__m512bh)b);
    __asm__ volatile("" : "+v"(acc[0]), "+v"(acc[1]), "+v"(acc[2]), "+v"(acc[3]));
  }
  __m512 sum = acc[0];
#pragma GCC unroll 24
  for (int i = 1; i < 24; ++i) sum = _mm512_add_ps(sum, acc[i]);
  return _mm512_cvtss_f32(sum);
}

void BM_PeakF32Fma(benchmark::State& state) {
  if (!CpuFeatures::Host().avx512_bf16) return state.SkipWithError("needs AVX-512");
  constexpr int64_t kIters = 1 << 20;
  for (auto _ : state) benchmark::DoNotOptimize(FmaLoop(kIters));
  state.counters["FLOPS"] = benchmark::Counter(static_cast<double>(kIters) * 24 * 32,
                                               benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_PeakF32Fma)->Unit(benchmark::kMillisecond);

void BM_PeakBF16Dot(benchmark::State& state) {
  if (!CpuFeatures::Host().avx512_bf16) return state.SkipWithError("needs AVX-512 BF16");
  constexpr int64_t kIters = 1 << 20;
  for (auto _ : state) benchmark::DoNotOptimize(Bf16DotLoop(kIters));
  state.counters["FLOPS"] = benchmark::Counter(static_cast<double>(kIters) * 24 * 64,
                                               benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_PeakBF16Dot)->Unit(benchmark::kMillisecond);

PROCTOR_AVX512_TARGET __attribute__((noinline)) float SumFloats(const float* p, size_t n) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i + 64 <= n; i += 64) {
    a0 = _mm512_add_ps(a0, _mm512_load_ps(p + i));
    a1 = _mm512_add_ps(a1, _mm512_load_ps(p + i + 16));
    a2 = _mm512_add_ps(a2, _mm512_load_ps(p + i + 32));
    a3 = _mm512_add_ps(a3, _mm512_load_ps(p + i + 48));
  }
  return _mm512_cvtss_f32(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

#define PROCTOR_AVX2_TARGET __attribute__((target("avx2,fma")))

PROCTOR_AVX2_TARGET __attribute__((noinline)) float SumFloatsAvx2(const float* p, size_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i + 32 <= n; i += 32) {
    a0 = _mm256_add_ps(a0, _mm256_load_ps(p + i));
    a1 = _mm256_add_ps(a1, _mm256_load_ps(p + i + 8));
    a2 = _mm256_add_ps(a2, _mm256_load_ps(p + i + 16));
    a3 = _mm256_add_ps(a3, _mm256_load_ps(p + i + 24));
  }
  return _mm256_cvtss_f32(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
}

void BM_StreamRead(benchmark::State& state) {
  const bool avx512 = CpuFeatures::Host().avx512_bf16;
  if (!avx512 && !CpuFeatures::Host().avx2_fma) return state.SkipWithError("needs AVX2");
  const int threads = static_cast<int>(state.range(0));
  constexpr size_t kBytes = size_t{1} << 30;
  Tensor buf(DType::kF32, 1, static_cast<int64_t>(kBytes / 4));
  std::memset(buf.bytes(), 1, kBytes);
  ThreadPool pool(threads);
  const size_t n = kBytes / 4;
  for (auto _ : state) {
    pool.ParallelForGrain(n, 4096, [&](size_t begin, size_t end, int) {
      benchmark::DoNotOptimize(avx512 ? SumFloats(buf.f32() + begin, end - begin)
                                      : SumFloatsAvx2(buf.f32() + begin, end - begin));
    });
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(kBytes));
}
BENCHMARK(BM_StreamRead)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);

// One TinyLlama-1.1B layer's projections (tinyllama_layer.h) in bf16 or a GGUF block type; mode
// 0 f32, 1 bf16, 2 q8.
void BM_MatMulLayer(benchmark::State& state) {
  constexpr ComputeMode kModes[] = {ComputeMode::kF32, ComputeMode::kBF16, ComputeMode::kQ8};
  const ComputeMode mode = kModes[state.range(0)];
  const int64_t T = state.range(1);
  const int threads = static_cast<int>(state.range(2));
  const auto type = static_cast<DType>(state.range(3));
  ThreadPool pool(threads);
  std::vector<Tensor> weights;
  double weight_bytes = 0.0;
  for (const Projection& p : kLayer) {
    weights.push_back(testing::RandomMatrix(type, p.out, p.in, static_cast<uint32_t>(p.out)));
    weight_bytes += static_cast<double>(weights.back().size_bytes());
  }
  TimeLayerMatMuls(state, T, weights, weight_bytes, mode, pool);
  constexpr const char* kModeNames[] = {"f32", "bf16", "q8"};
  state.SetLabel(fmt::format("{} {} T={} threads={} kernel={}", Name(type),
                             kModeNames[state.range(0)], T, threads,
                             MatMulKernelName(weights.front().View(), mode, T)));
}
BENCHMARK(BM_MatMulLayer)
    ->ArgNames({"mode", "T", "threads", "type"})
    ->ArgsProduct({{0, 1}, {512, 1}, {1, 2}, {static_cast<int64_t>(DType::kBF16)}})
    ->ArgsProduct({{0},
                   {512, 1},
                   {1},
                   {static_cast<int64_t>(DType::kQ8_0), static_cast<int64_t>(DType::kQ4_0),
                    static_cast<int64_t>(DType::kQ4_1), static_cast<int64_t>(DType::kQ5_0),
                    static_cast<int64_t>(DType::kQ5_1), static_cast<int64_t>(DType::kQ2_K),
                    static_cast<int64_t>(DType::kQ3_K), static_cast<int64_t>(DType::kQ4_K),
                    static_cast<int64_t>(DType::kQ5_K), static_cast<int64_t>(DType::kQ6_K)}})
    // Decode on 8-bit activations next to f32 ones, 1 and 2 threads (wall time).
    ->ArgsProduct({{0, 2},
                   {1},
                   {1, 2},
                   {static_cast<int64_t>(DType::kQ8_0), static_cast<int64_t>(DType::kQ4_0),
                    static_cast<int64_t>(DType::kQ4_K), static_cast<int64_t>(DType::kQ6_K)}})
    // Prefill on 8-bit activations (the AVX2 integer matrix-matrix kernel) next to f32 ones,
    // 1 and 2 threads.
    ->ArgsProduct({{0, 2},
                   {512},
                   {1, 2},
                   {static_cast<int64_t>(DType::kQ8_0), static_cast<int64_t>(DType::kQ4_0),
                    static_cast<int64_t>(DType::kQ5_0), static_cast<int64_t>(DType::kQ2_K),
                    static_cast<int64_t>(DType::kQ3_K), static_cast<int64_t>(DType::kQ4_K),
                    static_cast<int64_t>(DType::kQ6_K)}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// The activation quantization of q8 mode (activations_q8.h) for one layer's inputs at T = 512:
// each projection's 512 rows (K = 2048 for q/k/v/gate/up, 5632 for down), 1 thread; path 0 the
// scalar reference, 1 Quantize (AVX2 where the CPU has it); blocks 0 Q8_0, 1 Q8_K.
void BM_QuantizeActivationsQ8(benchmark::State& state) {
  const bool reference = state.range(0) == 0;
  const Q8Blocks blocks = state.range(1) == 0 ? Q8Blocks::kQ8_0 : Q8Blocks::kQ8_K;
  constexpr int64_t kT = 512;
  std::vector<Tensor> inputs;
  int64_t values = 0;
  for (const Projection& p : kLayer) {
    inputs.push_back(testing::RandomMatrix(DType::kF32, kT, p.in, static_cast<uint32_t>(p.in)));
    values += kT * p.in;
  }
  ActivationsQ8 row;
  for (auto _ : state) {
    for (const Tensor& x : inputs) {
      for (int64_t t = 0; t < kT; ++t) {
        if (reference) {
          row.QuantizeRef(x.RowF32(t), x.cols(), blocks);
        } else {
          row.Quantize(x.RowF32(t), x.cols(), blocks);
        }
        benchmark::DoNotOptimize(row.codes.data());
      }
    }
  }
  state.SetLabel(fmt::format("{} {}", reference ? "reference" : "Quantize",
                             blocks == Q8Blocks::kQ8_K ? "Q8_K" : "Q8_0"));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * values);
}
BENCHMARK(BM_QuantizeActivationsQ8)
    ->ArgNames({"path", "blocks"})
    ->ArgsProduct({{0, 1}, {0, 1}})
    ->Unit(benchmark::kMillisecond);

// One decode product (T = 1, one thread) with a GGUF block matrix small enough to stay in the
// L2 cache (256 x 2048), mode 0 f32, 2 q8: the kernel's arithmetic rate without the memory
// stream, which the layer benchmark above includes (weight bytes/s here measure work done).
void BM_MatVecInCache(benchmark::State& state) {
  constexpr ComputeMode kModes[] = {ComputeMode::kF32, ComputeMode::kBF16, ComputeMode::kQ8};
  const ComputeMode mode = kModes[state.range(0)];
  const auto type = static_cast<DType>(state.range(1));
  constexpr int64_t N = 256, K = 2048;
  ThreadPool pool(1);
  const Tensor w = testing::RandomMatrix(type, N, K, 3);
  const Tensor x = testing::RandomMatrix(DType::kF32, 1, K, 4);
  Tensor out = Tensor::F32(1, N);
  for (auto _ : state) MatMul(x.View(), w.View(), out.MutF32(), mode, pool);
  state.counters["weight_bytes_per_second"] = benchmark::Counter(
      static_cast<double>(w.size_bytes()), benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(fmt::format("{} kernel={}", Name(type), MatMulKernelName(w.View(), mode, 1)));
}
BENCHMARK(BM_MatVecInCache)
    ->ArgNames({"mode", "type"})
    ->ArgsProduct({{0, 2},
                   {static_cast<int64_t>(DType::kQ8_0), static_cast<int64_t>(DType::kQ4_0),
                    static_cast<int64_t>(DType::kQ2_K), static_cast<int64_t>(DType::kQ3_K),
                    static_cast<int64_t>(DType::kQ4_K), static_cast<int64_t>(DType::kQ5_K),
                    static_cast<int64_t>(DType::kQ6_K)}})
    ->Unit(benchmark::kMicrosecond);

// One bf16-weight MatMul out[T, N] = x[T, K] · w[N, K]^T on one thread.
void BM_MatMul(benchmark::State& state) {
  const auto mode = state.range(0) == 0 ? ComputeMode::kF32 : ComputeMode::kBF16;
  const int64_t T = state.range(1), N = state.range(2), K = state.range(3);
  ThreadPool pool(1);
  const Tensor w = testing::RandomMatrix(DType::kBF16, N, K, 1);
  const Tensor x = testing::RandomMatrix(DType::kF32, T, K, 2);
  Tensor out = Tensor::F32(T, N);
  for (auto _ : state) MatMul(x.View(), w.View(), out.MutF32(), mode, pool);
  state.counters["FLOPS"] = benchmark::Counter(2.0 * static_cast<double>(T * N * K),
                                               benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_MatMul)
    ->ArgNames({"mode", "T", "N", "K"})
    ->Args({1, 512, 2048, 2048})
    ->Args({0, 512, 2048, 2048})
    ->Args({1, 512, 2048, 5632})
    ->Unit(benchmark::kMillisecond);

// One TinyLlama layer's attention (32 query heads, 4 KV heads, head_dim 64, bf16 KV cache):
// T new tokens after pos0 cached ones. FLOPS counts q·k and p·v over visible (causal) keys.
void BM_Attention(benchmark::State& state) {
  const int64_t T = state.range(0), pos0 = state.range(1);
  const int threads = static_cast<int>(state.range(2));
  ThreadPool pool(threads);
  const Tensor q = testing::RandomMatrix(DType::kF32, T, 32 * 64, 1);
  const Tensor k = testing::RandomMatrix(DType::kBF16, pos0 + T, 4 * 64, 2);
  const Tensor v = testing::RandomMatrix(DType::kBF16, pos0 + T, 4 * 64, 3);
  Tensor out = Tensor::F32(T, 32 * 64);
  double visible = 0.0;
  for (int64_t t = 0; t < T; ++t) visible += static_cast<double>(pos0 + t + 1);
  const AttentionShape shape{.n_heads = 32, .n_kv_heads = 4, .head_dim = 64, .scale = 0.125f};
  for (auto _ : state) {
    Attention(q.View(), k.View(), v.View(), pos0, shape, out.MutF32(), pool);
  }
  state.counters["FLOPS"] =
      benchmark::Counter(visible * 32 * 64 * 4, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Attention)
    ->ArgNames({"T", "pos0", "threads"})
    ->Args({512, 0, 1})
    ->Args({512, 0, 2})
    ->Args({1, 511, 1})
    ->Args({1, 2047, 1})
    ->Unit(benchmark::kMillisecond);

// One decode step (T = 1) of that attention over pos0 cached positions, the cache in each of the
// dense types attention reads in place: f32, bf16, ggml q8_0 and q4_0 (bytes/s = cache bytes read).
void BM_AttentionDecodeCache(benchmark::State& state) {
  constexpr DType kTypes[] = {DType::kF32, DType::kBF16, DType::kQ8_0, DType::kQ4_0};
  const DType type = kTypes[state.range(0)];
  const int64_t pos0 = state.range(1);
  ThreadPool pool(static_cast<int>(state.range(2)));
  const Tensor q = testing::RandomMatrix(DType::kF32, 1, 32 * 64, 1);
  const Tensor k = testing::RandomMatrix(type, pos0 + 1, 4 * 64, 2);
  const Tensor v = testing::RandomMatrix(type, pos0 + 1, 4 * 64, 3);
  Tensor out = Tensor::F32(1, 32 * 64);
  const AttentionShape shape{.n_heads = 32, .n_kv_heads = 4, .head_dim = 64, .scale = 0.125f};
  for (auto _ : state) {
    Attention(q.View(), k.View(), v.View(), pos0, shape, out.MutF32(), pool);
  }
  state.SetLabel(std::string(Info(type).name));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 2 * (pos0 + 1) *
                          static_cast<int64_t>(BytesFor(type, 4 * 64)));
}
BENCHMARK(BM_AttentionDecodeCache)
    ->ArgNames({"type", "pos0", "threads"})
    ->ArgsProduct({{0, 1, 2, 3}, {4095}, {1, 2}})
    ->Unit(benchmark::kMicrosecond);

// The same over coded caches: MLX affine codes (4 and 8 bits, group 64, mlx-lm's quantized KV
// cache) and TurboQuant k8v3 (keys 8-bit affine per 32, values rotated 3-bit Lloyd-Max).
void BM_AttentionDecodeCodedCache(benchmark::State& state) {
  const int64_t kind = state.range(0), pos0 = state.range(1);
  ThreadPool pool(static_cast<int>(state.range(2)));
  constexpr int64_t kKvDim = 4 * 64;
  const Tensor q = testing::RandomMatrix(DType::kF32, 1, 32 * 64, 1);
  const Tensor k = testing::RandomMatrix(DType::kF32, pos0 + 1, kKvDim, 2);
  const Tensor v = testing::RandomMatrix(DType::kF32, pos0 + 1, kKvDim, 3);
  Tensor out = Tensor::F32(1, 32 * 64);
  const AttentionShape shape{.n_heads = 32, .n_kv_heads = 4, .head_dim = 64, .scale = 0.125f};
  const int64_t rows = pos0 + 1;
  std::string label;
  int64_t bytes = 0;
  if (kind < 2) {
    const int bits = kind == 0 ? 4 : 8;
    const auto kq =
        quant::QuantizeMlx(k.RowF32(0), rows, kKvDim, quant::MlxMode::kAffine, bits, 64);
    const auto vq =
        quant::QuantizeMlx(v.RowF32(0), rows, kKvDim, quant::MlxMode::kAffine, bits, 64);
    const KvRows keys(kq.View()), values(vq.View());
    for (auto _ : state) Attention(q.View(), keys, values, pos0, shape, out.MutF32(), pool);
    label = fmt::format("affine:{}:g64", bits);
    bytes = 2 * rows * (kKvDim * bits / 8 + 8 * kKvDim / 64);
  } else {
    Tensor kp(DType::kU8, rows, kKvDim), vp(DType::kU8, rows, kKvDim * 3 / 8);
    Tensor ks(DType::kF16, rows, kKvDim / 32), ko(DType::kF16, rows, kKvDim / 32);
    Tensor vs(DType::kF16, rows, kKvDim / 32);
    quant::EncodeTurboKeys(k.RowF32(0), rows * kKvDim, 8, kp.bytes(),
                           reinterpret_cast<uint16_t*>(ks.bytes()),
                           reinterpret_cast<uint16_t*>(ko.bytes()), "keys");
    quant::EncodeTurboValues(v.RowF32(0), rows * kKvDim, 64, 3, vp.bytes(),
                             reinterpret_cast<uint16_t*>(vs.bytes()), "values");
    const KvRows keys(quant::TurboRows{.part = quant::TurboPart::kKeys,
                                       .bits = 8,
                                       .head_dim = 64,
                                       .packed = kp.View(),
                                       .scales = ks.View(),
                                       .offsets = ko.View()});
    const KvRows values(quant::TurboRows{.part = quant::TurboPart::kValues,
                                         .bits = 3,
                                         .head_dim = 64,
                                         .packed = vp.View(),
                                         .scales = vs.View(),
                                         .offsets = MatView{}});
    for (auto _ : state) Attention(q.View(), keys, values, pos0, shape, out.MutF32(), pool);
    label = "turbo:k8v3";
    bytes = rows * (kKvDim + 4 * kKvDim / 32 + kKvDim * 3 / 8 + 2 * kKvDim / 32);
  }
  state.SetLabel(label);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * bytes);
}
BENCHMARK(BM_AttentionDecodeCodedCache)
    ->ArgNames({"kind", "pos0", "threads"})
    ->ArgsProduct({{0, 1, 2}, {4095}, {1, 2}})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace proctor::ops

BENCHMARK_MAIN();
