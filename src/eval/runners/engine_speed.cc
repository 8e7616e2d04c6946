#include "eval/runners/engine_speed.h"

#include <sys/resource.h>

#include <algorithm>
#include <random>
#include <vector>

#include "eval/runners/eval_model.h"
#include "model/greedy.h"
#include "ops/matmul.h"
#include "util/error.h"
#include "util/machine.h"
#include "util/thread_pool.h"
#include "util/timing.h"

namespace proctor {
namespace {

int64_t PeakRssBytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;
}

// Deterministic pseudo-random prompt ids in [0, vocab).
std::vector<int32_t> BenchPrompt(int prompt_tokens, int64_t vocab) {
  std::vector<int32_t> prompt(static_cast<size_t>(prompt_tokens));
  uint64_t state = 12345;
  for (int32_t& id : prompt) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    id = static_cast<int32_t>((state >> 33) % static_cast<uint64_t>(vocab));
  }
  return prompt;
}

// Positions [0, positions) of every attention layer's cache as random keys and values (N(0, 1),
// fixed seed), appended and converted a chunk at a time as a prefill would; recurrent layers keep
// their zero state.
void FillCacheWithNoise(ModelCache& cache, int64_t positions) {
  constexpr int64_t kChunk = 256;
  std::mt19937 rng(2026);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int64_t p0 = 0; p0 < positions; p0 += kChunk) {
    const int64_t n = std::min(kChunk, positions - p0);
    for (int i = 0; i < cache.num_layers(); ++i) {
      if (cache.layer(i).kind() == LayerCacheKind::kRecurrent) continue;
      FullAttentionKvCache& layer = cache.Attention(i);
      Tensor keys = Tensor::F32(n, layer.kv_dim()), values = Tensor::F32(n, layer.kv_dim());
      for (Tensor* t : {&keys, &values}) {
        float* x = t->MutF32().data;
        for (int64_t e = 0; e < n * layer.kv_dim(); ++e) x[e] = normal(rng);
      }
      layer.Append(keys.View(), values.View());
    }
    cache.EndStep(n);
  }
}

}  // namespace

