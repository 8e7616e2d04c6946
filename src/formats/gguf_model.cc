#include "formats/gguf_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <map>
#include <utility>

#include "util/error.h"

namespace proctor {
namespace {

// GGUF block tensor suffix (between "blk.N." and ".weight"/".bias") -> HF module path, for the
// family's block. The norms depend on the block: Llama's ffn_norm is HF's
// post_attention_layernorm, Gemma's is pre_feedforward_layernorm (its post_attention_norm and
// post_ffw_norm are the sandwich norms). The router of a mixture of experts (ffn_gate_inp) and the
// fused projections (Phi-3's attn_qkv, and ffn_up holding gate then up rows) take the family's
// module names; the stacked experts (ffn_*_exps) are split by ExpertStackOf.
std::map<std::string, std::string> BlockNames(const FamilyTraits& family) {
  std::map<std::string, std::string> names = {
      {"attn_q", "self_attn.q_proj"},
      {"attn_k", "self_attn.k_proj"},
      {"attn_v", "self_attn.v_proj"},
      {"attn_output", "self_attn.o_proj"},
      {"attn_q_norm", "self_attn.q_norm"},
      {"attn_k_norm", "self_attn.k_norm"},
      {"ffn_gate", "mlp.gate_proj"},
      {"ffn_up", "mlp.up_proj"},
      {"ffn_down", "mlp.down_proj"},
      {"attn_norm", "input_layernorm"},
      {"ffn_norm", "post_attention_layernorm"},
  };
  if (family.block == BlockStyle::kGemma) {
    names["post_attention_norm"] = "post_attention_layernorm";
    names["ffn_norm"] = "pre_feedforward_layernorm";
    names["post_ffw_norm"] = "post_feedforward_layernorm";
  }
  const LayerTensorNames& t = family.tensors;
  names["ffn_gate_inp"] = fmt::format("{}.{}", t.moe, t.router);
  // Qwen3-Next's shared expert and its sigmoid gate.
  names["ffn_gate_inp_shexp"] = "mlp.shared_expert_gate";
  names["ffn_gate_shexp"] = "mlp.shared_expert.gate_proj";
  names["ffn_up_shexp"] = "mlp.shared_expert.up_proj";
  names["ffn_down_shexp"] = "mlp.shared_expert.down_proj";
  if (t.fused_qkv) {
    names.erase("attn_q");
    names.erase("attn_k");
    names.erase("attn_v");
    names["attn_qkv"] = "self_attn.qkv_proj";
  }
  if (t.fused_gate_up) {
    names.erase("ffn_gate");
    names["ffn_up"] = "mlp.gate_up_proj";
  }
  if (family.block == BlockStyle::kHybrid) {  // llama.cpp's qwen35, qwen3next: the DeltaNet's
    names.erase("ffn_norm");
    names["post_attention_norm"] = "post_attention_layernorm";
    names["attn_qkv"] = "linear_attn.in_proj_qkv";
    names["attn_gate"] = "linear_attn.in_proj_z";
    names["ssm_beta"] = "linear_attn.in_proj_b";
    names["ssm_alpha"] = "linear_attn.in_proj_a";
    names["ssm_ba"] = "linear_attn.in_proj_ba";  // qwen3next: HF's fused rows
    names["ssm_conv1d"] = "linear_attn.conv1d";
    names["ssm_norm"] = "linear_attn.norm";
    names["ssm_out"] = "linear_attn.out_proj";
  }
  return names;
}

// "blk.N.rest" -> {N, "rest"}; nullopt for any other name.
std::optional<std::pair<int, std::string_view>> SplitBlockName(std::string_view base) {
  if (!base.starts_with("blk.")) return std::nullopt;
  const std::string_view rest = base.substr(4);
  const size_t dot = rest.find('.');
  if (dot == std::string_view::npos || dot == 0) return std::nullopt;
  int layer = 0;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + dot, layer);
  if (ec != std::errc() || end != rest.data() + dot) return std::nullopt;
  return std::make_pair(layer, rest.substr(dot + 1));
}

// A stacked-experts tensor, blk.N.ffn_{gate,up,down}_exps.weight (ggml dims [in, out, experts]):
// the HF name of expert `{}` in it, e.g. "model.layers.N.mlp.experts.{}.gate_proj.weight".
std::optional<std::string> ExpertStackOf(std::string_view name, const FamilyTraits& family) {
  if (!name.ends_with(".weight")) return std::nullopt;
  const auto block = SplitBlockName(name.substr(0, name.size() - 7));
  if (!block) return std::nullopt;
  const LayerTensorNames& t = family.tensors;
  std::string_view matrix;
  if (block->second == "ffn_gate_exps") {
    matrix = t.expert_gate;
  } else if (block->second == "ffn_up_exps") {
    matrix = t.expert_up;
  } else if (block->second == "ffn_down_exps") {
    matrix = t.expert_down;
  } else {
    return std::nullopt;
  }
  return fmt::format("model.layers.{}.{}.experts.{{}}.{}.weight", block->first, t.moe, matrix);
}

// The DeltaNet's tensors whose GGUF names do not follow "<module>.<weight|bias>": ssm_dt.bias is
// HF's dt_bias, and ssm_a (no suffix) holds -exp(A_log), kept as linear_attn.ssm_a
// (LinearAttentionConfig::Storage::kLlamaCpp).
std::optional<std::string> HybridSpecialName(std::string_view name, const FamilyTraits& family) {
  if (family.block != BlockStyle::kHybrid) return std::nullopt;
  const auto block = SplitBlockName(name);
  if (!block) return std::nullopt;
  if (block->second == "ssm_dt.bias") {
    return fmt::format("model.layers.{}.linear_attn.dt_bias", block->first);
  }
  if (block->second == "ssm_a")
    return fmt::format("model.layers.{}.linear_attn.ssm_a", block->first);
  return std::nullopt;
}

[[noreturn]] void GgufModelFail(const GgufFile& gguf, const std::string& message) {
  Fail("gguf", "{}: {}", gguf.file_name(), message);
}

int MetaInt(const GgufFile& gguf, const std::string& key, std::optional<int> fallback) {
  const GgufValue* value = gguf.Find(key);
  if (value == nullptr) {
    if (fallback) return *fallback;
    GgufModelFail(gguf, fmt::format("metadata \"{}\" is missing", key));
  }
  if (value->is_array()) {
    GgufModelFail(gguf, fmt::format("metadata \"{}\" is an array (per-layer values are not "
                                    "supported)",
                                    key));
  }
  const int64_t v = gguf.GetInt(key);
  if (v < 0 || v > std::numeric_limits<int>::max()) {
    GgufModelFail(gguf, fmt::format("metadata \"{}\" = {} is out of range", key, v));
  }
  return static_cast<int>(v);
}

// A token id key; -1 when absent or out of the vocabulary (GGUF writes 0xFFFFFFFF for "none").
int TokenId(const GgufFile& gguf, const std::string& key, int vocab_size) {
  const GgufValue* value = gguf.Find(key);
  if (value == nullptr) return -1;
  const uint64_t id = gguf.GetUint(key);
  return id < static_cast<uint64_t>(vocab_size) ? static_cast<int>(id) : -1;
}

bool SameBytes(const TensorInfo* a, const TensorInfo* b) {
  return a != nullptr && b != nullptr && a->type == b->type && a->shape == b->shape &&
         a->bytes == b->bytes && std::memcmp(a->data, b->data, a->bytes) == 0;
}

// llama.cpp stores Llama-3.x RoPE scaling as rope_freqs.weight: one divisor per frequency,
// computed by its converter from HF's llama3 parameters. Every Llama 3.1/3.2 release uses
// low_freq_factor 1, high_freq_factor 4, original context 8192 and factor = the largest divisor;
// those parameters are accepted only when recomputing the divisors reproduces the tensor.
RopeParameters Llama3RopeFromFactors(const GgufFile& gguf, const TensorInfo& freqs, double theta,
                                     int head_dim) {
  const int64_t n = head_dim / 2;
  if (freqs.type != DType::kF32 || freqs.shape != std::vector<int64_t>{n}) {
    GgufModelFail(gguf, fmt::format("rope_freqs.weight is {} {}, expected f32 [{}]",
                                    Name(freqs.type), ShapeString(freqs.shape), n));
  }
  std::vector<float> divisors(static_cast<size_t>(n));
  std::memcpy(divisors.data(), freqs.data, divisors.size() * sizeof(float));
  RopeParameters rope;
  rope.type = RopeType::kLlama3;
  rope.theta = theta;
  rope.factor = *std::max_element(divisors.begin(), divisors.end());
  rope.low_freq_factor = 1.0;
  rope.high_freq_factor = 4.0;
  rope.original_max_position_embeddings = 8192;
  const double factor = *rope.factor;
  const double old_context = 8192.0;
  const double low_wavelen = old_context / rope.low_freq_factor;
  const double high_wavelen = old_context / rope.high_freq_factor;
  for (int64_t i = 0; i < n; ++i) {
    const double inv_freq = 1.0 / std::pow(theta, static_cast<double>(2 * i) / head_dim);
    const double wavelen = 2.0 * 3.14159265358979323846 / inv_freq;
    double expected = 1.0;
    if (wavelen > low_wavelen) {
      expected = factor;
    } else if (wavelen >= high_wavelen) {
      const double smooth = (old_context / wavelen - rope.low_freq_factor) /
                            (rope.high_freq_factor - rope.low_freq_factor);
      expected = 1.0 / ((1.0 - smooth) / factor + smooth);
    }
    if (std::fabs(divisors[static_cast<size_t>(i)] - expected) > 1e-4 * expected) {
      GgufModelFail(gguf, fmt::format("rope_freqs.weight[{}] = {} does not match Llama-3 RoPE "
                                      "scaling (factor {}, low 1, high 4, original 8192 give {}); "
                                      "these frequency factors are not supported",
                                      i, divisors[static_cast<size_t>(i)], factor, expected));
    }
  }
  return rope;
}

// Gemma as llama.cpp reads it (src/models/gemma2.cpp, gemma3.cpp): norms stored as 1 + weight
// (its converter adds the 1), GeGLU, embeddings times sqrt(hidden); the sliding window and its
// layer pattern (a bool per layer, or every n-th layer global: 2 for Gemma 2, 6 for Gemma 3), the
// local rope base (Gemma 3: rope.freq_base_swa, 10000 by default, unscaled), the soft-caps
// (Gemma 2: 50 and 30 by default; Gemma 3: no attention cap, final cap when given). GGUF has no
// query_pre_attn_scalar: llama.cpp scales by 1/sqrt(head_dim), or 1/sqrt(hidden / heads) for the
// 27B models it recognises by their layer count (46 for Gemma 2, 62 for Gemma 3); so does this.
void ReadGemmaMetadata(const GgufFile& gguf, ModelConfig& c) {
  const bool gemma2 = c.arch == ModelArch::kGemma2;
  const std::string p = c.model_type + ".";
  c.norm_adds_one = false;  // the converter stored 1 + weight
  const int layers_27b = gemma2 ? 46 : 62;
  c.query_pre_attn_scalar =
      c.num_layers == layers_27b && c.num_heads > 0 ? c.hidden_size / c.num_heads : c.head_dim;
  c.attn_logit_softcapping =
      gemma2 ? gguf.FindFloat(p + "attn_logit_softcapping").value_or(50.0f) : 0.0f;
  c.final_logit_softcapping =
      gguf.FindFloat(p + "final_logit_softcapping").value_or(gemma2 ? 30.0f : 0.0f);
  for (const float cap : {c.attn_logit_softcapping, c.final_logit_softcapping}) {
    if (!(cap >= 0.0f) || !std::isfinite(cap)) {
      GgufModelFail(gguf, fmt::format("a logit soft-capping of {} should be positive", cap));
    }
  }
  const int window = MetaInt(gguf, p + "attention.sliding_window", gemma2 ? 4096 : 0);
  if (window > 0) {
    c.sliding_window = window;
    const std::string pattern_key = p + "attention.sliding_window_pattern";
    const GgufValue* pattern = gguf.Find(pattern_key);
    if (pattern != nullptr && pattern->is_array()) {
      const std::vector<int64_t> flags = gguf.GetIntArray(pattern_key);
      if (flags.size() != static_cast<size_t>(c.num_layers)) {
        GgufModelFail(gguf, fmt::format("{} lists {} layers, the model has {}", pattern_key,
                                        flags.size(), c.num_layers));
      }
      for (const int64_t flag : flags) c.layer_uses_sliding_window.push_back(flag != 0);
    } else {
      const int every = MetaInt(gguf, pattern_key, gemma2 ? 2 : 6);
      for (int layer = 0; layer < c.num_layers; ++layer) {
        c.layer_uses_sliding_window.push_back(every == 0 || layer % every < every - 1);
      }
    }
  }
  const std::optional<float> local_base = gguf.FindFloat(p + "rope.freq_base_swa");
  if (!gemma2) {
    RopeParameters local;
    local.theta = local_base.value_or(10000.0f);
    c.sliding_rope = local;
  } else if (local_base) {
    c.sliding_rope = c.rope;
    c.sliding_rope->theta = *local_base;
  }
}

// The mixture of experts as llama.cpp's llama (Mixtral), qwen3moe and qwen3next graphs run it:
// every layer routes through <arch>.expert_count experts, <arch>.expert_used_count per token,
// with the softmax's top k renormalised (the graphs pass norm_w = true) and unscaled; an expert's
// size is <arch>.expert_feed_forward_length (qwen3moe, qwen3next; absent: feed_forward_length /
// experts used, as llama.cpp falls back) or feed_forward_length (llama). qwen3next adds a shared
// expert of <arch>.expert_shared_feed_forward_length (absent: feed_forward_length).
void ReadExperts(const GgufFile& gguf, const FamilyTraits& family, ModelConfig& c) {
  const std::string p = c.model_type + ".";
  const bool shared_expert = family.arch == ModelArch::kQwen3Next;
  const bool moe_family =
      family.arch == ModelArch::kMixtral || family.arch == ModelArch::kQwen3Moe || shared_expert;
  const int experts = MetaInt(gguf, p + "expert_count", 0);
  if (experts == 0) {
    if (moe_family) GgufModelFail(gguf, fmt::format("metadata \"{}expert_count\" is missing", p));
    return;
  }
  if (!moe_family) {
    GgufModelFail(gguf, fmt::format("{}expert_count = {}: experts are not supported in {}", p,
                                    experts, c.model_type));
  }
  MoeConfig& moe = c.moe;
  moe.num_experts = experts;
  moe.experts_per_token = MetaInt(gguf, p + "expert_used_count", std::nullopt);
  if (experts > (1 << 16) || moe.experts_per_token == 0 || moe.experts_per_token > experts) {
    GgufModelFail(gguf, fmt::format("{}expert_used_count = {} with expert_count = {}: it should "
                                    "be in [1, expert_count] (and the count at most 65536)",
                                    p, moe.experts_per_token, experts));
  }
  const int fallback = family.arch == ModelArch::kMixtral
                           ? c.intermediate_size
                           : c.intermediate_size / moe.experts_per_token;
  moe.expert_intermediate_size = MetaInt(gguf, p + "expert_feed_forward_length", fallback);
  if (shared_expert) {
    moe.shared_expert_intermediate_size =
        MetaInt(gguf, p + "expert_shared_feed_forward_length", c.intermediate_size);
  }
  if (moe.expert_intermediate_size <= 0 ||
      (shared_expert && moe.shared_expert_intermediate_size <= 0)) {
    GgufModelFail(gguf,
                  fmt::format("expert sizes {} (shared {}) should be positive",
                              moe.expert_intermediate_size, moe.shared_expert_intermediate_size));
  }
  moe.norm_topk_prob = true;
  if (const std::optional<int64_t> gating = gguf.FindInt(p + "expert_gating_func");
      gating && *gating != 1) {
    GgufModelFail(gguf, fmt::format("{}expert_gating_func = {}: only softmax routing (1) is "
                                    "supported",
                                    p, *gating));
  }
  if (const std::optional<float> scale = gguf.FindFloat(p + "expert_weights_scale");
      scale && *scale != 0.0f && *scale != 1.0f) {
    GgufModelFail(gguf, fmt::format("{}expert_weights_scale = {}: scaled routing weights are not "
                                    "supported",
                                    p, *scale));
  }
  c.layer_uses_moe.assign(static_cast<size_t>(c.num_layers), true);
}

// Qwen3.5 and Qwen3-Next as llama.cpp's qwen35 and qwen3next read them (src/models/qwen35.cpp,
// qwen3next.cpp): the DeltaNet's sizes under ssm.* (state_size = the key head size, group_count =
// key heads, time_step_rank = value heads, inner_size = all value heads' width, conv_kernel), its
// layers from attention.recurrent_layers (a bool per layer) or every
// full_attention_interval-th layer full attention (4), the tensors in llama.cpp's layout
// (LinearAttentionConfig::Storage::kLlamaCpp; qwen35's value heads tiled, qwen3next's grouped as
// in HF with in_proj_ba left fused), every norm but the DeltaNet's gated one stored as
// 1 + weight (the converter adds the 1). rope.dimension_sections (qwen35's M-RoPE) is not read:
// text positions are the same in every section, so it is plain RoPE over rope.dimension_count
// dimensions.
void ReadHybridMetadata(const GgufFile& gguf, ModelConfig& c) {
  const std::string p = c.model_type + ".";
  LinearAttentionConfig& la = c.linear_attention;
  la.key_head_dim = MetaInt(gguf, p + "ssm.state_size", std::nullopt);
  la.num_key_heads = MetaInt(gguf, p + "ssm.group_count", std::nullopt);
  la.num_value_heads = MetaInt(gguf, p + "ssm.time_step_rank", std::nullopt);
  la.conv_kernel = MetaInt(gguf, p + "ssm.conv_kernel", std::nullopt);
  const int inner = MetaInt(gguf, p + "ssm.inner_size", std::nullopt);
  for (const auto& [key, value] :
       {std::pair{"ssm.state_size", la.key_head_dim},
        std::pair{"ssm.group_count", la.num_key_heads},
        std::pair{"ssm.time_step_rank", la.num_value_heads},
        std::pair{"ssm.conv_kernel", la.conv_kernel}, std::pair{"ssm.inner_size", inner}}) {
    if (value == 0 || value > (1 << 20)) {
      GgufModelFail(gguf, fmt::format("{}{} = {} is out of range", p, key, value));
    }
  }
  if (la.num_value_heads % la.num_key_heads != 0 || inner % la.num_value_heads != 0) {
    GgufModelFail(gguf, fmt::format("{}ssm.time_step_rank {} should be a multiple of "
                                    "ssm.group_count {} and divide ssm.inner_size {}",
                                    p, la.num_value_heads, la.num_key_heads, inner));
  }
  la.value_head_dim = inner / la.num_value_heads;
  la.storage = LinearAttentionConfig::Storage::kLlamaCpp;
  la.value_heads_tiled = c.arch == ModelArch::kQwen35;
  if (c.arch == ModelArch::kQwen3Next) {
    c.linear_projections = ModelConfig::LinearProjections::kFusedBetaAlpha;
  }
  c.attention_output_gate = true;
  c.norm_adds_one = false;  // the converter stored 1 + weight
  const std::string recurrent_key = p + "attention.recurrent_layers";
  if (const GgufValue* recurrent = gguf.Find(recurrent_key);
      recurrent != nullptr && recurrent->is_array()) {
    const std::vector<int64_t> flags = gguf.GetIntArray(recurrent_key);
    if (flags.size() < static_cast<size_t>(c.num_layers)) {
      GgufModelFail(gguf, fmt::format("{} lists {} layers, the model has {}", recurrent_key,
                                      flags.size(), c.num_layers));
    }
    for (int layer = 0; layer < c.num_layers; ++layer) {
      c.layer_uses_linear_attention.push_back(flags[static_cast<size_t>(layer)] != 0);
    }
  } else {
    const int interval = MetaInt(gguf, p + "full_attention_interval", 4);
    if (interval == 0) GgufModelFail(gguf, "full_attention_interval 0 should be positive");
    for (int layer = 0; layer < c.num_layers; ++layer) {
      c.layer_uses_linear_attention.push_back((layer + 1) % interval != 0);
    }
  }
}

// Phi-3: the sliding window on every layer, as transformers applies it (llama.cpp reads the key
// but runs full attention, so logits past the window differ from its); LongRoPE's per-frequency
// factors are refused, as in config.json.
void ReadPhi3Metadata(const GgufFile& gguf, const WeightStore& weights, ModelConfig& c) {
  for (const char* name : {"rope_factors_long.weight", "rope_factors_short.weight"}) {
    if (weights.Has(name)) {
      GgufModelFail(gguf, fmt::format("{} (LongRoPE scaling) is not supported", name));
    }
  }
  c.sliding_window = MetaInt(gguf, c.model_type + ".attention.sliding_window", 0);
}

// "blk.0.attn_q.weight" -> {"blk.0.attn_q", ".weight"}; an empty suffix when the name ends in
// neither ".weight" nor ".bias".
std::pair<std::string_view, std::string_view> SplitParameterSuffix(std::string_view name) {
  for (std::string_view ending : {".weight", ".bias"}) {
    if (name.size() > ending.size() && name.ends_with(ending)) {
      return {name.substr(0, name.size() - ending.size()), ending};
    }
  }
  return {name, {}};
}

}  // namespace

