// The Llama family's decoder layer (llama, mistral, qwen2, qwen3; see runtime_model.h):
//   x += o_proj(attention(rope(q_norm?(q_proj(n))), rope(k_norm?(k_proj(n))), v_proj(n)))
//                                                   with n = rmsnorm(x)
//   x += down_proj(silu(gate_proj(n)) * up_proj(n))  with n = rmsnorm(x)
#include "model/activation_buffers.h"
#include "model/runtime_model.h"
#include "ops/ops.h"

namespace proctor {

using activations::kNormed;
using activations::Scratch;

void RuntimeModel::LlamaLayer(int layer, MutMatF32 x, std::span<const int32_t> positions,
                              ModelCache& cache) const {
  const LayerWeights& w = layers_[static_cast<size_t>(layer)];
  const MutMatF32 n = Scratch(kNormed, x.rows, config_.hidden_size);  // [T, hidden]

  Norm(x.View(), w.attention_norm, n);
  ops::AddInPlace(x, Attention(layer, n.View(), positions, cache).View());

  Norm(x.View(), w.mlp_norm, n);
  ops::AddInPlace(x, Mlp(layer, n.View()).View());
}

}  // namespace proctor