nlohmann::json BenchmarkEngine(const EngineBenchOptions& options) {
  if (options.prompt_tokens < 1 || options.decode_tokens < 0 || options.chunk_size < 1 ||
      options.noise_positions < 0) {
    Fail("bench",
         "need --prompt-tokens >= 1, --decode-tokens >= 0, --chunk >= 1, --noise-context >= 0 "
         "(got {}, {}, {}, {})",
         options.prompt_tokens, options.decode_tokens, options.chunk_size, options.noise_positions);
  }
  nlohmann::json report;
  double load_seconds = 0;
  std::shared_ptr<const EvalModel> opened;
  {
    ScopedSeconds load(&load_seconds);
    opened = EvalModel::Open(options.model);
  }
  report["load_seconds"] = load_seconds;
  report["model"] = options.model;
  report["weights"] = opened->weights_name();
  report["summary"] = opened->config().Summary();
  report["weight_bytes"] = opened->weights().TotalBytes();
  // The prompt and the decoded tokens must fit the model's context: a longer run measures
  // nothing the model can do, and its cache alone could exhaust memory.
  int64_t context = opened->config().max_position_embeddings;
  if (options.synthetic_context > 0) {
    if (!options.model.starts_with("synthetic:")) {
      Fail("bench", "--context {} sets a --synthetic model's context; '{}' is a real model",
           options.synthetic_context, options.model);
    }
    context = options.synthetic_context;
  }
  const int64_t positions =
      options.noise_positions + int64_t{options.prompt_tokens} + options.decode_tokens;
  if (context > 0 && positions > context) {
    Fail("bench",
         "--noise-context {} + --prompt-tokens {} + --decode-tokens {} = {} positions exceed the "
         "context of '{}' ({} positions{})",
         options.noise_positions, options.prompt_tokens, options.decode_tokens, positions,
         options.model, context,
         options.model.starts_with("synthetic:") ? "; --context N times a longer one" : "");
  }
  const std::shared_ptr<const RuntimeModel> model = opened->Runtime(options.runtime);

  const std::vector<int32_t> prompt = BenchPrompt(options.prompt_tokens, model->vocab_size());
  ModelCache cache = model->MakeCache(positions);
  double noise_seconds = 0;
  {
    ScopedSeconds fill(&noise_seconds);
    FillCacheWithNoise(cache, options.noise_positions);
  }
  double prefill_seconds = 0, decode_seconds = 0;
  Tensor logits;
  {
    ScopedSeconds prefill(&prefill_seconds);
    const Tensor hidden = PrefillLastHidden(*model, prompt, options.chunk_size, cache);
    logits = model->LogitsFromHidden(hidden.View());
  }
  const uint64_t expert_bytes_before_decode = model->ExpertBytesRead();
  {
    ScopedSeconds decode(&decode_seconds);
    for (int i = 0; i < options.decode_tokens; ++i) {
      const int32_t next = ArgmaxLowestIndex(
          std::span<const float>(logits.RowF32(0), static_cast<size_t>(model->vocab_size())));
      const Tensor hidden = model->ForwardHidden(std::span<const int32_t>(&next, 1), cache);
      model->LogitsFromHidden(hidden.View(), logits.MutF32());
    }
  }
  if (options.noise_positions > 0) {
    report["noise_positions"] = options.noise_positions;
    report["noise_seconds"] = noise_seconds;
  }
  report["prefill_tokens"] = options.prompt_tokens;
  report["prefill_chunk"] = options.chunk_size;
  report["prefill_seconds"] = prefill_seconds;
  report["prefill_tokens_per_second"] = options.prompt_tokens / prefill_seconds;
  report["decode_tokens"] = options.decode_tokens;
  report["decode_seconds"] = decode_seconds;
  report["decode_tokens_per_second"] =
      options.decode_tokens > 0 ? options.decode_tokens / decode_seconds : 0.0;
  const KvScheme& kv = options.runtime.kv;
  const ModelConfig& config = opened->config();
  const int64_t kv_dim = int64_t{config.num_kv_heads} * config.head_dim;
  // Quantized-cache facts from the first attention layer (a hybrid model's first layers may be
  // recurrent).
  int attention_layer = 0;
  while (attention_layer + 1 < cache.num_layers() &&
         cache.layer(attention_layer).kind() == LayerCacheKind::kRecurrent) {
    ++attention_layer;
  }
  if (config.moe.num_experts > 0) {  // what routing reads of the experts, against all of them
    const RuntimeModel::ExpertBytes experts = model->ExpertWeightBytes();
    nlohmann::json moe = {{"experts", config.moe.num_experts},
                          {"experts_per_token", config.moe.experts_per_token},
                          {"expert_bytes", experts.all},
                          {"expert_bytes_per_token", experts.per_token}};
    if (options.decode_tokens > 0) {
      moe["expert_bytes_read_per_decoded_token"] =
          static_cast<double>(model->ExpertBytesRead() - expert_bytes_before_decode) /
          options.decode_tokens;
    }
    report["moe"] = moe;
  }
  report["kv_cache_bytes"] = cache.MemoryBytes();  // allocated: reserved positions x layers
  report["compute"] = std::string(ComputeModeName(options.runtime.compute));
  report["kv"] = kv.Name();
  if (kv.quantized()) {
    report["kv_start"] = kv.start;
    report["kv_converted"] =
        cache.Attention(attention_layer).converted();  // false: the run never reached kv_start
  }
  report["kv_effective_bits"] = kv.EffectiveBits();
  if (kv.layer_bits.empty()) report["kv_bytes_per_token_per_layer"] = kv.BytesPerToken(kv_dim);
  report["kv_bytes_per_token"] =
      KvBytesPerToken(kv, kv_dim, config.num_layers, config.layer_uses_linear_attention);
  report["threads"] = ThreadPool::Global().num_threads();
  report["bf16_kernel"] = ops::BF16KernelName();
  report["prefill_kernels"] =
      model->MatMulKernels(std::min<int64_t>(options.chunk_size, options.prompt_tokens));
  report["decode_kernels"] = model->MatMulKernels(1);
  report["machine"] = DescribeMachine(ReadMachineFacts());
  report["cpu_cap"] = std::string(ops::CpuCapName(ops::CpuFeatures::Host().cap));
  report["peak_rss_bytes"] = PeakRssBytes();
  return report;
}

}  // namespace proctor
