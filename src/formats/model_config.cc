#include "formats/model_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "formats/multimodal_wrapper.h"
#include "util/error.h"

namespace proctor {
namespace {

using nlohmann::json;

[[noreturn]] void ConfigFail(std::string_view origin, const std::string& message) {
  Fail("model", "{}: {}", origin, message);
}

const json* Member(const json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

// An integer field; `fallback` when absent or null (nullopt => required).
int GetInt(const json& object, std::string_view key, std::string_view origin,
           std::optional<int> fallback = std::nullopt) {
  const json* value = Member(object, key);
  if (value == nullptr) {
    if (fallback) return *fallback;
    ConfigFail(origin, fmt::format("missing required field \"{}\"", key));
  }
  if (value->is_number_integer()) {
    // An unsigned value above 2^63 would read as negative through int64: print the JSON's own
    // text, and compare unsigned values as unsigned.
    const bool fits = value->is_number_unsigned()
                          ? value->get<uint64_t>() <= std::numeric_limits<int>::max()
                          : value->get<int64_t>() >= std::numeric_limits<int>::min() &&
                                value->get<int64_t>() <= std::numeric_limits<int>::max();
    if (!fits) ConfigFail(origin, fmt::format("\"{}\" = {} is out of range", key, value->dump()));
    return static_cast<int>(value->get<int64_t>());
  }
  if (value->is_number_float()) {  // 4096.0 is fine, 4096.5 is not
    const double d = value->get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 2147483647.0) {
      return static_cast<int>(d);
    }
  }
  ConfigFail(origin, fmt::format("\"{}\" should be an integer, got {}", key, value->dump()));
}

// A number field read as Number (float or double); `fallback` when absent, else required.
template <typename Number>
Number GetNumber(const json& object, std::string_view key, std::string_view origin,
                 std::optional<Number> fallback) {
  const json* value = Member(object, key);
  if (value == nullptr) {
    if (fallback) return *fallback;
    ConfigFail(origin, fmt::format("missing required field \"{}\"", key));
  }
  if (!value->is_number()) {
    ConfigFail(origin, fmt::format("\"{}\" should be a number, got {}", key, value->dump()));
  }
  return value->get<Number>();
}

float GetFloat(const json& object, std::string_view key, std::string_view origin,
               std::optional<float> fallback = std::nullopt) {
  return GetNumber<float>(object, key, origin, fallback);
}

double GetDouble(const json& object, std::string_view key, std::string_view origin,
                 std::optional<double> fallback = std::nullopt) {
  return GetNumber<double>(object, key, origin, fallback);
}

std::optional<double> GetOptionalDouble(const json& object, std::string_view key,
                                        std::string_view origin) {
  if (Member(object, key) == nullptr) return std::nullopt;
  return GetDouble(object, key, origin);
}

bool GetBool(const json& object, std::string_view key, std::string_view origin, bool fallback) {
  const json* value = Member(object, key);
  if (value == nullptr) return fallback;
  if (!value->is_boolean()) {
    ConfigFail(origin, fmt::format("\"{}\" should be true or false, got {}", key, value->dump()));
  }
  return value->get<bool>();
}

std::string GetString(const json& object, std::string_view key, std::string_view origin,
                      std::string_view fallback = "") {
  const json* value = Member(object, key);
  if (value == nullptr) return std::string(fallback);
  if (!value->is_string()) {
    ConfigFail(origin, fmt::format("\"{}\" should be a string, got {}", key, value->dump()));
  }
  return value->get<std::string>();
}

// Token ids: an integer, a list of integers, or null.
std::vector<int> GetTokenIds(const json& object, std::string_view key, std::string_view origin) {
  const json* value = Member(object, key);
  std::vector<int> ids;
  if (value == nullptr) return ids;
  if (value->is_array()) {
    for (const json& element : *value) {
      if (!element.is_number_integer()) {
        ConfigFail(origin, fmt::format("\"{}\" should list integers, got {}", key, value->dump()));
      }
      ids.push_back(element.get<int>());
    }
    return ids;
  }
  ids.push_back(GetInt(object, key, origin));
  return ids;
}

// Reads the RoPE parameters from either spelling: nested `rope_parameters` (transformers v5) or
// top-level `rope_theta` + `rope_scaling` (older checkpoints; `type` or `rope_type`).
RopeParameters ParseRope(const json& config, std::string_view origin) {
  RopeParameters rope;
  const json* params = Member(config, "rope_parameters");
  const json* scaling = Member(config, "rope_scaling");
  if (params != nullptr) {
    if (!params->is_object()) {
      ConfigFail(origin,
                 fmt::format("\"rope_parameters\" should be an object, got {}", params->dump()));
    }
    if (Member(*params, "rope_theta") == nullptr && !params->empty() &&
        params->begin()->is_object()) {
      ConfigFail(origin, fmt::format("per-layer-type \"rope_parameters\" ({}) are not supported "
                                     "for this architecture",
                                     params->begin().key()));
    }
    scaling = params;
  }
  const json* theta_owner = params != nullptr && Member(*params, "rope_theta") ? params : &config;
  rope.theta = GetDouble(*theta_owner, "rope_theta", origin, 10000.0);
  rope.partial_rotary_factor = GetDouble(config, "partial_rotary_factor", origin, 1.0);
  if (scaling == nullptr) return rope;
  if (!scaling->is_object()) {
    ConfigFail(origin,
               fmt::format("\"rope_scaling\" should be an object, got {}", scaling->dump()));
  }
  std::string type_name = GetString(*scaling, "rope_type", origin);
  if (type_name.empty()) type_name = GetString(*scaling, "type", origin, "default");
  const std::optional<RopeType> type = ParseRopeType(type_name);
  if (!type) {
    ConfigFail(origin, fmt::format("RoPE type \"{}\" is not supported (supported: default, "
                                   "linear, dynamic, llama3, yarn)",
                                   type_name));
  }
  rope.type = *type;
  rope.partial_rotary_factor =
      GetDouble(*scaling, "partial_rotary_factor", origin, rope.partial_rotary_factor);
  if (rope.type == RopeType::kDefault) return rope;
  rope.factor = GetOptionalDouble(*scaling, "factor", origin);
  if (const json* omp = Member(*scaling, "original_max_position_embeddings")) {
    (void)omp;
    rope.original_max_position_embeddings =
        GetInt(*scaling, "original_max_position_embeddings", origin);
  }
  if (rope.type != RopeType::kYarn && !rope.factor) {
    ConfigFail(origin, fmt::format("RoPE type \"{}\" needs a \"factor\"", type_name));
  }
  if (rope.factor && !(*rope.factor > 0.0 && std::isfinite(*rope.factor))) {
    ConfigFail(origin, fmt::format("RoPE scaling factor {} should be positive", *rope.factor));
  }
  if (rope.type == RopeType::kLlama3) {
    rope.low_freq_factor = GetDouble(*scaling, "low_freq_factor", origin);
    rope.high_freq_factor = GetDouble(*scaling, "high_freq_factor", origin);
    if (!rope.original_max_position_embeddings) {
      ConfigFail(origin, "RoPE type \"llama3\" needs \"original_max_position_embeddings\"");
    }
  }
  if (rope.type == RopeType::kYarn) {
    rope.beta_fast = GetOptionalDouble(*scaling, "beta_fast", origin);
    rope.beta_slow = GetOptionalDouble(*scaling, "beta_slow", origin);
    rope.attention_factor = GetOptionalDouble(*scaling, "attention_factor", origin);
    rope.mscale = GetOptionalDouble(*scaling, "mscale", origin);
    rope.mscale_all_dim = GetOptionalDouble(*scaling, "mscale_all_dim", origin);
    rope.truncate = GetBool(*scaling, "truncate", origin, true);
  }
  return rope;
}

// Which layers use the sliding window: `layer_types` when present, else the family's rule.
void ParseSlidingWindow(const json& config, SlidingWindowRule rule, ModelConfig& out,
                        std::string_view origin) {
  const int window = GetInt(config, "sliding_window", origin, 0);
  const json* layer_types = Member(config, "layer_types");
  if (layer_types != nullptr) {
    if (!layer_types->is_array() || layer_types->size() != static_cast<size_t>(out.num_layers)) {
      ConfigFail(origin, fmt::format("\"layer_types\" should list {} layer types, got {}",
                                     out.num_layers, layer_types->dump()));
    }
    bool any_sliding = false;
    const bool hybrid = FamilyOf(out.arch).block == BlockStyle::kHybrid;
    for (const json& type : *layer_types) {
      const std::string name = type.is_string() ? type.get<std::string>() : type.dump();
      if (name == "sliding_attention") {
        any_sliding = true;
      } else if (name != "full_attention" && !(hybrid && name == "linear_attention")) {
        ConfigFail(origin, fmt::format("layer type \"{}\" is not supported (supported: "
                                       "full_attention, sliding_attention{})",
                                       name, hybrid ? ", linear_attention" : ""));
      }
      out.layer_uses_sliding_window.push_back(name == "sliding_attention");
      if (hybrid) out.layer_uses_linear_attention.push_back(name == "linear_attention");
    }
    if (!any_sliding) {
      out.layer_uses_sliding_window.clear();
      return;
    }
    if (window <= 0) {
      ConfigFail(origin,
                 "\"layer_types\" lists sliding_attention but \"sliding_window\" is "
                 "missing");
    }
    out.sliding_window = window;
    return;
  }
  if (rule == SlidingWindowRule::kUseSlidingWindowFlag) {
    if (!GetBool(config, "use_sliding_window", origin, false) || window <= 0) return;
    const int first = GetInt(config, "max_window_layers", origin, out.num_layers);
    for (int layer = 0; layer < out.num_layers; ++layer) {
      out.layer_uses_sliding_window.push_back(layer >= first);
    }
    out.sliding_window = window;
    return;
  }
  if (rule == SlidingWindowRule::kEveryLayer) out.sliding_window = std::max(window, 0);
  if ((rule == SlidingWindowRule::kEvenLayers || rule == SlidingWindowRule::kPattern) &&
      window > 0) {
    const int pattern = rule == SlidingWindowRule::kEvenLayers
                            ? 2
                            : GetInt(config, "sliding_window_pattern", origin, 6);
    if (pattern <= 0) {
      ConfigFail(origin,
                 fmt::format("\"sliding_window_pattern\" should be positive, got {}", pattern));
    }
    for (int layer = 0; layer < out.num_layers; ++layer) {
      out.layer_uses_sliding_window.push_back((layer + 1) % pattern != 0);
    }
    out.sliding_window = window;
  }
}

// A number that may be null: nullopt when null, `fallback` when absent (Gemma's soft-caps, where
// null disables a default that is on).
std::optional<double> GetNullableDouble(const json& config, std::string_view key,
                                        std::string_view origin, std::optional<double> fallback) {
  if (!config.contains(key)) return fallback;
  if (config.at(key).is_null()) return std::nullopt;
  return GetDouble(config, key, origin);
}

// Gemma's rope: HF v5 nests one rope per layer type in "rope_parameters" ({"full_attention":
// {...}, "sliding_attention": {...}}); older configs give the global rope as usual and the local
// one as "rope_local_base_freq" (no scaling).
void ParseGemmaRope(const json& config, ModelConfig& out, std::string_view origin) {
  const json* params = Member(config, "rope_parameters");
  if (params != nullptr && params->is_object() && Member(*params, "rope_theta") == nullptr &&
      !params->empty() && params->begin()->is_object()) {
    for (const auto& [key, value] : params->items()) {
      if (key != "full_attention" && key != "sliding_attention") {
        ConfigFail(origin, fmt::format("\"rope_parameters\" has layer type \"{}\" (supported: "
                                       "full_attention, sliding_attention)",
                                       key));
      }
    }
    const json* full = Member(*params, "full_attention");
    const json* sliding = Member(*params, "sliding_attention");
    if (full == nullptr) ConfigFail(origin, "\"rope_parameters\" lacks \"full_attention\"");
    out.rope = ParseRope(json{{"rope_parameters", *full}}, origin);
    if (sliding != nullptr)
      out.sliding_rope = ParseRope(json{{"rope_parameters", *sliding}}, origin);
    return;
  }
  out.rope = ParseRope(config, origin);
  if (Member(config, "rope_local_base_freq") != nullptr) {
    RopeParameters local;
    local.theta = GetDouble(config, "rope_local_base_freq", origin);
    out.sliding_rope = local;
  }
}

// What sets Gemma's block apart: activation, attention scale, soft-caps. Bidirectional attention
// (an embedding model's setting) is refused.
void ParseGemmaBlock(const json& config, ModelArch arch, ModelConfig& out,
                     std::string_view origin) {
  std::string act = GetString(config, "hidden_activation", origin);
  if (act.empty()) act = GetString(config, "hidden_act", origin, "gelu_pytorch_tanh");
  if (act != "gelu_pytorch_tanh" && act != "gelu_tanh") {
    ConfigFail(origin, fmt::format("hidden_activation \"{}\" is not supported (only "
                                   "gelu_pytorch_tanh)",
                                   act));
  }
  out.query_pre_attn_scalar =
      GetDouble(config, "query_pre_attn_scalar", origin, out.query_pre_attn_scalar);
  if (!(out.query_pre_attn_scalar > 0.0) || !std::isfinite(out.query_pre_attn_scalar)) {
    ConfigFail(origin, fmt::format("query_pre_attn_scalar {} should be positive",
                                   out.query_pre_attn_scalar));
  }
  const bool gemma2 = arch == ModelArch::kGemma2;
  const auto cap = [&](std::string_view key, float family_default) {
    const std::optional<double> fallback =
        family_default > 0.0f ? std::optional<double>(family_default) : std::nullopt;
    const std::optional<double> value = GetNullableDouble(config, key, origin, fallback);
    if (value && !(*value > 0.0 && std::isfinite(*value))) {
      ConfigFail(origin, fmt::format("\"{}\" = {} should be positive or null", key, *value));
    }
    return static_cast<float>(value.value_or(0.0));
  };
  // Gemma 3's config keeps attn_logit_softcapping, but transformers' Gemma3Attention never
  // applies it (nor does llama.cpp): only Gemma 2 soft-caps attention scores.
  const float attention_cap = cap("attn_logit_softcapping", out.attn_logit_softcapping);
  out.attn_logit_softcapping = gemma2 ? attention_cap : 0.0f;
  out.final_logit_softcapping = cap("final_logit_softcapping", out.final_logit_softcapping);
  if (GetBool(config, "use_bidirectional_attention", origin, false)) {
    ConfigFail(origin, "use_bidirectional_attention true is not supported (causal models only)");
  }
}

// The mixture of experts of Qwen3-Next (with a shared expert; norm_topk_prob defaults to true),
// Qwen3-MoE (without; false) and Mixtral (every layer; experts of intermediate_size, always
// renormalised, as transformers' MixtralTopKRouter): which layers use it (every
// decoder_sparse_step-th layer not in mlp_only_layers, as transformers decides) and its sizes.
void ParseMoe(const json& config, ModelConfig& out, std::string_view origin) {
  const bool shared_expert = out.arch == ModelArch::kQwen3Next;
  const bool mixtral = out.arch == ModelArch::kMixtral;
  MoeConfig& moe = out.moe;
  // Released checkpoints write "num_experts"; transformers 5 saves Qwen3-MoE's as
  // "num_local_experts" (its attribute_map); Mixtral's key is "num_local_experts".
  moe.num_experts = mixtral ? 0 : GetInt(config, "num_experts", origin, 0);
  const int local_experts = GetInt(config, "num_local_experts", origin, 0);
  if (moe.num_experts != 0 && local_experts != 0 && moe.num_experts != local_experts) {
    ConfigFail(origin, fmt::format("\"num_experts\" = {} and \"num_local_experts\" = {} disagree",
                                   moe.num_experts, local_experts));
  }
  if (moe.num_experts == 0) moe.num_experts = local_experts;
  if (mixtral && moe.num_experts <= 0) {
    ConfigFail(origin, fmt::format("\"num_local_experts\" = {} (mixtral routes every layer's "
                                   "tokens to its experts: at least 1)",
                                   moe.num_experts));
  }
  if (moe.num_experts == 0) return;  // every layer a dense MLP
  moe.experts_per_token = GetInt(config, "num_experts_per_tok", origin);
  moe.expert_intermediate_size =
      mixtral ? out.intermediate_size : GetInt(config, "moe_intermediate_size", origin);
  moe.shared_expert_intermediate_size =
      shared_expert ? GetInt(config, "shared_expert_intermediate_size", origin) : 0;
  moe.norm_topk_prob = mixtral || GetBool(config, "norm_topk_prob", origin, shared_expert);
  if (moe.num_experts < 0 || moe.num_experts > (1 << 16)) {
    ConfigFail(origin, fmt::format("\"num_experts\" = {} is out of range", moe.num_experts));
  }
  if (moe.experts_per_token <= 0 || moe.experts_per_token > moe.num_experts) {
    ConfigFail(origin,
               fmt::format("\"num_experts_per_tok\" = {} should be in [1, num_experts = {}]",
                           moe.experts_per_token, moe.num_experts));
  }
  const auto check_size = [&](std::string_view name, int value) {
    if (value <= 0 || value > (1 << 20)) {
      ConfigFail(origin, fmt::format("\"{}\" = {} is out of range", name, value));
    }
  };
  check_size(mixtral ? "intermediate_size" : "moe_intermediate_size", moe.expert_intermediate_size);
  if (shared_expert) {
    check_size("shared_expert_intermediate_size", moe.shared_expert_intermediate_size);
  }
  if (mixtral) {  // MixtralConfig has neither decoder_sparse_step nor mlp_only_layers
    out.layer_uses_moe.assign(static_cast<size_t>(std::max(out.num_layers, 0)), true);
    return;
  }
  const int step = GetInt(config, "decoder_sparse_step", origin, 1);
  if (step <= 0) {
    ConfigFail(origin, fmt::format("\"decoder_sparse_step\" should be positive, got {}", step));
  }
  std::vector<bool> dense_only(static_cast<size_t>(out.num_layers), false);
  if (config.contains("mlp_only_layers") && !config["mlp_only_layers"].is_null()) {
    const json& listed = config["mlp_only_layers"];
    if (!listed.is_array()) ConfigFail(origin, "\"mlp_only_layers\" should be a list of layers");
    for (const json& layer : listed) {
      if (!layer.is_number_integer() || layer.get<int64_t>() < 0 ||
          layer.get<int64_t>() >= out.num_layers) {
        ConfigFail(origin, fmt::format("\"mlp_only_layers\" entry {} is not a layer in [0, {})",
                                       layer.dump(), out.num_layers));
      }
      dense_only[layer.get<size_t>()] = true;
    }
  }
  for (int layer = 0; layer < out.num_layers; ++layer) {
    out.layer_uses_moe.push_back(!dense_only[static_cast<size_t>(layer)] &&
                                 (layer + 1) % step == 0);
  }
}

// Qwen3.5's hybrid layout: the gated DeltaNet's sizes, and which layers use it (`layer_types`,
// read with the sliding window, or every `full_attention_interval`-th layer full, 4 by default).
void ParseHybridLayers(const json& config, ModelConfig& out, std::string_view origin) {
  LinearAttentionConfig& la = out.linear_attention;
  la.num_key_heads = GetInt(config, "linear_num_key_heads", origin);
  la.num_value_heads = GetInt(config, "linear_num_value_heads", origin);
  la.key_head_dim = GetInt(config, "linear_key_head_dim", origin);
  la.value_head_dim = GetInt(config, "linear_value_head_dim", origin);
  la.conv_kernel = GetInt(config, "linear_conv_kernel_dim", origin);
  for (const auto& [name, value] : {std::pair{"linear_num_key_heads", la.num_key_heads},
                                    std::pair{"linear_num_value_heads", la.num_value_heads},
                                    std::pair{"linear_key_head_dim", la.key_head_dim},
                                    std::pair{"linear_value_head_dim", la.value_head_dim},
                                    std::pair{"linear_conv_kernel_dim", la.conv_kernel}}) {
    if (value <= 0 || value > (1 << 16)) {
      ConfigFail(origin, fmt::format("\"{}\" = {} is out of range", name, value));
    }
  }
  if (la.num_value_heads % la.num_key_heads != 0) {
    ConfigFail(origin, fmt::format("linear_num_value_heads {} is not a multiple of "
                                   "linear_num_key_heads {}",
                                   la.num_value_heads, la.num_key_heads));
  }
  out.attention_output_gate = true;
  out.norm_adds_one = true;
  if (out.arch == ModelArch::kQwen3Next) {
    out.linear_projections = ModelConfig::LinearProjections::kFused;
    ParseMoe(config, out, origin);
  }
  if (out.layer_uses_linear_attention.empty()) {
    const int interval = GetInt(config, "full_attention_interval", origin, 4);
    if (interval <= 0) {
      ConfigFail(origin,
                 fmt::format("\"full_attention_interval\" should be positive, got {}", interval));
    }
    for (int layer = 0; layer < out.num_layers; ++layer) {
      out.layer_uses_linear_attention.push_back((layer + 1) % interval != 0);
    }
  }
}

// q/k/v biases: the family's rule, or config.json's "attention_bias" where the family leaves it
// open.
bool ParseAttentionBias(const json& config, AttentionBiasRule rule, std::string_view origin) {
  switch (rule) {
    case AttentionBiasRule::kAlways:
      return true;
    case AttentionBiasRule::kNever:
      return false;
    case AttentionBiasRule::kFromConfig:
      break;
  }
  return GetBool(config, "attention_bias", origin, false);
}

}  // namespace

ModelConfig FamilyConfig(ModelArch arch) {
  const FamilyTraits& family = FamilyOf(arch);
  ModelConfig c;
  c.arch = arch;
  c.model_type = std::string(family.hf_model_type);
  c.attention_bias = family.attention_bias == AttentionBiasRule::kAlways;
  c.qk_norm = family.qk_norm;
  c.tie_word_embeddings = family.tie_word_embeddings_default;
  if (family.block == BlockStyle::kGemma) {  // HF Gemma2Config / Gemma3TextConfig defaults
    c.mlp_activation = MlpActivation::kGeluTanh;
    c.norm_adds_one = true;
    c.query_pre_attn_scalar = 256.0;
    if (arch == ModelArch::kGemma2) {
      c.attn_logit_softcapping = 50.0f;
      c.final_logit_softcapping = 30.0f;
    }
  }
  return c;
}

float ModelConfig::AttentionScale() const {
  const double scalar = query_pre_attn_scalar > 0.0 ? query_pre_attn_scalar : head_dim;
  return static_cast<float>(1.0 / std::sqrt(scalar));
}

std::string ModelConfig::Summary() const {
  return fmt::format(
      "{} layers={} hidden={} heads={}/{} head_dim={} ff={} vocab={} rope={}(theta {}){} "
      "tied={} dtype={}",
      model_type, num_layers, hidden_size, num_heads, num_kv_heads, head_dim, intermediate_size,
      vocab_size, RopeTypeName(rope.type), rope.theta, rope_adjacent_pairs ? " adjacent-pairs" : "",
      tie_word_embeddings, stored_dtype);
}

namespace {

// A multimodal wrapper's language model: text_config, with the wrapper's own
// tie_word_embeddings, token ids and MLX quantization block (module paths renamed to the text
// model's, the vision tower's dropped).
ModelConfig ParseWrappedTextConfig(const nlohmann::json& config_json, std::string_view wrapper,
                                   std::string_view text_type, std::string_view origin) {
  const auto text_config = config_json.find("text_config");
  if (text_config == config_json.end() || !text_config->is_object()) {
    ConfigFail(origin, fmt::format("model_type \"{}\" is a multimodal wrapper of a {} model, "
                                   "which should be described by the object \"text_config\"",
                                   wrapper, text_type));
  }
  nlohmann::json text = *text_config;
  const std::string inner = GetString(text, "model_type", origin, std::string(text_type));
  if (inner != text_type) {
    ConfigFail(origin, fmt::format("text_config.model_type \"{}\" of a \"{}\" wrapper should be "
                                   "\"{}\"",
                                   inner, wrapper, text_type));
  }
  text["model_type"] = text_type;
  for (const char* key : {"tie_word_embeddings", "bos_token_id", "eos_token_id", "quantization",
                          "quantization_config"}) {
    if (config_json.contains(key)) text[key] = config_json[key];
  }
  ModelConfig out = ParseHfConfig(text, origin);
  out.text_model_of = std::string(wrapper);
  if (out.mlx_quantization) {
    decltype(out.mlx_quantization->overrides) overrides;
    for (auto& [path, params] : out.mlx_quantization->overrides) {
      if (std::optional<std::string> name = TextModelName(path)) overrides[*name] = params;
    }
    out.mlx_quantization->overrides = std::move(overrides);
  }
  return out;
}

}  // namespace

ModelConfig ParseHfConfig(const nlohmann::json& config_json, std::string_view origin) {
  if (!config_json.is_object()) ConfigFail(origin, "config.json should hold a JSON object");
  const std::string model_type = GetString(config_json, "model_type", origin);
  const FamilyTraits* family = FindFamilyByHfModelType(model_type);
  if (family == nullptr) {
    if (const std::optional<std::string_view> text_type = TextModelTypeOfWrapper(model_type)) {
      return ParseWrappedTextConfig(config_json, model_type, *text_type, origin);
    }
  }
  if (family == nullptr) {
    ConfigFail(origin, fmt::format("architecture (model_type) \"{}\" is not supported (supported: "
                                   "{})",
                                   model_type, SupportedHfModelTypes()));
  }
  ModelConfig out = FamilyConfig(family->arch);
  const bool gemma = family->block == BlockStyle::kGemma;
  if (gemma) {
    ParseGemmaBlock(config_json, family->arch, out, origin);
  } else if (const std::string act = GetString(config_json, "hidden_act", origin, "silu");
             act != "silu") {
    ConfigFail(origin, fmt::format("hidden_act \"{}\" is not supported (only silu)", act));
  }
  if (GetBool(config_json, "mlp_bias", origin, false)) {
    ConfigFail(origin, "mlp_bias true is not supported");
  }
  out.hidden_size = GetInt(config_json, "hidden_size", origin);
  out.num_layers = GetInt(config_json, "num_hidden_layers", origin);
  out.num_heads = GetInt(config_json, "num_attention_heads", origin);
  out.num_kv_heads = GetInt(config_json, "num_key_value_heads", origin, out.num_heads);
  out.head_dim = GetInt(config_json, "head_dim", origin,
                        out.num_heads > 0 ? out.hidden_size / out.num_heads : 0);
  out.intermediate_size = GetInt(config_json, "intermediate_size", origin);
  out.vocab_size = GetInt(config_json, "vocab_size", origin);
  out.max_position_embeddings = GetInt(config_json, "max_position_embeddings", origin, 0);
  if (out.max_position_embeddings < 0 ||
      (out.max_position_embeddings == 0 && Member(config_json, "max_position_embeddings"))) {
    ConfigFail(origin, fmt::format("\"max_position_embeddings\" = {} (a model has a context)",
                                   out.max_position_embeddings));
  }
  out.rms_norm_eps = GetFloat(config_json, "rms_norm_eps", origin, 1e-6f);
  out.tie_word_embeddings =
      GetBool(config_json, "tie_word_embeddings", origin, family->tie_word_embeddings_default);
  out.attention_bias = ParseAttentionBias(config_json, family->attention_bias, origin);
  if (gemma) {
    ParseGemmaRope(config_json, out, origin);
  } else {
    out.rope = ParseRope(config_json, origin);
  }
  out.rope_adjacent_pairs = false;  // HF checkpoints rotate halves
  ParseSlidingWindow(config_json, family->sliding_window, out, origin);
  if (family->block == BlockStyle::kHybrid) ParseHybridLayers(config_json, out, origin);
  if (family->arch == ModelArch::kQwen3Moe || family->arch == ModelArch::kMixtral) {
    ParseMoe(config_json, out, origin);
  }
  out.rotary_dim = static_cast<int>(out.head_dim * out.rope.partial_rotary_factor);
  if (out.rope.partial_rotary_factor != 1.0 && !family->partial_rotary) {
    ConfigFail(origin, fmt::format("partial_rotary_factor {} is not supported for {}",
                                   out.rope.partial_rotary_factor, model_type));
  }
  const std::vector<int> bos = GetTokenIds(config_json, "bos_token_id", origin);
  out.bos_token_id = bos.empty() ? -1 : bos.front();
  out.eos_token_ids = GetTokenIds(config_json, "eos_token_id", origin);
  out.stored_dtype = GetString(config_json, "dtype", origin);
  if (out.stored_dtype.empty()) out.stored_dtype = GetString(config_json, "torch_dtype", origin);
  out.mlx_quantization = ParseMlxQuantization(config_json, origin);
  ValidateConfig(out, origin);
  return out;
}

void ValidateConfig(const ModelConfig& c, std::string_view origin) {
  auto positive = [&](std::string_view name, int value) {
    if (value <= 0) ConfigFail(origin, fmt::format("{} should be positive, got {}", name, value));
  };
  positive("hidden_size", c.hidden_size);
  positive("num_layers", c.num_layers);
  positive("num_heads", c.num_heads);
  positive("num_kv_heads", c.num_kv_heads);
  positive("head_dim", c.head_dim);
  positive("intermediate_size", c.intermediate_size);
  positive("vocab_size", c.vocab_size);
  if (c.num_heads % c.num_kv_heads != 0) {
    ConfigFail(origin, fmt::format("num_heads {} is not a multiple of num_kv_heads {}", c.num_heads,
                                   c.num_kv_heads));
  }
  if (c.head_dim % 2 != 0 || c.rotary_dim % 2 != 0 || c.rotary_dim > c.head_dim) {
    ConfigFail(origin, fmt::format("head_dim {} / rotary dims {} should be even and rotary <= "
                                   "head_dim",
                                   c.head_dim, c.rotary_dim));
  }
  if (!(c.rms_norm_eps > 0.0f) || !std::isfinite(c.rms_norm_eps)) {
    ConfigFail(origin, fmt::format("rms_norm_eps {} should be positive", c.rms_norm_eps));
  }
  for (const RopeParameters* rope : {&c.rope, c.sliding_rope ? &*c.sliding_rope : nullptr}) {
    if (rope != nullptr && (!(rope->theta > 0.0) || !std::isfinite(rope->theta))) {
      ConfigFail(origin, fmt::format("rope theta {} should be positive", rope->theta));
    }
  }
  // Large-but-sane bounds: more would overflow int64 buffer sizes in the forward pass.
  constexpr int kMaxDim = 1 << 20;
  if (c.hidden_size > kMaxDim || c.intermediate_size > kMaxDim || c.head_dim > kMaxDim ||
      c.num_layers > 4096 || c.num_heads > 4096 || c.vocab_size > (1 << 24)) {
    ConfigFail(origin, fmt::format("implausible sizes: {}", c.Summary()));
  }
  if (c.bos_token_id >= c.vocab_size) {
    ConfigFail(origin, fmt::format("bos_token_id {} is outside the vocabulary ({})", c.bos_token_id,
                                   c.vocab_size));
  }
}

}  // namespace proctor
