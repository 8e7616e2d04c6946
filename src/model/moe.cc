// The mixture-of-experts MLP (Qwen3-Next, Qwen3-MoE; runtime_model.h), as transformers computes
// it for T tokens:
//   p = softmax(router(n))                       in f32, over the experts
//   top = the experts_per_token largest p        (renormalised to sum 1 when norm_topk_prob)
//   out = sum over experts e, ascending, of sum over the tokens that chose e of p_e * expert_e(n)
//   out += sigmoid(shared_expert_gate(n)) * shared_expert(n)      (Qwen3-Next only)
// Each expert runs once on the rows routed to it (only the selected experts' weights are read).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "model/activation_buffers.h"
#include "model/runtime_model.h"
#include "ops/ops.h"

namespace proctor {
namespace {

using namespace activations;  // NOLINT(google-build-using-namespace): the buffer names

// The experts a token is routed to, largest probability first (ties: lower index first), and
// their weights.
struct Route {
  std::vector<int> experts;
  std::vector<float> weights;
};

// torch.softmax (max subtracted, f32), torch.topk, then the optional renormalisation.
Route RouteToken(const float* logits, int n_experts, int top_k, bool renormalise) {
  std::vector<float> p(logits, logits + n_experts);
  const float max = *std::max_element(p.begin(), p.end());
  float sum = 0.0f;
  for (float& v : p) sum += (v = std::exp(v - max));
  for (float& v : p) v /= sum;
  Route route;
  route.experts.resize(static_cast<size_t>(n_experts));
  std::iota(route.experts.begin(), route.experts.end(), 0);
  std::partial_sort(route.experts.begin(), route.experts.begin() + top_k, route.experts.end(),
                    [&](int a, int b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
  route.experts.resize(static_cast<size_t>(top_k));
  float top_sum = 0.0f;
  for (const int e : route.experts) {
    route.weights.push_back(p[e]);
    top_sum += p[e];
  }
  if (renormalise) {
    for (float& w : route.weights) w /= top_sum;
  }
  return route;
}

}  // namespace

uint64_t RuntimeModel::MlpBytes(const MlpWeights& mlp) {
  return mlp.gate.StoredBytes() + mlp.up.StoredBytes() + mlp.down.StoredBytes();
}

RuntimeModel::ExpertBytes RuntimeModel::ExpertWeightBytes() const {
  ExpertBytes bytes;
  for (const LayerWeights& w : layers_) {
    if (w.experts.empty()) continue;
    for (const MlpWeights& expert : w.experts) bytes.all += MlpBytes(expert);
    // Every expert of a layer has the same shapes and type: k of them per token.
    bytes.per_token += MlpBytes(w.experts.front()) * config_.moe.experts_per_token;
    if (!w.shared_expert_gate.empty()) {
      bytes.all += MlpBytes(w.shared_expert);
      bytes.per_token += MlpBytes(w.shared_expert);
    }
  }
  return bytes;
}

MutMatF32 RuntimeModel::MixtureOfExperts(int layer, const MatView& normed) const {
  const LayerWeights& w = layers_[static_cast<size_t>(layer)];
  const MoeConfig& moe = config_.moe;
  const int64_t t_count = normed.rows, hidden = config_.hidden_size;
  const ops::ComputeMode mode = options_.compute;

  const MutMatF32 logits = Scratch(kRouterLogits, t_count, moe.num_experts);
  ops::MatMul(normed, w.router, logits, mode, pool_);
  // Each expert's tokens, in token order, with their routing weights: one pass over the routes.
  struct Assignment {
    int64_t token;
    float weight;
  };
  std::vector<std::vector<Assignment>> routed(static_cast<size_t>(moe.num_experts));
  for (int64_t t = 0; t < t_count; ++t) {
    const Route route =
        RouteToken(logits.Row(t), moe.num_experts, moe.experts_per_token, moe.norm_topk_prob);
    for (size_t slot = 0; slot < route.experts.size(); ++slot) {
      routed[static_cast<size_t>(route.experts[slot])].push_back({t, route.weights[slot]});
    }
  }

  const MutMatF32 out = Scratch(kExpertsOut, t_count, hidden);  // [T, hidden]
  for (int64_t t = 0; t < t_count; ++t) std::fill(out.Row(t), out.Row(t) + hidden, 0.0f);
  for (int e = 0; e < moe.num_experts; ++e) {
    const std::vector<Assignment>& assigned = routed[static_cast<size_t>(e)];
    if (assigned.empty()) continue;
    const int64_t n = static_cast<int64_t>(assigned.size());
    const MutMatF32 input = Scratch(kExpertInput, n, hidden);
    for (int64_t i = 0; i < n; ++i) {
      const float* row = normed.RowAs<float>(assigned[i].token);
      std::copy(row, row + hidden, input.Row(i));
    }
    const MlpWeights& expert = w.experts[static_cast<size_t>(e)];
    expert_bytes_read_.fetch_add(MlpBytes(expert), std::memory_order_relaxed);
    const MutMatF32 expert_out = GatedMlp(expert, input.View());
    for (int64_t i = 0; i < n; ++i) {
      float* row = out.Row(assigned[i].token);
      for (int64_t j = 0; j < hidden; ++j) row[j] += expert_out.Row(i)[j] * assigned[i].weight;
    }
  }

  // The shared expert (Qwen3-Next), gated per token by sigmoid(shared_expert_gate(n)).
  if (w.shared_expert_gate.empty()) return out;
  const MutMatF32 gate = Scratch(kRouterLogits, t_count, 1);
  ops::MatMul(normed, w.shared_expert_gate, gate, mode, pool_);
  expert_bytes_read_.fetch_add(MlpBytes(w.shared_expert), std::memory_order_relaxed);
  const MutMatF32 shared = GatedMlp(w.shared_expert, normed);
  for (int64_t t = 0; t < t_count; ++t) {
    const float scale = 1.0f / (1.0f + std::exp(-gate.Row(t)[0]));
    for (int64_t j = 0; j < hidden; ++j) out.Row(t)[j] += scale * shared.Row(t)[j];
  }
  return out;
}

}  // namespace proctor
