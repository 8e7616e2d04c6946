// The hybrid decoder layer (qwen3_5_text; see runtime_model.h): Llama's shape with a mixer that
// is, per layer, a gated DeltaNet (linear attention with a recurrent state, gated_deltanet.cc)
// or gated full attention (q/k norms, partial rotary, the output times sigmoid(gate)); every
// RMSNorm multiplies by (1 + weight):
//   x += mixer(n)                                     with n = rmsnorm(x)
//   x += down_proj(silu(gate_proj(n)) * up_proj(n))  with n = rmsnorm(x)
#include "model/activation_buffers.h"
#include "model/runtime_model.h"
#include "ops/ops.h"

namespace proctor {

using activations::kNormed;
using activations::Scratch;

void RuntimeModel::HybridLayer(int layer, MutMatF32 x, std::span<const int32_t> positions,
                               ModelCache& cache) const {
  const LayerWeights& w = layers_[static_cast<size_t>(layer)];
  const MutMatF32 n = Scratch(kNormed, x.rows, config_.hidden_size);  // [T, hidden]

  Norm(x.View(), w.attention_norm, n);
  const MutMatF32 mixed = config_.IsLinearAttentionLayer(layer)
                              ? GatedDeltaNet(layer, n.View(), cache)
                              : Attention(layer, n.View(), positions, cache);
  ops::AddInPlace(x, mixed.View());

  Norm(x.View(), w.mlp_norm, n);
  ops::AddInPlace(x, Mlp(layer, n.View()).View());
}

}  // namespace proctor