std::string GgufToHfTensorName(std::string_view name, const FamilyTraits& family) {
  if (std::optional<std::string> special = HybridSpecialName(name, family)) return *special;
  const auto [base, suffix] = SplitParameterSuffix(name);
  if (suffix.empty()) return std::string(name);
  if (base == "token_embd") return fmt::format("model.embed_tokens{}", suffix);
  if (base == "output_norm") return fmt::format("model.norm{}", suffix);
  if (base == "output") return fmt::format("lm_head{}", suffix);
  const auto block = SplitBlockName(base);
  if (!block) return std::string(name);
  const auto names = BlockNames(family);
  const auto it = names.find(std::string(block->second));
  if (it == names.end()) return std::string(name);
  return fmt::format("model.layers.{}.{}{}", block->first, it->second, suffix);
}

std::optional<std::string> HfToGgufTensorName(std::string_view name, const FamilyTraits& family) {
  const auto [base, suffix] = SplitParameterSuffix(name);
  if (suffix.empty()) return std::nullopt;
  if (base == "model.embed_tokens") return fmt::format("token_embd{}", suffix);
  if (base == "model.norm") return fmt::format("output_norm{}", suffix);
  if (base == "lm_head") return fmt::format("output{}", suffix);
  constexpr std::string_view kLayers = "model.layers.";
  if (!base.starts_with(kLayers)) return std::nullopt;
  const std::string_view rest = base.substr(kLayers.size());
  const size_t dot = rest.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  int layer = 0;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + dot, layer);
  if (ec != std::errc() || end != rest.data() + dot) return std::nullopt;
  for (const auto& [gguf, hf] : BlockNames(family)) {
    if (hf == rest.substr(dot + 1)) return fmt::format("blk.{}.{}{}", layer, gguf, suffix);
  }
  return std::nullopt;
}

