// RuntimeModel (runtime_model.h): weights by name, the cache, the embedding, the layer loop and
// the LM head. The layers themselves are in llama_forward.cc and gemma_forward.cc.
#include "model/runtime_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "model/mlx_weights.h"
#include "ops/matmul_kernels.h"
#include "ops/ops.h"
#include "util/error.h"

namespace proctor {

LayerNormNames NormNamesOf(BlockStyle block) {
  switch (block) {
    case BlockStyle::kLlama:
      return {.attention = "input_layernorm",
              .attention_out = "",
              .mlp = "post_attention_layernorm",
              .mlp_out = ""};
    case BlockStyle::kGemma:
      return {.attention = "input_layernorm",
              .attention_out = "post_attention_layernorm",
              .mlp = "pre_feedforward_layernorm",
              .mlp_out = "post_feedforward_layernorm"};
    case BlockStyle::kHybrid:
      return {.attention = "input_layernorm",
              .attention_out = "",
              .mlp = "post_attention_layernorm",
              .mlp_out = ""};
  }
  return {};
}

namespace {

// The depthwise conv1d weight (HF [channels, 1, taps], llama.cpp's [channels, taps], mlx-lm's
// [channels, taps, 1]: the same bytes) as a [channels, taps] matrix.
MatView ConvTaps(const WeightStore& weights, const std::string& name,
                 const LinearAttentionConfig& la) {
  const int64_t channels = la.conv_dim(), taps = la.conv_kernel;
  const TensorInfo& info = weights.Expect(name, la.ConvWeightShape());
  if (!Info(info.type).is_float) {
    Fail("model", "{}: tensor \"{}\" is {}, expected a float type", weights.origin(), name,
         Name(info.type));
  }
  const size_t row_bytes = BytesFor(info.type, static_cast<uint64_t>(taps));
  return MatView{info.type, channels, taps, row_bytes, info.data};
}

}  // namespace

ops::ComputeMode ParseComputeMode(std::string_view name) {
  if (name == "f32") return ops::ComputeMode::kF32;
  if (name == "bf16") return ops::ComputeMode::kBF16;
  if (name == "q8") return ops::ComputeMode::kQ8;
  Fail("model", "unknown compute mode '{}' (expected f32, bf16 or q8)", name);
}

std::string_view ComputeModeName(ops::ComputeMode mode) {
  switch (mode) {
    case ops::ComputeMode::kF32:
      return "f32";
    case ops::ComputeMode::kBF16:
      return "bf16";
    case ops::ComputeMode::kQ8:
      return "q8";
  }
  return "?";
}

RuntimeModel::RuntimeModel(const ModelConfig& config, const WeightStore& weights,
                           RuntimeOptions options)
    : config_(config),
      options_(options),
      pool_(options.pool ? *options.pool : ThreadPool::Global()) {
  const int d = config.head_dim;
  CheckKvSchemeFits(options.kv, d, config.num_layers);
  const int64_t max_positions =
      config.max_position_embeddings > 0 ? config.max_position_embeddings : 4096;
  rope_ = ComputeRopeFrequencies(config.rope, d, max_positions);
  if (config.sliding_rope)
    sliding_rope_ = ComputeRopeFrequencies(*config.sliding_rope, d, max_positions);
  rope_style_ =
      config.rope_adjacent_pairs ? ops::RopeStyle::kAdjacentPairs : ops::RopeStyle::kHalfRotation;
  const BlockStyle block = FamilyOf(config.arch).block;
  // Gemma: the embedding times sqrt(hidden), a python float rounded to the compute dtype (f32).
  if (block == BlockStyle::kGemma) {
    embed_scale_ = static_cast<float>(std::sqrt(static_cast<double>(config.hidden_size)));
  }

  auto optional = [&](const std::string& name) {
    return weights.Has(name) ? weights.Matrix(name) : MatView{};
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
  const LayerNormNames norms = NormNamesOf(block);
  const LayerTensorNames& names = FamilyOf(config.arch).tensors;
  // q_proj also yields the attention output gate: per head, D query rows then D gate rows.
  const int64_t q_rows = config.attention_output_gate ? 2 * q_dim : q_dim;
  for (int i = 0; i < config.num_layers; ++i) {
    const std::string p = fmt::format("model.layers.{}.", i);
    auto norm = [&](std::string_view name) {
      return name.empty() ? MatView{} : weights.Matrix(fmt::format("{}{}.weight", p, name));
    };
    LayerWeights l;
    l.attention_norm = norm(norms.attention);
    l.attention_out_norm = norm(norms.attention_out);
    l.mlp_norm = norm(norms.mlp);
    l.mlp_out_norm = norm(norms.mlp_out);
    if (config.IsMoeLayer(i)) {
      const MoeConfig& moe = config.moe;
      // A gated MLP at `prefix`, its matrices named as the shared expert's (the defaults) or the
      // routed experts' (the family's names).
      const auto mlp = [&](const std::string& prefix, int64_t size,
                           const LayerTensorNames& named = {}) {
        return MlpWeights{linear(prefix + std::string(named.expert_gate), size, hidden),
                          linear(prefix + std::string(named.expert_up), size, hidden),
                          linear(prefix + std::string(named.expert_down), hidden, size)};
      };
      const std::string m = fmt::format("{}{}.", p, names.moe);
      l.router = linear(m + std::string(names.router), moe.num_experts, hidden);
      for (int e = 0; e < moe.num_experts; ++e) {
        l.experts.push_back(
            mlp(fmt::format("{}experts.{}.", m, e), moe.expert_intermediate_size, names));
      }
      if (moe.shared_expert_intermediate_size > 0) {
        l.shared_expert = mlp(p + "mlp.shared_expert.", moe.shared_expert_intermediate_size);
        l.shared_expert_gate = linear(p + "mlp.shared_expert_gate", 1, hidden);
      }
    } else if (names.fused_gate_up) {  // gate rows, then up rows
      const ops::LinearWeight gate_up = linear(p + "mlp.gate_up_proj", 2 * ff, hidden);
      l.gate = gate_up.RowRange(0, ff);
      l.up = gate_up.RowRange(ff, 2 * ff);
      l.down = linear(p + "mlp.down_proj", hidden, ff);
    } else {
      l.gate = linear(p + "mlp.gate_proj", ff, hidden);
      l.up = linear(p + "mlp.up_proj", ff, hidden);
      l.down = linear(p + "mlp.down_proj", hidden, ff);
    }
    if (config.IsLinearAttentionLayer(i)) {
      const LinearAttentionConfig& la = config.linear_attention;
      const std::string m = p + "linear_attn.";
      // Fused rows come per key-head group g: in_proj_qkvz q (dk), k (dk), v (r dv), z (r dv),
      // r value heads per key head; in_proj_ba b (r), a (r). They are regrouped into Qwen3.5's
      // separate projections (q of every group, then k, then v; z; b; a), which the forward reads.
      using enum ModelConfig::LinearProjections;
      const int64_t nk = la.num_key_heads, r = la.num_value_heads / la.num_key_heads;
      const int64_t dk = la.key_head_dim, rv = r * la.value_head_dim;
      const auto per_group = [&](int64_t stride, int64_t offset, int64_t rows) {
        std::vector<std::pair<int64_t, int64_t>> out;
        for (int64_t g = 0; g < nk; ++g)
          out.emplace_back(g * stride + offset, g * stride + offset + rows);
        return out;
      };
      if (config.linear_projections == kFused) {
        const int64_t group = 2 * dk + 2 * rv;
        const ops::LinearWeight qkvz =
            linear(m + "in_proj_qkvz", la.conv_dim() + la.value_dim(), hidden);
        std::vector<std::pair<int64_t, int64_t>> qkv = per_group(group, 0, dk);
        for (const auto& range : per_group(group, dk, dk)) qkv.push_back(range);
        for (const auto& range : per_group(group, 2 * dk, rv)) qkv.push_back(range);
        l.in_proj_qkv = RegroupedRows(qkvz, qkv);
        l.in_proj_z = RegroupedRows(qkvz, per_group(group, 2 * dk + rv, rv));
      } else {
        l.in_proj_qkv = linear(m + "in_proj_qkv", la.conv_dim(), hidden);
        l.in_proj_z = linear(m + "in_proj_z", la.value_dim(), hidden);
      }
      if (config.linear_projections == kSeparate) {
        l.in_proj_b = linear(m + "in_proj_b", la.num_value_heads, hidden);
        l.in_proj_a = linear(m + "in_proj_a", la.num_value_heads, hidden);
      } else {
        const ops::LinearWeight ba = linear(m + "in_proj_ba", 2 * la.num_value_heads, hidden);
        l.in_proj_b = RegroupedRows(ba, per_group(2 * r, 0, r));
        l.in_proj_a = RegroupedRows(ba, per_group(2 * r, r, r));
      }
      l.out_proj = linear(m + "out_proj", hidden, la.value_dim());
      l.conv1d = ConvTaps(weights, m + "conv1d.weight", la);
      l.dt_bias = weights.Matrix(m + "dt_bias");
      l.a = weights.Matrix(m + la.ATensorName());
      l.output_norm = weights.Matrix(m + "norm.weight");
      layers_.push_back(l);
      continue;
    }
    if (names.fused_qkv) {  // q rows, k rows, v rows
      const ops::LinearWeight qkv = linear(p + "self_attn.qkv_proj", q_rows + 2 * kv_dim, hidden);
      l.q = qkv.RowRange(0, q_rows);
      l.k = qkv.RowRange(q_rows, q_rows + kv_dim);
      l.v = qkv.RowRange(q_rows + kv_dim, q_rows + 2 * kv_dim);
    } else {
      l.q = linear(p + "self_attn.q_proj", q_rows, hidden);
      l.k = linear(p + "self_attn.k_proj", kv_dim, hidden);
      l.v = linear(p + "self_attn.v_proj", kv_dim, hidden);
    }
    l.o = linear(p + "self_attn.o_proj", hidden, q_dim);
    l.q_bias = optional(p + "self_attn.q_proj.bias");
    l.k_bias = optional(p + "self_attn.k_proj.bias");
    l.v_bias = optional(p + "self_attn.v_proj.bias");
    l.o_bias = optional(p + "self_attn.o_proj.bias");
    if (config.qk_norm) {
      l.q_norm = weights.Matrix(p + "self_attn.q_norm.weight");
      l.k_norm = weights.Matrix(p + "self_attn.k_norm.weight");
    }
    layers_.push_back(l);
  }
}

MatView RuntimeModel::RegroupedRows(const MatView& fused,
                                    const std::vector<std::pair<int64_t, int64_t>>& ranges) {
  const size_t row_bytes = fused.RowBytes();
  std::vector<uint8_t>& storage = regrouped_.emplace_back();
  int64_t rows = 0;
  for (const auto& [begin, end] : ranges) {
    CHECK(0 <= begin && begin <= end && end <= fused.rows);
    for (int64_t row = begin; row < end; ++row, ++rows) {
      storage.insert(storage.end(), fused.Row(row), fused.Row(row) + row_bytes);
    }
  }
  return MatView{fused.type, rows, fused.cols, row_bytes, storage.data()};
}

ops::LinearWeight RuntimeModel::RegroupedRows(
    const ops::LinearWeight& fused, const std::vector<std::pair<int64_t, int64_t>>& ranges) {
  if (!fused.is_mlx()) return RegroupedRows(fused.dense(), ranges);
  quant::MlxQuantizedMatrix rows = fused.mlx();
  rows.packed = RegroupedRows(rows.packed, ranges);
  rows.scales = RegroupedRows(rows.scales, ranges);
  if (rows.biases.rows != 0) rows.biases = RegroupedRows(rows.biases, ranges);
  return rows;
}

std::map<std::string, std::string> RuntimeModel::MatMulKernels(int64_t rows) const {
  std::map<std::string, std::string> kernels;
  const auto add = [&](const ops::LinearWeight& w) {
    if (!w.empty()) kernels[w.TypeName()] = ops::MatMulKernelName(w, options_.compute, rows);
  };
  for (const LayerWeights& w : layers_) {
    for (const ops::LinearWeight* linear :
         {&w.q, &w.k, &w.v, &w.o, &w.gate, &w.up, &w.down, &w.in_proj_qkv, &w.in_proj_z,
          &w.in_proj_b, &w.in_proj_a, &w.out_proj, &w.router, &w.shared_expert.gate,
          &w.shared_expert.up, &w.shared_expert.down, &w.shared_expert_gate}) {
      add(*linear);
    }
    for (const MlpWeights& expert : w.experts) {
      for (const ops::LinearWeight* linear : {&expert.gate, &expert.up, &expert.down}) add(*linear);
    }
  }
  add(lm_head_);
  return kernels;
}

ModelCache RuntimeModel::MakeCache(int64_t reserve_positions) const {
  ModelCache cache;
  const int64_t kv_dim = static_cast<int64_t>(config_.num_kv_heads) * config_.head_dim;
  const LinearAttentionConfig& la = config_.linear_attention;
  for (int i = 0; i < config_.num_layers; ++i) {
    if (config_.IsLinearAttentionLayer(i)) {
      cache.AddLayer(std::make_unique<RecurrentState>(
          la.conv_dim(), la.conv_kernel, la.num_value_heads, la.key_head_dim, la.value_head_dim));
      continue;
    }
    cache.AddLayer(std::make_unique<FullAttentionKvCache>(
        kv_dim, config_.head_dim, options_.kv.ForLayer(i), reserve_positions,
        config_.SlidingWindowForLayer(i)));
  }
  return cache;
}

Tensor RuntimeModel::ForwardHidden(std::span<const int32_t> ids, ModelCache& cache,
                                   const LayerObserver& after_layer) const {
  CHECK(cache.num_layers() == config_.num_layers);
  const int64_t t = static_cast<int64_t>(ids.size());
  Tensor x = Tensor::F32(t, config_.hidden_size);  // [T, hidden] residual stream
  if (t == 0) return x;
  for (const int32_t id : ids) {
    if (id < 0 || id >= config_.vocab_size) {
      Fail("model", "token id {} is outside the vocabulary [0, {})", id, config_.vocab_size);
    }
  }
  if (options_.forward_chunk > 0 && t > options_.forward_chunk) {
    for (int64_t begin = 0; begin < t; begin += options_.forward_chunk) {
      const int64_t n = std::min(options_.forward_chunk, t - begin);
      const Tensor piece = ForwardHidden(
          ids.subspan(static_cast<size_t>(begin), static_cast<size_t>(n)), cache, after_layer);
      std::copy_n(piece.RowF32(0), n * config_.hidden_size, x.RowF32(begin));
    }
    return x;
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
  ops::GatherRows(embed_tokens_, ids, x.MutF32());
  if (embed_scale_ != 1.0f) {
    for (int64_t i = 0; i < t * config_.hidden_size; ++i) x.f32()[i] *= embed_scale_;
  }

  std::vector<int32_t> positions(static_cast<size_t>(t));
  for (int64_t i = 0; i < t; ++i) {
    positions[static_cast<size_t>(i)] = static_cast<int32_t>(cache.position() + i);
  }
  const BlockStyle block = FamilyOf(config_.arch).block;
  for (int layer = 0; layer < config_.num_layers; ++layer) {
    switch (block) {
      case BlockStyle::kLlama:
        LlamaLayer(layer, x.MutF32(), positions, cache);
        break;
      case BlockStyle::kGemma:
        GemmaLayer(layer, x.MutF32(), positions, cache);
        break;
      case BlockStyle::kHybrid:
        HybridLayer(layer, x.MutF32(), positions, cache);
        break;
    }
    if (after_layer) after_layer(layer, x.View());
  }
  cache.EndStep(t);  // may convert a quantized-KV cache (model/kv_cache.h)
  Norm(x.View(), final_norm_, x.MutF32());
  return x;
}

void RuntimeModel::LogitsFromHidden(const MatView& hidden, MutMatF32 logits) const {
  CHECK(hidden.cols == config_.hidden_size && logits.rows == hidden.rows &&
        logits.cols == config_.vocab_size);
  ops::MatMul(hidden, lm_head_, logits, options_.compute, pool_);
  if (const float cap = config_.final_logit_softcapping; cap > 0.0f) {
    for (int64_t r = 0; r < logits.rows; ++r) {
      ops::internal::SoftCapRow(logits.Row(r), logits.cols, 1.0f, cap);
    }
  }
}

Tensor RuntimeModel::LogitsFromHidden(const MatView& hidden) const {
  Tensor logits = Tensor::F32(hidden.rows, config_.vocab_size);  // [rows, vocab]
  LogitsFromHidden(hidden, logits.MutF32());
  return logits;
}

}  // namespace proctor
