// The Llama-family forward pass (see runtime_model.h). Reads like the math:
//   x = embed(ids)
//   per layer:  x += o_proj(attention(rope(q_norm?(q_proj(n))), rope(k_norm?(k_proj(n))),
//                                      v_proj(n)))            with n = rmsnorm(x)
//               x += down_proj(silu(gate_proj(n)) * up_proj(n))  with n = rmsnorm(x)
//   h = rmsnorm(x)                      (returned; LogitsFromHidden applies lm_head)
#include <fmt/format.h>

#include <cmath>

#include "model/mlx_weights.h"
#include "model/runtime_model.h"
#include "ops/ops.h"
#include "util/error.h"

namespace proctor {
namespace {

MatView Absent() { return MatView{}; }

MutMatF32 Rows(Tensor& t) { return t.MutF32(); }
MutMatF32 Rows(MutMatF32 m) { return m; }

// The activation buffers of a forward pass. They are kept per thread and reused by every layer
// and call: fresh multi-megabyte buffers cost page faults on first touch and, once two threads
// run, TLB shootdowns when they are unmapped again (together a quarter of prefill time).
enum Buffer { kNormed, kQ, kK, kV, kAttended, kProjected, kGate, kUp, kDown, kBufferCount };

// A [rows, cols] f32 view of the calling thread's buffer `which` (contents undefined).
MutMatF32 Scratch(Buffer which, int64_t rows, int64_t cols) {
  thread_local Tensor buffers[kBufferCount];
  Tensor& buf = buffers[which];
  if (buf.rows() < rows * cols) buf = Tensor::F32(rows * cols, 1);
  return MutMatF32{rows, cols, cols, buf.f32()};
}

// Views an f32 [T, heads*D] buffer as [T*heads, D] (one row per head).
MutMatF32 PerHead(MutMatF32 m, int head_dim) {
  CHECK(m.stride == m.cols && m.cols % head_dim == 0);
  return MutMatF32{m.rows * (m.cols / head_dim), head_dim, head_dim, m.data};
}

}  // namespace

ops::ComputeMode ParseComputeMode(std::string_view name) {
  if (name == "f32") return ops::ComputeMode::kF32;
  if (name == "bf16") return ops::ComputeMode::kBF16;
  Fail("model", "unknown compute mode '{}' (expected f32 or bf16)", name);
}

std::string_view ComputeModeName(ops::ComputeMode mode) {
  return mode == ops::ComputeMode::kF32 ? "f32" : "bf16";
}

RuntimeModel::RuntimeModel(const ModelConfig& config, const WeightStore& weights,
                           RuntimeOptions options)
    : config_(config),
      options_(options),
      pool_(options.pool ? *options.pool : ThreadPool::Global()) {
  const int d = config.head_dim;
  if (config.rotary_dim > 0 && config.rotary_dim != d) {
    Fail("model",
         "{}: partial rotary embeddings (rotary_dim {} of head_dim {}) are not "
         "implemented",
         weights.origin(), config.rotary_dim, d);
  }
  CheckKvSchemeFits(options.kv, d);
  rope_ = ComputeRopeFrequencies(
      config.rope, d, config.max_position_embeddings > 0 ? config.max_position_embeddings : 4096);
  rope_style_ =
      config.rope_adjacent_pairs ? ops::RopeStyle::kAdjacentPairs : ops::RopeStyle::kHalfRotation;
  attention_scale_ = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));

  auto optional = [&](const std::string& name) {
    return weights.Has(name) ? weights.Matrix(name) : Absent();
  };
  const int64_t hidden = config.hidden_size, vocab = config.vocab_size;
  const int64_t q_dim = int64_t{config.num_heads} * d, kv_dim = int64_t{config.num_kv_heads} * d;
  const int64_t ff = config.intermediate_size;
  auto linear = [&](const std::string& path, int64_t out, int64_t in) {
    return ResolveLinear(weights, config.mlx_quantization, path, out, in);
  };
  embed_tokens_ = linear("model.embed_tokens", vocab, hidden);
  final_norm_ = weights.Matrix("model.norm.weight");
  if (config.tie_word_embeddings && !weights.Has("lm_head.weight")) {
    lm_head_ = embed_tokens_;
  } else {
    lm_head_ = linear("lm_head", vocab, hidden);
  }
  for (int i = 0; i < config.num_layers; ++i) {
    const std::string p = fmt::format("model.layers.{}.", i);
    LayerWeights l;
    l.input_norm = weights.Matrix(p + "input_layernorm.weight");
    l.post_attention_norm = weights.Matrix(p + "post_attention_layernorm.weight");
    l.q = linear(p + "self_attn.q_proj", q_dim, hidden);
    l.k = linear(p + "self_attn.k_proj", kv_dim, hidden);
    l.v = linear(p + "self_attn.v_proj", kv_dim, hidden);
    l.o = linear(p + "self_attn.o_proj", hidden, q_dim);
    l.q_bias = optional(p + "self_attn.q_proj.bias");
    l.k_bias = optional(p + "self_attn.k_proj.bias");
    l.v_bias = optional(p + "self_attn.v_proj.bias");
    l.o_bias = optional(p + "self_attn.o_proj.bias");
    if (config.qk_norm) {
      l.q_norm = weights.Matrix(p + "self_attn.q_norm.weight");
      l.k_norm = weights.Matrix(p + "self_attn.k_norm.weight");
    }
    l.gate = linear(p + "mlp.gate_proj", ff, hidden);
    l.up = linear(p + "mlp.up_proj", ff, hidden);
    l.down = linear(p + "mlp.down_proj", hidden, ff);
    layers_.push_back(l);
  }
}

