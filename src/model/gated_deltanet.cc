// The gated DeltaNet mixer of hybrid models (runtime_model.h), as transformers' Qwen3.5 computes
// it, for T new tokens of one sequence:
//   mixed = silu(causal_depthwise_conv(in_proj_qkv(n)))    over the layer's last K-1 inputs
//   q, k, v = split(mixed)          q, k: [key heads, dk]; v: [value heads, dv]
//   q, k = l2norm(q), l2norm(k); q /= sqrt(dk)
//   beta = sigmoid(in_proj_b(n));   g = -exp(A_log) * softplus(in_proj_a(n) + dt_bias)
//   per value head h (its key head h / (value heads / key heads),
//   LinearAttentionConfig::KeyHeadOf), per token, state S [dk, dv]:
//     S *= exp(g);  delta = (v - S^T k) * beta;  S += k delta^T;  o = S^T q
//   out = out_proj(rmsnorm(o) * weight * silu(in_proj_z(n)))   per value head
// The delta rule runs in transformers' chunked form for a prefill of T >= 2 tokens and token by
// token for decode, as transformers does (ops/delta_rule.h; the forms agree to f32 rounding).
#include <algorithm>
#include <cmath>
#include <vector>

#include "model/activation_buffers.h"
#include "model/runtime_model.h"
#include "ops/delta_rule.h"
#include "ops/ops.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace proctor {
namespace {

using namespace activations;  // NOLINT(google-build-using-namespace): the buffer names

float Silu(float x) { return x / (1.0f + std::exp(-x)); }

// torch.nn.functional.softplus (beta 1, threshold 20).
float Softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

// x * rsqrt(sum(x^2) + 1e-6), in place (transformers' l2norm).
void L2Normalize(float* x, int64_t n) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += x[i] * x[i];
  const float inv = 1.0f / std::sqrt(sum + 1e-6f);
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

// The causal depthwise conv over time and its SiLU, in place on x [T, C]: output t of channel c
// is sum_j taps[c][j] * input[t - (K-1) + j][c], inputs before the chunk coming from `state`
// ([K-1, C], the previous inputs in time order), which then holds this chunk's last K-1 inputs.
// Threads take ranges of channels; each goes from the last token back, so the inputs a token
// reads are not yet overwritten.
void CausalConvSilu(MutMatF32 x, const MatView& taps, Tensor& state, ThreadPool& pool) {
  const int64_t t_count = x.rows, channels = x.cols, k = taps.cols;
  const int64_t history = k - 1;
  // The next state: the last K-1 inputs of the state followed by the chunk.
  std::vector<float> next_state(static_cast<size_t>(history * channels));
  for (int64_t r = 0; r < history; ++r) {
    const int64_t from = t_count - history + r;  // a row of the chunk, or of the state if < 0
    const float* src = from >= 0 ? x.Row(from) : state.f32() + (from + history) * channels;
    std::copy(src, src + channels, next_state.begin() + r * channels);
  }
  pool.ParallelFor(static_cast<size_t>(channels), [&](size_t begin, size_t end, int) {
    const int64_t c0 = static_cast<int64_t>(begin), n = static_cast<int64_t>(end - begin);
    std::vector<float> w(static_cast<size_t>(k * n)), row(static_cast<size_t>(k));  // w[j][c]
    for (int64_t c = 0; c < n; ++c) {
      ops::DecodeRowSegment(taps, c0 + c, 0, k, row.data());
      for (int64_t j = 0; j < k; ++j) w[j * n + c] = row[j];
    }
    std::vector<float> sum(static_cast<size_t>(n));
    for (int64_t t = t_count - 1; t >= 0; --t) {
      std::fill(sum.begin(), sum.end(), 0.0f);
      for (int64_t j = 0; j < k; ++j) {
        const int64_t from = t - history + j;
        const float* in =
            (from >= 0 ? x.Row(from) : state.f32() + (from + history) * channels) + c0;
        const float* wj = w.data() + j * n;
        for (int64_t c = 0; c < n; ++c) sum[c] += wj[c] * in[c];
      }
      float* out = x.Row(t) + c0;
      for (int64_t c = 0; c < n; ++c) out[c] = Silu(sum[c]);
    }
  });
  std::copy(next_state.begin(), next_state.end(), state.f32());
}

}  // namespace

