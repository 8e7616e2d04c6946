// Top-k selection of a dump's logits rows: SelectTopK (radix select) vs SelectTopKScalar (the
// nth_element + sort reference) at real vocabularies (32,000 Llama 2, 151,936 Qwen2/3, 262,144
// Gemma 3) and k = 2,048, plus the demo teacher's shape (vocabulary 512, k 256). Rows are
// logits-like: normal with sigma 2.5, a quarter of them rounded to 1/4 (ties). Eight different
// rows are cycled so the caches see a dump's access pattern. items_per_second is rows per second.
//   build/bench/topk_bench
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>
#include <vector>

#include "ops/logits_stats.h"

namespace proctor::ops {
namespace {

constexpr int kRows = 8;

std::vector<float> LogitsRows(int64_t vocab) {
  std::mt19937 rng(static_cast<uint32_t>(vocab));
  std::normal_distribution<float> normal(0.0f, 2.5f);
  std::vector<float> rows(static_cast<size_t>(kRows * vocab));
  for (size_t i = 0; i < rows.size(); ++i) {
    rows[i] = normal(rng);
    if (i % 4 == 0) rows[i] = std::round(rows[i] * 4) / 4;
  }
  return rows;
}

template <void (*Select)(const float*, int64_t, int64_t, int32_t*)>
void BM_TopK(benchmark::State& state) {
  const int64_t vocab = state.range(0);
  const int64_t k = state.range(1);
  const auto rows = LogitsRows(vocab);
  std::vector<int32_t> indices(static_cast<size_t>(k));
  int64_t r = 0;
  for (auto _ : state) {
    Select(rows.data() + (r % kRows) * vocab, vocab, k, indices.data());
    benchmark::DoNotOptimize(indices.data());
    ++r;
  }
  state.SetItemsProcessed(r);
}

void Shapes(benchmark::internal::Benchmark* b) {
  b->Args({32000, 2048})->Args({151936, 2048})->Args({262144, 2048})->Args({512, 256});
  b->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_TopK<SelectTopK>)->Name("SelectTopK")->Apply(Shapes);
BENCHMARK(BM_TopK<SelectTopKScalar>)->Name("SelectTopKScalar")->Apply(Shapes);

}  // namespace
}  // namespace proctor::ops

BENCHMARK_MAIN();