ModelCache RuntimeModel::MakeCache(int64_t reserve_positions) const {
  ModelCache cache;
  const int64_t kv_dim = static_cast<int64_t>(config_.num_kv_heads) * config_.head_dim;
  for (int i = 0; i < config_.num_layers; ++i) {
    cache.AddLayer(std::make_unique<FullAttentionKvCache>(kv_dim, options_.kv, reserve_positions));
  }
  return cache;
}

void RuntimeModel::AttentionBlock(int layer, MutMatF32 x, std::span<const int32_t> positions,
                                  ModelCache& cache) const {
  const LayerWeights& w = layers_[static_cast<size_t>(layer)];
  const int64_t t = x.rows;
  const int hq = config_.num_heads, hkv = config_.num_kv_heads, d = config_.head_dim;
  const ops::ComputeMode mode = options_.compute;

  const MutMatF32 normed = Scratch(kNormed, t, config_.hidden_size);  // [T, hidden]
  ops::RmsNorm(x.View(), w.input_norm, config_.rms_norm_eps, false, Rows(normed));

  const MutMatF32 q = Scratch(kQ, t, int64_t{hq} * d);   // [T, Hq*D]
  const MutMatF32 k = Scratch(kK, t, int64_t{hkv} * d);  // [T, Hkv*D]
  const MutMatF32 v = Scratch(kV, t, int64_t{hkv} * d);  // [T, Hkv*D]
  ops::MatMul(normed.View(), w.q, Rows(q), mode, pool_);
  ops::MatMul(normed.View(), w.k, Rows(k), mode, pool_);
  ops::MatMul(normed.View(), w.v, Rows(v), mode, pool_);
  if (w.q_bias.rows) ops::AddBias(Rows(q), w.q_bias);
  if (w.k_bias.rows) ops::AddBias(Rows(k), w.k_bias);
  if (w.v_bias.rows) ops::AddBias(Rows(v), w.v_bias);
  if (config_.qk_norm) {  // qwen3: RMSNorm over each head, before the rotation
    const MutMatF32 qh = PerHead(Rows(q), d), kh = PerHead(Rows(k), d);
    ops::RmsNorm(qh.View(), w.q_norm, config_.rms_norm_eps, false, qh);
    ops::RmsNorm(kh.View(), w.k_norm, config_.rms_norm_eps, false, kh);
  }
  ops::ApplyRope(Rows(q), hq, d, positions, rope_.inv_freq, rope_.attention_scaling, rope_style_);
  ops::ApplyRope(Rows(k), hkv, d, positions, rope_.inv_freq, rope_.attention_scaling, rope_style_);

  FullAttentionKvCache& kv = cache.Attention(layer);
  CHECK(kv.length() == positions.front());
  kv.Append(k.View(), v.View());

  const MutMatF32 attended = Scratch(kAttended, t, int64_t{hq} * d);  // [T, Hq*D]
  ops::Attention(q.View(), kv.Keys(), kv.Values(), positions.front(), hq, hkv, d, attention_scale_,
                 config_.SlidingWindowForLayer(layer), Rows(attended), pool_);

  const MutMatF32 projected = Scratch(kProjected, t, config_.hidden_size);  // [T, hidden]
  ops::MatMul(attended.View(), w.o, Rows(projected), mode, pool_);
  if (w.o_bias.rows) ops::AddBias(Rows(projected), w.o_bias);
  ops::AddInPlace(x, projected.View());
}