MutMatF32 RuntimeModel::GatedDeltaNet(int layer, const MatView& normed, ModelCache& cache) const {
  const LayerWeights& w = layers_[static_cast<size_t>(layer)];
  const LinearAttentionConfig& la = config_.linear_attention;
  const int64_t t_count = normed.rows;
  const int64_t nk = la.num_key_heads, nv = la.num_value_heads;
  const int64_t dk = la.key_head_dim, dv = la.value_head_dim;
  const int64_t key_dim = la.key_dim(), value_dim = la.value_dim();
  const ops::ComputeMode mode = options_.compute;
  RecurrentState& state = cache.Recurrent(layer);

  const MutMatF32 mixed = Scratch(kMixed, t_count, la.conv_dim());  // [T, 2*key_dim + value_dim]
  const MutMatF32 z = Scratch(kMixerGate, t_count, value_dim);      // [T, value_dim]
  const MutMatF32 beta = Scratch(kBeta, t_count, nv);               // [T, value heads]
  const MutMatF32 g = Scratch(kDecay, t_count, nv);                 // [T, value heads]
  ops::MatMul(normed, w.in_proj_qkv, mixed, mode, pool_);
  ops::MatMul(normed, w.in_proj_z, z, mode, pool_);
  ops::MatMul(normed, w.in_proj_b, beta, mode, pool_);
  ops::MatMul(normed, w.in_proj_a, g, mode, pool_);
  CausalConvSilu(mixed, w.conv1d, state.conv_state(), pool_);

  // beta = sigmoid(b), g = -exp(A_log) * softplus(a + dt_bias), per token and value head
  // (llama.cpp's layout stores -exp(A_log) itself).
  std::vector<float> minus_exp_a(static_cast<size_t>(nv)), dt_bias(static_cast<size_t>(nv));
  ops::DecodeRowSegment(w.a, 0, 0, nv, minus_exp_a.data());
  if (la.storage != LinearAttentionConfig::Storage::kLlamaCpp) {
    for (float& a : minus_exp_a) a = -std::exp(a);
  }
  ops::DecodeRowSegment(w.dt_bias, 0, 0, nv, dt_bias.data());
  for (int64_t t = 0; t < t_count; ++t) {
    for (int64_t h = 0; h < nv; ++h) {
      beta.Row(t)[h] = 1.0f / (1.0f + std::exp(-beta.Row(t)[h]));
      g.Row(t)[h] = minus_exp_a[h] * Softplus(g.Row(t)[h] + dt_bias[h]);
    }
  }
  // q, k: unit length, q also divided by sqrt(dk) (transformers divides by the python float).
  const float q_divisor = static_cast<float>(std::sqrt(static_cast<double>(dk)));
  for (int64_t t = 0; t < t_count; ++t) {
    for (int64_t head = 0; head < 2 * nk; ++head) L2Normalize(mixed.Row(t) + head * dk, dk);
    for (int64_t i = 0; i < key_dim; ++i) mixed.Row(t)[i] /= q_divisor;
  }

  // The delta rule (ops/delta_rule.h), one value head per task: chunked for a prefill, recurrent
  // for one token; o overwrites v in `mixed`, then the head's gated RMSNorm:
  // rmsnorm(o) * weight * silu(z), in f32.
  std::vector<float> norm_weight(static_cast<size_t>(dv));
  ops::DecodeRowSegment(w.output_norm, 0, 0, dv, norm_weight.data());
  CHECK(g.stride == beta.stride);  // one gate stride for both
  pool_.ParallelFor(static_cast<size_t>(nv), [&](size_t begin, size_t end, int) {
    ops::DeltaRuleScratch scratch;
    for (size_t item = begin; item < end; ++item) {
      const int64_t h = static_cast<int64_t>(item), kh = la.KeyHeadOf(h);
      ops::DeltaRuleHead head;
      head.tokens = t_count;
      head.dk = dk;
      head.dv = dv;
      head.q = mixed.Row(0) + kh * dk;
      head.k = mixed.Row(0) + key_dim + kh * dk;
      head.qk_stride = mixed.stride;
      float* v = mixed.Row(0) + 2 * key_dim + h * dv;
      head.v = v;
      head.v_stride = mixed.stride;
      head.beta = beta.Row(0) + h;
      head.g = g.Row(0) + h;
      head.gate_stride = beta.stride;
      float* s = state.ssm_state().f32() + h * dk * dv;  // [dk, dv]
      if (t_count == 1) {
        ops::DeltaRuleRecurrent(head, s, v, mixed.stride);
      } else {
        ops::DeltaRuleChunked(head, s, v, mixed.stride, scratch);
      }
      for (int64_t t = 0; t < t_count; ++t) {
        float* o = v + t * mixed.stride;
        float sum = 0.0f;
        for (int64_t j = 0; j < dv; ++j) sum += o[j] * o[j];
        const float inv = 1.0f / std::sqrt(sum / static_cast<float>(dv) + config_.rms_norm_eps);
        const float* gate = z.Row(t) + h * dv;
        for (int64_t j = 0; j < dv; ++j) o[j] = norm_weight[j] * (o[j] * inv) * Silu(gate[j]);
      }
    }
  });

  const MutMatF32 projected = Scratch(kProjected, t_count, config_.hidden_size);  // [T, hidden]
  const MatView o{DType::kF32, t_count, value_dim, mixed.stride * sizeof(float),
                  reinterpret_cast<const uint8_t*>(mixed.data + 2 * key_dim)};
  ops::MatMul(o, w.out_proj, projected, mode, pool_);
  return projected;
}

}  // namespace proctor
