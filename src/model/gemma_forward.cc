// The Gemma family's decoder layer (gemma2, gemma3; see runtime_model.h). Norms on both sides of
// each block, and every RMSNorm multiplies by (1 + weight) in HF checkpoints:
//   x += rmsnorm(o_proj(attention(...)))       attention of n = rmsnorm(x): scores scaled by
//                                              query_pre_attn_scalar^-1/2, soft-capped (Gemma 2),
//                                              q/k norms (Gemma 3), sliding window on local
//                                              layers with their own rope (Gemma 3)
//   x += rmsnorm(down_proj(gelu_tanh(gate_proj(n)) * up_proj(n)))   with n = rmsnorm(x)
// The embedding is scaled by sqrt(hidden) and the final logits may be soft-capped
// (runtime_model.cc).
#include "model/activation_buffers.h"
#include "model/runtime_model.h"
#include "ops/ops.h"

namespace proctor {

using activations::kNormed;
using activations::Scratch;

void RuntimeModel::GemmaLayer(int layer, MutMatF32 x, std::span<const int32_t> positions,
                              ModelCache& cache) const {
  const LayerWeights& w = layers_[static_cast<size_t>(layer)];
  const MutMatF32 n = Scratch(kNormed, x.rows, config_.hidden_size);  // [T, hidden]

  Norm(x.View(), w.attention_norm, n);
  const MutMatF32 attended = Attention(layer, n.View(), positions, cache);
  Norm(attended.View(), w.attention_out_norm, attended);
  ops::AddInPlace(x, attended.View());

  Norm(x.View(), w.mlp_norm, n);
  const MutMatF32 mlp = Mlp(layer, n.View());
  Norm(mlp.View(), w.mlp_out_norm, mlp);
  ops::AddInPlace(x, mlp.View());
}

}  // namespace proctor