const FamilyTraits* GgufFamily(const GgufFile& gguf) {
  const std::optional<std::string_view> arch = gguf.FindString("general.architecture");
  const FamilyTraits* family = arch ? FindFamilyByGgufArchitecture(*arch) : nullptr;
  // llama.cpp's converter writes Mixtral as "llama" with experts.
  if (family != nullptr && family->arch == ModelArch::kLlama &&
      gguf.FindInt(fmt::format("{}.expert_count", *arch)).value_or(0) > 0) {
    return &FamilyOf(ModelArch::kMixtral);
  }
  return family;
}

int64_t GgufRowOfHfRow(int64_t hf_row, int64_t head_dim) {
  const int64_t half = head_dim / 2;
  const int64_t head = hf_row / head_dim, within = hf_row % head_dim;
  return head * head_dim + 2 * (within % half) + within / half;
}

int64_t HfRowOfGgufRow(int64_t gguf_row, int64_t head_dim) {
  const int64_t head = gguf_row / head_dim, within = gguf_row % head_dim;
  return head * head_dim + (within % 2) * (head_dim / 2) + within / 2;
}

void AddGgufTensors(const std::shared_ptr<const GgufFile>& gguf, WeightStore& store) {
  const FamilyTraits* found = GgufFamily(*gguf);
  const FamilyTraits& family = found != nullptr ? *found : FamilyOf(ModelArch::kLlama);
  const auto add = [&](TensorInfo info) {
    if (const TensorInfo* existing = store.Find(info.name)) {
      Fail("gguf", "{}: tensors \"{}\" and \"{}\" both map to \"{}\"", gguf->file_name(),
           existing->source_name, info.source_name, info.name);
    }
    store.AddView(std::move(info));
  };
  for (const GgufTensorInfo& t : gguf->tensors()) {
    TensorInfo info;
    info.type = t.type;
    for (auto it = t.dims.rbegin(); it != t.dims.rend(); ++it) {
      info.shape.push_back(static_cast<int64_t>(*it));
    }
    info.file = gguf->file_name();
    // Stacked experts become one [out, in] matrix per expert: expert e's rows are the e-th
    // contiguous slice of the tensor's bytes (ggml's outermost dimension).
    info.source_name = std::string(t.name);
    info.data = t.data;
    info.bytes = t.bytes;
    if (const std::optional<std::string> expert_name = ExpertStackOf(t.name, family)) {
      std::vector<TensorInfo> experts = OuterSlices(info);
      if (t.dims.size() != 3 || experts.empty()) {
        Fail("gguf",
             "{}: tensor \"{}\" has shape {} ({} bytes); stacked experts are [in, out, "
             "experts] with a whole number of bytes per expert",
             gguf->file_name(), t.name, ShapeString(info.shape), t.bytes);
      }
      for (size_t e = 0; e < experts.size(); ++e) {
        experts[e].name = fmt::format(fmt::runtime(*expert_name), e);
        add(std::move(experts[e]));
      }
      continue;
    }
    info.name = GgufToHfTensorName(t.name, family);
    // The shared expert's gate, HF [1, hidden], may be written as a vector (llama.cpp reads
    // [hidden]).
    if (info.name.ends_with(".mlp.shared_expert_gate.weight") && info.shape.size() == 1) {
      info.shape.insert(info.shape.begin(), 1);
    }
    add(std::move(info));
  }
  store.KeepAlive(gguf);
}