void RuntimeModel::MlpBlock(int layer, MutMatF32 x) const {
  const LayerWeights& w = layers_[static_cast<size_t>(layer)];
  const int64_t t = x.rows;
  const ops::ComputeMode mode = options_.compute;

  const MutMatF32 normed = Scratch(kNormed, t, config_.hidden_size);  // [T, hidden]
  ops::RmsNorm(x.View(), w.post_attention_norm, config_.rms_norm_eps, false, Rows(normed));
  const MutMatF32 gate = Scratch(kGate, t, config_.intermediate_size);  // [T, ff]
  const MutMatF32 up = Scratch(kUp, t, config_.intermediate_size);      // [T, ff]
  ops::MatMul(normed.View(), w.gate, Rows(gate), mode, pool_);
  ops::MatMul(normed.View(), w.up, Rows(up), mode, pool_);
  ops::SiluMul(Rows(gate), up.View());
  const MutMatF32 down = Scratch(kDown, t, config_.hidden_size);  // [T, hidden]
  ops::MatMul(gate.View(), w.down, Rows(down), mode, pool_);
  ops::AddInPlace(x, down.View());
}

Tensor RuntimeModel::ForwardHidden(std::span<const int32_t> ids, ModelCache& cache) const {
  CHECK(cache.num_layers() == config_.num_layers);
  const int64_t t = static_cast<int64_t>(ids.size());
  Tensor x = Tensor::F32(t, config_.hidden_size);  // [T, hidden] residual stream
  if (t == 0) return x;
  for (const int32_t id : ids) {
    if (id < 0 || id >= config_.vocab_size) {
      Fail("model", "token id {} is outside the vocabulary [0, {})", id, config_.vocab_size);
    }
  }
  // Hugging Face's "dynamic" rope recomputes its frequencies for every forward that reaches past
  // max_position_embeddings (so its logits there depend on how the sequence is chunked); the
  // engine has the frequencies of shorter sequences only, and says so instead of diverging.
  if (config_.rope.type == RopeType::kDynamic && config_.max_position_embeddings > 0 &&
      cache.position() + t > config_.max_position_embeddings) {
    Fail("model",
         "rope_type \"dynamic\" rescales its frequencies past max_position_embeddings {}, which "
         "proctor does not implement; this run needs {} positions (use sequences of at most {} "
         "tokens)",
         config_.max_position_embeddings, cache.position() + t, config_.max_position_embeddings);
  }
  ops::GatherRows(embed_tokens_, ids, Rows(x));

  std::vector<int32_t> positions(static_cast<size_t>(t));
  for (int64_t i = 0; i < t; ++i) {
    positions[static_cast<size_t>(i)] = static_cast<int32_t>(cache.position() + i);
  }
  for (int layer = 0; layer < config_.num_layers; ++layer) {
    AttentionBlock(layer, Rows(x), positions, cache);
    MlpBlock(layer, Rows(x));
  }
  cache.EndStep(t);  // may convert a quantized-KV cache (model/kv_cache.h)
  ops::RmsNorm(x.View(), final_norm_, config_.rms_norm_eps, false, Rows(x));
  return x;
}

void RuntimeModel::LogitsFromHidden(const MatView& hidden, MutMatF32 logits) const {
  CHECK(hidden.cols == config_.hidden_size && logits.rows == hidden.rows &&
        logits.cols == config_.vocab_size);
  ops::MatMul(hidden, lm_head_, logits, options_.compute, pool_);
}

Tensor RuntimeModel::LogitsFromHidden(const MatView& hidden) const {
  Tensor logits = Tensor::F32(hidden.rows, config_.vocab_size);  // [rows, vocab]
  LogitsFromHidden(hidden, logits.MutF32());
  return logits;
}

}  // namespace proctor
