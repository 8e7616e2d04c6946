// Scorer throughput at a real LLM's shape: vocabulary 151,936 (Qwen2/3), top_k 2,048.
// BM_ScoreChunk is what `proctor kl` does per chunk besides the forward: read the chunk's
// records from the dump (one positioned read) and score every row (full-vocabulary max,
// argmax and logsumexp, gather at the teacher's indices, KL terms), rows across the pool.
// Its items_per_second is positions per second.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <memory>

#include "eval/demo/synthetic_lm.h"
#include "eval/formats/ref_logits.h"
#include "eval/runners/kl_eval.h"
#include "eval/scoring/kl_where.h"
#include "ops/logits_stats.h"
#include "util/thread_pool.h"

namespace proctor {
namespace {

constexpr int64_t kVocab = 151936;
constexpr int64_t kTopK = 2048;
constexpr int64_t kCtx = 257;   // 256 scored positions
constexpr int64_t kChunk = 64;  // candidate rows per chunk

struct Fixture {
  std::filesystem::path dir;
  std::unique_ptr<ReferenceLogitsDump> dump;
  Tensor candidate;  // [kChunk, kVocab]

  Fixture() {
    dir =
        std::filesystem::temp_directory_path() / fmt::format("proctor_scorer_bench_{}", ::getpid());
    std::filesystem::remove_all(dir);
    const SyntheticLm teacher(kVocab, 11);
    const auto tokens = SyntheticTokens(1, kCtx, kVocab, 3);
    WriteSyntheticDump(dir, teacher, tokens, 1, kCtx, kTopK, "bench-teacher", "bench");
    dump = std::make_unique<ReferenceLogitsDump>(ReferenceLogitsDump::Open(dir));
    candidate = Tensor::F32(kChunk, kVocab);
    const SyntheticLm noisy(kVocab, 11, 0.3f, 5);
    std::vector<float> row(kVocab);
    for (int64_t r = 0; r < kChunk; ++r) noisy.RowLogits(tokens, r, candidate.RowF32(r));
  }
  ~Fixture() { std::filesystem::remove_all(dir); }
};

Fixture& Shared() {
  static Fixture fixture;
  return fixture;
}

void BM_ScoreChunk(benchmark::State& state) {
  Fixture& f = Shared();
  ThreadPool pool(static_cast<int>(state.range(0)));
  ReferenceRecords records;
  std::vector<PositionScore> scores(kChunk);
  int64_t positions = 0;
  int64_t start = 0;
  for (auto _ : state) {
    f.dump->ReadRecords(0, start, start + kChunk, &records);
    ScoreChunk(records, f.candidate.View(), kChunk, "bench", pool, scores.data());
    benchmark::DoNotOptimize(scores.data());
    positions += kChunk;
    start = (start + kChunk) % f.dump->positions();
  }
  state.SetItemsProcessed(positions);
  state.counters["threads"] = static_cast<double>(pool.num_threads());
}
BENCHMARK(BM_ScoreChunk)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_RowStats(benchmark::State& state) {
  Fixture& f = Shared();
  int64_t r = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(ops::ComputeRowStats(f.candidate.RowF32(r), kVocab));
    r = (r + 1) % kChunk;
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * kVocab * 4);
}
BENCHMARK(BM_RowStats)->Unit(benchmark::kMicrosecond);

void BM_RowStatsScalar(benchmark::State& state) {
  Fixture& f = Shared();
  int64_t r = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(ops::ComputeRowStatsScalar(f.candidate.RowF32(r), kVocab));
    r = (r + 1) % kChunk;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RowStatsScalar)->Unit(benchmark::kMicrosecond);

void BM_TopKTerms(benchmark::State& state) {
  Fixture& f = Shared();
  ReferenceRecords records;
  f.dump->ReadRecords(0, 0, kChunk, &records);
  std::vector<ops::RowStats> stats(kChunk);
  for (int64_t r = 0; r < kChunk; ++r)
    stats[r] = ops::ComputeRowStats(f.candidate.RowF32(r), kVocab);
  int64_t r = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(ops::ComputeTopKTerms(records.Logits(r), records.Indices(r), kTopK,
                                                   records.logsumexp[r], f.candidate.RowF32(r),
                                                   stats[r]));
    r = (r + 1) % kChunk;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_TopKTerms)->Unit(benchmark::kMicrosecond);

// `kl --where`'s statistics (eval/scoring/kl_where.h) over a run's scores: 64 sequences x 512
// positions with varied KL and confidence, the 20 worst kept. Its items_per_second, set against
// BM_ScoreChunk's, is the share of the scoring time they add.
void BM_KlWhere(benchmark::State& state) {
  std::vector<std::vector<PositionScore>> scores(64, std::vector<PositionScore>(512));
  uint32_t x = 12345;
  for (auto& seq : scores) {
    for (PositionScore& p : seq) {
      x = x * 1664525u + 1013904223u;
      p.kl = static_cast<double>(x >> 8) / (1 << 24);
      p.teacher_top1_probability = static_cast<double>(x & 0xffff) / 65536.0;
      p.next_token = static_cast<int32_t>(x % 7);
      p.teacher_argmax = static_cast<int32_t>((x >> 3) % 7);
      p.candidate_argmax = static_cast<int32_t>((x >> 5) % 7);
    }
  }
  for (auto _ : state) {
    KlWhere where = ComputeKlWhere(scores, 20);
    benchmark::DoNotOptimize(where.worst.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * 64 * 512);
}
BENCHMARK(BM_KlWhere)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace proctor

BENCHMARK_MAIN();