ModelConfig ConfigFromGguf(const GgufFile& gguf, const WeightStore& weights) {
  const std::string arch(gguf.GetString("general.architecture"));
  const FamilyTraits* family = GgufFamily(gguf);
  if (family == nullptr) {
    GgufModelFail(gguf, fmt::format("architecture (general.architecture) \"{}\" is not supported "
                                    "(supported: {})",
                                    arch, SupportedGgufArchitectures()));
  }
  ModelConfig c = FamilyConfig(family->arch);
  c.model_type = arch;
  const std::string p = arch + ".";
  c.hidden_size = MetaInt(gguf, p + "embedding_length", std::nullopt);
  c.num_layers = MetaInt(gguf, p + "block_count", std::nullopt);
  c.intermediate_size = MetaInt(gguf, p + "feed_forward_length", std::nullopt);
  c.num_heads = MetaInt(gguf, p + "attention.head_count", std::nullopt);
  c.num_kv_heads = MetaInt(gguf, p + "attention.head_count_kv", c.num_heads);
  c.head_dim =
      MetaInt(gguf, p + "attention.key_length", c.num_heads > 0 ? c.hidden_size / c.num_heads : 0);
  const int value_length = MetaInt(gguf, p + "attention.value_length", c.head_dim);
  if (value_length != c.head_dim) {
    GgufModelFail(gguf, fmt::format("attention.value_length {} differs from key_length {} (not "
                                    "supported)",
                                    value_length, c.head_dim));
  }
  c.rotary_dim = MetaInt(gguf, p + "rope.dimension_count", c.head_dim);
  if (c.rotary_dim != c.head_dim && !family->partial_rotary) {
    GgufModelFail(gguf, fmt::format("rope.dimension_count {} differs from the head size {} "
                                    "(partial rotary embedding is not supported in {})",
                                    c.rotary_dim, c.head_dim, arch));
  }
  c.max_position_embeddings = MetaInt(gguf, p + "context_length", 0);
  if (c.max_position_embeddings == 0 && gguf.Find(p + "context_length") != nullptr) {
    GgufModelFail(gguf,
                  fmt::format("metadata \"{}context_length\" is 0: a model has a context", p));
  }
  c.rms_norm_eps = gguf.FindFloat(p + "attention.layer_norm_rms_epsilon").value_or(1e-5f);
  c.norm_sums_like_ggml = true;  // the file's reference engine is llama.cpp
  c.rope.theta = gguf.FindFloat(p + "rope.freq_base").value_or(10000.0f);
  // RoPE scaling: "<arch>.rope.scaling.type" (none, linear, yarn) and its parameters.
  const std::string scaling(gguf.FindString(p + "rope.scaling.type").value_or("none"));
  const std::optional<float> factor = gguf.FindFloat(p + "rope.scaling.factor");
  const int original_context = MetaInt(gguf, p + "rope.scaling.original_context_length", 0);
  if (scaling == "none" || (scaling == "linear" && factor.value_or(1.0f) == 1.0f)) {
    c.rope.type = RopeType::kDefault;
  } else if (scaling == "linear") {
    c.rope.type = RopeType::kLinear;
    c.rope.factor = *factor;
  } else if (scaling == "yarn") {
    c.rope.type = RopeType::kYarn;
    if (factor) c.rope.factor = *factor;
    if (original_context > 0) c.rope.original_max_position_embeddings = original_context;
    if (auto v = gguf.FindFloat(p + "rope.scaling.yarn_beta_fast")) c.rope.beta_fast = *v;
    if (auto v = gguf.FindFloat(p + "rope.scaling.yarn_beta_slow")) c.rope.beta_slow = *v;
    if (auto v = gguf.FindFloat(p + "rope.scaling.attn_factor")) c.rope.attention_factor = *v;
  } else {
    GgufModelFail(gguf, fmt::format("{}rope.scaling.type \"{}\" is not supported (none, linear, "
                                    "yarn)",
                                    p, scaling));
  }
  if (c.rope.type == RopeType::kLinear && !(*c.rope.factor > 0.0)) {
    GgufModelFail(gguf, fmt::format("rope.scaling.factor {} should be positive", *c.rope.factor));
  }
  if (const TensorInfo* freqs = weights.Find("rope_freqs.weight")) {
    if (c.rope.type != RopeType::kDefault) {
      GgufModelFail(gguf, "rope_freqs.weight together with rope.scaling.type is not supported");
    }
    c.rope = Llama3RopeFromFactors(gguf, *freqs, c.rope.theta, c.head_dim);
  }
  if (c.rotary_dim != c.head_dim) {
    c.rope.rotary_dim = c.rotary_dim;
    c.rope.partial_rotary_factor = static_cast<double>(c.rotary_dim) / c.head_dim;
  }
  // Vocabulary: the token list, else llama.cpp's <arch>.vocab_size, else the embedding rows.
  if (const GgufValue* tokens = gguf.Find("tokenizer.ggml.tokens")) {
    c.vocab_size = static_cast<int>(std::min<size_t>(tokens->size(), 1u << 30));
  } else if (gguf.Find(p + "vocab_size") != nullptr) {
    c.vocab_size = MetaInt(gguf, p + "vocab_size", std::nullopt);
  } else if (const TensorInfo* embed = weights.Find("model.embed_tokens.weight");
             embed != nullptr && embed->shape.size() == 2) {
    c.vocab_size = static_cast<int>(std::min<int64_t>(embed->shape[0], 1 << 30));
  } else if (const TensorInfo* head = weights.Find("lm_head.weight");
             head != nullptr && head->shape.size() == 2) {
    c.vocab_size = static_cast<int>(std::min<int64_t>(head->shape[0], 1 << 30));
  }
  c.bos_token_id = TokenId(gguf, "tokenizer.ggml.bos_token_id", c.vocab_size);
  for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
                          "tokenizer.ggml.eom_token_id"}) {
    const int id = TokenId(gguf, key, c.vocab_size);
    if (id >= 0 &&
        std::find(c.eos_token_ids.begin(), c.eos_token_ids.end(), id) == c.eos_token_ids.end()) {
      c.eos_token_ids.push_back(id);
    }
  }
  const TensorInfo* output = weights.Find("lm_head.weight");
  c.tie_word_embeddings =
      output == nullptr || SameBytes(output, weights.Find("model.embed_tokens.weight"));
  // GGUF has no bias flag: the tensors decide, unless the family always has biases.
  c.attention_bias = c.attention_bias || weights.Has("model.layers.0.self_attn.q_proj.bias");
  c.rope_adjacent_pairs = family->gguf_rope_pairing == GgufRopePairing::kAdjacentPairs;
  if (family->block == BlockStyle::kGemma) ReadGemmaMetadata(gguf, c);
  if (family->block == BlockStyle::kHybrid) ReadHybridMetadata(gguf, c);
  ReadExperts(gguf, *family, c);
  if (family->arch == ModelArch::kPhi3) ReadPhi3Metadata(gguf, weights, c);
  // Storage type: the most common type among the matrices (stacked experts count once each).
  std::map<std::string_view, int> counts;
  for (const GgufTensorInfo& t : gguf.tensors()) {
    if (t.dims.size() >= 2) ++counts[Name(t.type)];
  }
  auto most = std::max_element(counts.begin(), counts.end(),
                               [](const auto& a, const auto& b) { return a.second < b.second; });
  c.stored_dtype = most == counts.end() ? "gguf" : fmt::format("gguf {}", most->first);
  ValidateConfig(c, gguf.file_name());
  return c;
}

}  // namespace proctor
