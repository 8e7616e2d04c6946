// The blocks every family's layer is built from (runtime_model.h): norm, attention, gated MLP.
#include <algorithm>
#include <cmath>

#include "model/activation_buffers.h"
#include "model/runtime_model.h"
#include "ops/ops.h"
#include "util/error.h"

namespace proctor {

using namespace activations;  // NOLINT(google-build-using-namespace): the buffer names

void RuntimeModel::Norm(const MatView& x, const MatView& weight, MutMatF32 out) const {
  ops::RmsNorm(x, weight, config_.rms_norm_eps, config_.norm_adds_one, out,
               config_.norm_sums_like_ggml ? ops::RmsNormSum::kGgml : ops::RmsNormSum::kF32Lanes);
}

MutMatF32 RuntimeModel::Attention(int layer, const MatView& normed,
                                  std::span<const int32_t> positions, ModelCache& cache) const {
  const LayerWeights& w = layers_[static_cast<size_t>(layer)];
  const int64_t t = normed.rows;
  const int hq = config_.num_heads, hkv = config_.num_kv_heads, d = config_.head_dim;
  const ops::ComputeMode mode = options_.compute;

  const MutMatF32 q = Scratch(kQ, t, int64_t{hq} * d);   // [T, Hq*D]
  const MutMatF32 k = Scratch(kK, t, int64_t{hkv} * d);  // [T, Hkv*D]
  const MutMatF32 v = Scratch(kV, t, int64_t{hkv} * d);  // [T, Hkv*D]
  // With an output gate, q_proj gives per head D query values then D gate values.
  const MutMatF32 query_and_gate =
      Scratch(kQueryAndGate, t, config_.attention_output_gate ? int64_t{hq} * 2 * d : 0);
  if (config_.attention_output_gate) {
    ops::MatMul(normed, w.q, query_and_gate, mode, pool_);
    for (int64_t r = 0; r < t; ++r) {
      for (int h = 0; h < hq; ++h) {
        const float* src = query_and_gate.Row(r) + int64_t{h} * 2 * d;
        std::copy(src, src + d, q.Row(r) + int64_t{h} * d);
      }
    }
  } else {
    ops::MatMul(normed, w.q, q, mode, pool_);
  }
  ops::MatMul(normed, w.k, k, mode, pool_);
  ops::MatMul(normed, w.v, v, mode, pool_);
  if (w.q_bias.rows) ops::AddBias(q, w.q_bias);
  if (w.k_bias.rows) ops::AddBias(k, w.k_bias);
  if (w.v_bias.rows) ops::AddBias(v, w.v_bias);
  if (config_.qk_norm) {  // qwen3, gemma3: RMSNorm over each head, before the rotation
    const MutMatF32 qh = PerHead(q, d), kh = PerHead(k, d);
    Norm(qh.View(), w.q_norm, qh);
    Norm(kh.View(), w.k_norm, kh);
  }
  const int window = config_.SlidingWindowForLayer(layer);
  const RopeFrequencies& rope =
      &config_.RopeForLayer(layer) == &config_.rope ? rope_ : *sliding_rope_;
  ops::ApplyRope(q, hq, d, positions, rope.inv_freq, rope.attention_scaling, rope_style_);
  ops::ApplyRope(k, hkv, d, positions, rope.inv_freq, rope.attention_scaling, rope_style_);

  FullAttentionKvCache& kv = cache.Attention(layer);
  CHECK(kv.length() == positions.front());
  kv.Append(k.View(), v.View());

  const MutMatF32 attended = Scratch(kAttended, t, int64_t{hq} * d);  // [T, Hq*D]
  const ops::AttentionShape shape{.n_heads = hq,
                                  .n_kv_heads = hkv,
                                  .head_dim = d,
                                  .scale = config_.AttentionScale(),
                                  .sliding_window = window,
                                  .logit_softcap = config_.attn_logit_softcapping,
                                  .kv_first_position = kv.first_position()};
  ops::Attention(q.View(), kv.Keys(), kv.Values(), positions.front(), shape, attended, pool_);
  if (config_.attention_output_gate) {  // attended *= sigmoid(gate), in f32 as torch
    for (int64_t r = 0; r < t; ++r) {
      for (int h = 0; h < hq; ++h) {
        const float* gate = query_and_gate.Row(r) + int64_t{h} * 2 * d + d;
        float* out = attended.Row(r) + int64_t{h} * d;
        for (int i = 0; i < d; ++i) out[i] *= 1.0f / (1.0f + std::exp(-gate[i]));
      }
    }
  }

  const MutMatF32 projected = Scratch(kProjected, t, config_.hidden_size);  // [T, hidden]
  ops::MatMul(attended.View(), w.o, projected, mode, pool_);
  if (w.o_bias.rows) ops::AddBias(projected, w.o_bias);
  return projected;
}

MutMatF32 RuntimeModel::Mlp(int layer, const MatView& normed) const {
  if (config_.IsMoeLayer(layer)) return MixtureOfExperts(layer, normed);
  const LayerWeights& w = layers_[static_cast<size_t>(layer)];
  return GatedMlp({w.gate, w.up, w.down}, normed);
}

MutMatF32 RuntimeModel::GatedMlp(const MlpWeights& w, const MatView& normed) const {
  const int64_t t = normed.rows, ff = w.gate.rows();
  const ops::ComputeMode mode = options_.compute;
  const MutMatF32 gate = Scratch(kGate, t, ff);  // [T, ff]
  const MutMatF32 up = Scratch(kUp, t, ff);      // [T, ff]
  ops::MatMul(normed, w.gate, gate, mode, pool_);
  ops::MatMul(normed, w.up, up, mode, pool_);
  switch (config_.mlp_activation) {
    case MlpActivation::kSilu:
      ops::SiluMul(gate, up.View());
      break;
    case MlpActivation::kGeluTanh:
      ops::GeluTanhMul(gate, up.View());
      break;
  }
  const MutMatF32 down = Scratch(kDown, t, config_.hidden_size);  // [T, hidden]
  ops::MatMul(gate.View(), w.down, down, mode, pool_);
  return down;
}

}  // namespace proctor
