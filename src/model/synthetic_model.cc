// Random-weight models with real shapes (see synthetic_model.h).
#include "model/synthetic_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "model/runtime_model.h"
#include "quant/ggml_blocks.h"

#include "util/error.h"
#include "util/half.h"
#include "util/seeded_random.h"
#include "util/thread_pool.h"

namespace proctor {
namespace {

// Where a block type keeps its fp16 scale `d` and, for types with one, its fp16 minimum scale
// (`m` of Q4_1/Q5_1, `dmin` of the K-quants); -1 when absent.
struct ScaleFields {
  int d;
  int min;
};

ScaleFields ScaleFieldsOf(DType type) {
  switch (type) {
    case DType::kQ4_1:
    case DType::kQ5_1:
    case DType::kQ4_K:
    case DType::kQ5_K:
      return {0, 2};
    case DType::kQ2_K:
      return {80, 82};
    case DType::kQ3_K:
      return {108, -1};
    case DType::kQ6_K:
      return {208, -1};
    default:  // Q8_0, Q4_0, Q5_0, IQ4_NL
      return {0, -1};
  }
}

void StoreHalf(uint8_t* p, float v) {
  const uint16_t h = F32ToF16(v);
  std::memcpy(p, &h, 2);
}

// Fills one row of GGUF blocks: random codes and sub-block scales, then the fp16 scale fields
// chosen so values lie within about [-amplitude, amplitude] and (types with a minimum) centre on
// zero. Every byte pattern of codes is a valid block, so the blocks are valid by construction.
void RandomBlocks(DType type, uint8_t* row, size_t row_bytes, float amplitude, uint64_t& state) {
  const quant::BlockTraits* traits = quant::FindBlockTraits(type);
  CHECK_MSG(traits != nullptr, "no block traits for {}", Name(type));
  const ScaleFields fields = ScaleFieldsOf(type);
  const size_t block_bytes = static_cast<size_t>(traits->block_bytes);
  std::vector<float> a(static_cast<size_t>(traits->block_elems));  // values with d=1, min=0
  std::vector<float> b(static_cast<size_t>(traits->block_elems));  // values with d=0, min=1
  for (size_t offset = 0; offset < row_bytes; offset += block_bytes) {
    uint8_t* block = row + offset;
    for (size_t i = 0; i < block_bytes; i += 8) {
      const uint64_t bits = SplitMix64(state);
      std::memcpy(block + i, &bits, std::min<size_t>(8, block_bytes - i));
    }
    StoreHalf(block + fields.d, 1.0f);
    if (fields.min >= 0) StoreHalf(block + fields.min, 0.0f);
    traits->dequantize_ref(block, 1, a.data());
    float max_abs = 0.0f, mean_a = 0.0f;
    for (const float v : a) max_abs = std::max(max_abs, std::fabs(v)), mean_a += v;
    const float d = max_abs > 0.0f ? amplitude / max_abs : 1.0f;
    StoreHalf(block + fields.d, d);
    if (fields.min < 0) continue;
    StoreHalf(block + fields.d, 0.0f);
    StoreHalf(block + fields.min, 1.0f);
    traits->dequantize_ref(block, 1, b.data());
    float mean_b = 0.0f;
    for (const float v : b) mean_b += v;
    // Q4_1 / Q5_1 add m; the K-quants subtract dmin * min: pick the sign that centres the block.
    const float min_scale = mean_b != 0.0f ? -d * mean_a / mean_b : 0.0f;
    StoreHalf(block + fields.d, d);
    StoreHalf(block + fields.min, min_scale);
  }
}

// rows x cols of `type`; values center + uniform(-amplitude, amplitude).
Tensor RandomTensor(std::string_view name, DType type, int64_t rows, int64_t cols, float center,
                    float amplitude, uint64_t seed) {
  Tensor t(type, rows, cols);
  const size_t row_bytes = BytesFor(type, static_cast<uint64_t>(cols));
  const uint64_t base = HashName(name, seed);
  ThreadPool::Global().ParallelFor(static_cast<size_t>(rows), [&](size_t begin, size_t end, int) {
    for (size_t r = begin; r < end; ++r) {
      uint64_t state = base + r * 0x632BE59BD9B4E019ull;
      uint8_t* row = t.bytes() + r * row_bytes;
      switch (type) {
        case DType::kF32: {
          auto* out = reinterpret_cast<float*>(row);
          for (int64_t i = 0; i < cols; ++i) out[i] = center + amplitude * SplitMix64Uniform(state);
          break;
        }
        case DType::kBF16:
        case DType::kF16: {
          auto* out = reinterpret_cast<uint16_t*>(row);
          for (int64_t i = 0; i < cols; ++i) {
            const float v = center + amplitude * SplitMix64Uniform(state);
            out[i] = type == DType::kBF16 ? F32ToBF16(v) : F32ToF16(v);
          }
          break;
        }
        default:  // GGUF block types
          RandomBlocks(type, row, row_bytes, amplitude, state);
          break;
      }
    }
  });
  return t;
}

}  // namespace

std::vector<std::string> SyntheticModelNames() {
  return {"qwen3-0.6b",   "llama-3.2-1b",   "tinyllama-1.1b", "qwen2.5-0.5b", "gemma-3-1b",
          "qwen3.5-0.8b", "mixtral-8x2-1b", "tiny",           "tiny-moe"};
}

ModelConfig SyntheticConfig(std::string_view name) {
  ModelConfig c;
  if (name == "qwen3-0.6b") {
    c = FamilyConfig(ModelArch::kQwen3);
    c.hidden_size = 1024, c.num_layers = 28, c.num_heads = 16, c.num_kv_heads = 8;
    c.head_dim = 128, c.intermediate_size = 3072, c.vocab_size = 151936;
    c.max_position_embeddings = 40960, c.rms_norm_eps = 1e-6f;
    c.tie_word_embeddings = true;
    c.rope.theta = 1000000.0;
    c.eos_token_ids = {151645, 151643};
  } else if (name == "llama-3.2-1b") {
    c = FamilyConfig(ModelArch::kLlama);
    c.rms_norm_eps = 1e-5f;
    c.hidden_size = 2048, c.num_layers = 16, c.num_heads = 32, c.num_kv_heads = 8;
    c.head_dim = 64, c.intermediate_size = 8192, c.vocab_size = 128256;
    c.max_position_embeddings = 131072, c.tie_word_embeddings = true;
    c.rope.theta = 500000.0;
    c.rope.type = RopeType::kLlama3;
    c.rope.factor = 32.0, c.rope.low_freq_factor = 1.0, c.rope.high_freq_factor = 4.0;
    c.rope.original_max_position_embeddings = 8192;
    c.bos_token_id = 128000, c.eos_token_ids = {128001, 128008, 128009};
  } else if (name == "tinyllama-1.1b") {
    c = FamilyConfig(ModelArch::kLlama);
    c.rms_norm_eps = 1e-5f;
    c.hidden_size = 2048, c.num_layers = 22, c.num_heads = 32, c.num_kv_heads = 4;
    c.head_dim = 64, c.intermediate_size = 5632, c.vocab_size = 32000;
    c.max_position_embeddings = 2048;
    c.bos_token_id = 1, c.eos_token_ids = {2};
  } else if (name == "qwen2.5-0.5b") {
    c = FamilyConfig(ModelArch::kQwen2);  // q/k/v biases: the family always has them
    c.hidden_size = 896, c.num_layers = 24, c.num_heads = 14, c.num_kv_heads = 2;
    c.head_dim = 64, c.intermediate_size = 4864, c.vocab_size = 151936;
    c.max_position_embeddings = 32768, c.rms_norm_eps = 1e-6f;
    c.tie_word_embeddings = true;
    c.rope.theta = 1000000.0;
    c.eos_token_ids = {151645, 151643};
  } else if (name == "gemma-3-1b") {
    // google/gemma-3-1b-pt's config.json: 5 sliding layers (window 512, local rope 10000) to 1
    // global (rope 1e6), q/k norms, query_pre_attn_scalar 256, no soft-caps.
    c = FamilyConfig(ModelArch::kGemma3);
    c.hidden_size = 1152, c.num_layers = 26, c.num_heads = 4, c.num_kv_heads = 1;
    c.head_dim = 256, c.intermediate_size = 6912, c.vocab_size = 262144;
    c.max_position_embeddings = 32768, c.rms_norm_eps = 1e-6f;
    c.rope.theta = 1000000.0;
    c.sliding_rope = RopeParameters();
    c.sliding_rope->theta = 10000.0;
    c.sliding_window = 512;
    for (int layer = 0; layer < c.num_layers; ++layer) {
      c.layer_uses_sliding_window.push_back((layer + 1) % 6 != 0);
    }
    c.bos_token_id = 2, c.eos_token_ids = {1, 106};
  } else if (name == "mixtral-8x2-1b") {
    // A small mixture of experts with Mixtral's block (no released model has this shape): 16
    // layers of 8 experts (SwiGLU, 2816 wide), 2 routed per token, TinyLlama's attention widths
    // halved; 1.2B parameters, 0.38B of them read per token.
    c = FamilyConfig(ModelArch::kMixtral);
    c.rms_norm_eps = 1e-5f;
    c.hidden_size = 1024, c.num_layers = 16, c.num_heads = 16, c.num_kv_heads = 4;
    c.head_dim = 64, c.intermediate_size = 2816, c.vocab_size = 32000;
    c.max_position_embeddings = 32768;
    c.rope.theta = 1000000.0;
    c.moe = {.num_experts = 8, .experts_per_token = 2, .expert_intermediate_size = 2816};
    c.layer_uses_moe.assign(static_cast<size_t>(c.num_layers), true);
    c.bos_token_id = 1, c.eos_token_ids = {2};
  } else if (name == "qwen3.5-0.8b") {
    // Qwen3.5-0.8B's outline (24 layers, hidden 1024, 8/2 heads of 256, vocab 248320, tied head,
    // every 4th layer full attention with a quarter of each head rotated, the other three gated
    // DeltaNet); the DeltaNet and MLP widths are this preset's (16 key and 16 value heads of 128,
    // conv 4, ff 3584).
    c = FamilyConfig(ModelArch::kQwen35);
    c.rms_norm_eps = 1e-6f;
    c.hidden_size = 1024, c.num_layers = 24, c.num_heads = 8, c.num_kv_heads = 2;
    c.head_dim = 256, c.intermediate_size = 3584, c.vocab_size = 248320;
    c.max_position_embeddings = 262144, c.tie_word_embeddings = true;
    c.rope.theta = 10000000.0;
    c.rope.partial_rotary_factor = 0.25;
    c.attention_output_gate = true;
    c.norm_adds_one = true;
    c.linear_attention = {.num_key_heads = 16,
                          .num_value_heads = 16,
                          .key_head_dim = 128,
                          .value_head_dim = 128,
                          .conv_kernel = 4};
    for (int layer = 0; layer < c.num_layers; ++layer) {
      c.layer_uses_linear_attention.push_back((layer + 1) % 4 != 0);
    }
    c.eos_token_ids = {248044};
  } else if (name == "tiny") {
    c = FamilyConfig(ModelArch::kQwen3);
    c.rms_norm_eps = 1e-5f;
    c.hidden_size = 64, c.num_layers = 4, c.num_heads = 4, c.num_kv_heads = 2;
    c.head_dim = 32, c.intermediate_size = 128, c.vocab_size = 512;
    c.max_position_embeddings = 4096;
  } else if (name == "tiny-moe") {  // tiny's sizes with Mixtral's 8 experts, 2 per token
    c = FamilyConfig(ModelArch::kMixtral);
    c.rms_norm_eps = 1e-5f;
    c.hidden_size = 64, c.num_layers = 2, c.num_heads = 4, c.num_kv_heads = 2;
    c.head_dim = 16, c.intermediate_size = 128, c.vocab_size = 512;
    c.max_position_embeddings = 4096;
    c.moe = {.num_experts = 8, .experts_per_token = 2, .expert_intermediate_size = 128};
    c.layer_uses_moe.assign(static_cast<size_t>(c.num_layers), true);
  } else {
    Fail("model", "unknown synthetic model '{}' (known: {})", name,
         fmt::join(SyntheticModelNames(), ", "));
  }
  c.rotary_dim = static_cast<int>(c.head_dim * c.rope.partial_rotary_factor);
  c.stored_dtype = "synthetic";
  return c;
}

SyntheticModel BuildSyntheticModel(const ModelConfig& config, DType dtype, uint64_t seed) {
  if (dtype != DType::kF32 && dtype != DType::kF16 && dtype != DType::kBF16 &&
      quant::FindBlockTraits(dtype) == nullptr) {
    Fail("model",
         "synthetic weights can be f32, f16, bf16 or a GGUF block type (q8_0, q4_0, q4_1, q5_0, "
         "q5_1, q2_k, q3_k, q4_k, q5_k, q6_k); asked for {}",
         Name(dtype));
  }
  SyntheticModel m;
  m.config = config;
  m.config.stored_dtype = std::string(Name(dtype));
  m.weights.set_origin(fmt::format("synthetic:{}", config.model_type));
  const bool quantized = !Info(dtype).is_float;
  const DType norm_type = quantized ? DType::kF32 : dtype;
  // Block types need rows that are whole blocks; otherwise fall back to f16 for that matrix.
  auto matrix = [&](const std::string& name, int64_t out, int64_t in, float amplitude) {
    const DType type = FitsBlocks(dtype, static_cast<uint64_t>(in)) ? dtype : DType::kF16;
    m.weights.AddOwned(name, RandomTensor(name, type, out, in, 0.0f, amplitude, seed));
  };
  auto kept = [&](const std::string& name, int64_t rows, int64_t cols, float center,
                  float amplitude, const std::vector<int64_t>& shape) {
    m.weights.AddOwned(name, RandomTensor(name, norm_type, rows, cols, center, amplitude, seed),
                       shape);
  };
  ForEachSyntheticTensor(config, {.matrix = matrix, .kept = kept});
  return m;
}

void ForEachSyntheticTensor(const ModelConfig& config, const SyntheticTensorSink& sink) {
  auto vector = [&](const std::string& name, int64_t n, float center, float amplitude) {
    sink.kept(name, 1, n, center, amplitude, {n});
  };
  const int64_t h = config.hidden_size, d = config.head_dim;
  const int64_t q_dim = int64_t{config.num_heads} * d, kv_dim = int64_t{config.num_kv_heads} * d;
  const float sqrt3 = std::sqrt(3.0f);
  auto amp = [&](int64_t fan_in) { return sqrt3 / std::sqrt(static_cast<float>(fan_in)); };

  sink.matrix("model.embed_tokens.weight", config.vocab_size, h, sqrt3);
  if (!config.tie_word_embeddings) sink.matrix("lm_head.weight", config.vocab_size, h, amp(h));
  // Norm gains near 1: weights near 1, or near 0 where the norm multiplies by 1 + weight.
  const float gain = config.norm_adds_one ? 0.0f : 1.0f;
  const LayerNormNames norms = NormNamesOf(FamilyOf(config.arch).block);
  vector("model.norm.weight", h, gain, 0.1f);
  for (int i = 0; i < config.num_layers; ++i) {
    const std::string p = fmt::format("model.layers.{}.", i);
    for (std::string_view norm : {norms.attention, norms.attention_out, norms.mlp, norms.mlp_out}) {
      if (!norm.empty()) vector(fmt::format("{}{}.weight", p, norm), h, gain, 0.1f);
    }
    if (config.IsLinearAttentionLayer(i)) {  // a gated DeltaNet in place of attention
      const LinearAttentionConfig& la = config.linear_attention;
      const std::string mixer = p + "linear_attn.";
      const int64_t nv = la.num_value_heads;
      sink.matrix(mixer + "in_proj_qkv.weight", la.conv_dim(), h, amp(h));
      sink.matrix(mixer + "in_proj_z.weight", la.value_dim(), h, amp(h));
      sink.matrix(mixer + "in_proj_b.weight", nv, h, amp(h));
      sink.matrix(mixer + "in_proj_a.weight", nv, h, amp(h));
      sink.matrix(mixer + "out_proj.weight", h, la.value_dim(), amp(la.value_dim()));
      sink.kept(mixer + "conv1d.weight", la.conv_dim(), la.conv_kernel, 0.0f, amp(la.conv_kernel),
                {la.conv_dim(), 1, la.conv_kernel});
      vector(mixer + "dt_bias", nv, 0.0f, 0.5f);
      vector(mixer + "A_log", nv, 1.0f, 1.0f);  // decay rates exp(A_log) from 1 to e^2
      vector(mixer + "norm.weight", la.value_head_dim, 1.0f, 0.1f);  // the gated norm: plain gain
    } else {
      // With an output gate, q_proj yields a gate row per query row.
      const int64_t q_rows = config.attention_output_gate ? 2 * q_dim : q_dim;
      sink.matrix(p + "self_attn.q_proj.weight", q_rows, h, amp(h));
      sink.matrix(p + "self_attn.k_proj.weight", kv_dim, h, amp(h));
      sink.matrix(p + "self_attn.v_proj.weight", kv_dim, h, amp(h));
      sink.matrix(p + "self_attn.o_proj.weight", h, q_dim, amp(q_dim));
    }
    if (config.attention_bias) {
      vector(p + "self_attn.q_proj.bias", q_dim, 0.0f, 0.1f);
      vector(p + "self_attn.k_proj.bias", kv_dim, 0.0f, 0.1f);
      vector(p + "self_attn.v_proj.bias", kv_dim, 0.0f, 0.1f);
    }
    if (config.qk_norm && !config.IsLinearAttentionLayer(i)) {
      vector(p + "self_attn.q_norm.weight", d, gain, 0.1f);
      vector(p + "self_attn.k_norm.weight", d, gain, 0.1f);
    }
    if (!config.IsMoeLayer(i)) {
      sink.matrix(p + "mlp.gate_proj.weight", config.intermediate_size, h, amp(h));
      sink.matrix(p + "mlp.up_proj.weight", config.intermediate_size, h, amp(h));
      sink.matrix(p + "mlp.down_proj.weight", h, config.intermediate_size,
                  amp(config.intermediate_size));
      continue;
    }
    // A mixture of experts under the family's names (the router full precision).
    const LayerTensorNames& names = FamilyOf(config.arch).tensors;
    const int64_t ff = config.moe.expert_intermediate_size;
    const std::string moe = fmt::format("{}{}.", p, names.moe);
    sink.kept(moe + std::string(names.router) + ".weight", config.moe.num_experts, h, 0.0f, amp(h),
              {config.moe.num_experts, h});
    for (int e = 0; e < config.moe.num_experts; ++e) {
      const std::string expert = fmt::format("{}experts.{}.", moe, e);
      sink.matrix(expert + std::string(names.expert_gate) + ".weight", ff, h, amp(h));
      sink.matrix(expert + std::string(names.expert_up) + ".weight", ff, h, amp(h));
      sink.matrix(expert + std::string(names.expert_down) + ".weight", h, ff, amp(ff));
    }
  }
}

}  // namespace proctor
