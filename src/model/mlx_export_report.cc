// `proctor quantize` reporting (summary text, --json) and the config.json built for GGUF sources.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

#include "model/load.h"
#include "model/mlx_export.h"

namespace proctor {
namespace {

// A float as the JSON number of its shortest decimal spelling (1e-5f -> 1e-05, not
// 9.999999747378752e-06).
nlohmann::json ShortFloat(double value) {
  return std::stod(fmt::format("{}", static_cast<float>(value)));
}

// The first setting of the forward in which `a` and `b` differ ("" when none); the Q/K row order
// is not one (the exporter puts GGUF llama rows back in HF order).
std::string FirstForwardDifference(const ModelConfig& a, const ModelConfig& b) {
  const auto moe = [](const ModelConfig& c) {
    return std::tuple(c.moe.num_experts, c.moe.experts_per_token, c.moe.expert_intermediate_size,
                      c.moe.shared_expert_intermediate_size, c.moe.norm_topk_prob,
                      c.layer_uses_moe);
  };
  const auto linear = [](const ModelConfig& c) {
    const LinearAttentionConfig& la = c.linear_attention;
    return std::tuple(la.num_key_heads, la.num_value_heads, la.key_head_dim, la.value_head_dim,
                      la.conv_kernel, la.storage, la.value_heads_tiled,
                      c.layer_uses_linear_attention, c.attention_output_gate, c.linear_projections);
  };
  const auto windows = [](const ModelConfig& c) {
    std::vector<int> w;
    w.reserve(static_cast<size_t>(std::max(c.num_layers, 0)));
    for (int layer = 0; layer < c.num_layers; ++layer) w.push_back(c.SlidingWindowForLayer(layer));
    return w;
  };
  const auto rope = [](const RopeParameters& r) {
    return std::tuple(r.type, r.theta, r.factor.value_or(0.0));
  };
  const std::pair<const char*, bool> checks[] = {
      {"family", a.arch == b.arch},
      {"sizes", std::tuple(a.hidden_size, a.num_layers, a.num_heads, a.num_kv_heads, a.head_dim,
                           a.intermediate_size, a.vocab_size) ==
                    std::tuple(b.hidden_size, b.num_layers, b.num_heads, b.num_kv_heads, b.head_dim,
                               b.intermediate_size, b.vocab_size)},
      {"rotary dimensions", a.rotary_dim == b.rotary_dim},
      {"rope", rope(a.rope) == rope(b.rope)},
      {"sliding-window rope",
       a.sliding_rope.has_value() == b.sliding_rope.has_value() &&
           (!a.sliding_rope || rope(*a.sliding_rope) == rope(*b.sliding_rope))},
      {"rms_norm_eps", a.rms_norm_eps == b.rms_norm_eps},
      {"norms by (1 + weight)", a.norm_adds_one == b.norm_adds_one},
      {"attention biases", a.attention_bias == b.attention_bias},
      {"q/k norms", a.qk_norm == b.qk_norm},
      {"attention scale", a.AttentionScale() == b.AttentionScale()},
      {"soft-capping", a.attn_logit_softcapping == b.attn_logit_softcapping &&
                           a.final_logit_softcapping == b.final_logit_softcapping},
      {"sliding windows", windows(a) == windows(b)},
      {"MLP activation", a.mlp_activation == b.mlp_activation},
      {"mixture of experts", moe(a) == moe(b)},
      {"linear attention", linear(a) == linear(b)},
  };
  for (const auto& [what, same] : checks) {
    if (!same) return what;
  }
  return "";
}

std::string Megabytes(uint64_t bytes) { return fmt::format("{:.2f} MB", bytes / 1e6); }

std::string TorchDtype(DType type) {
  switch (type) {
    case DType::kF16:
      return "float16";
    case DType::kBF16:
      return "bfloat16";
    default:
      return "float32";
  }
}

}  // namespace

nlohmann::json HfConfigJsonFor(const LoadedModel& model) {
  const ModelConfig& c = model.config;
  const FamilyTraits& family = FamilyOf(c.arch);
  nlohmann::json j = {
      {"architectures", {family.hf_architecture}},
      {"model_type", family.hf_model_type},
      {"hidden_size", c.hidden_size},
      {"num_hidden_layers", c.num_layers},
      {"num_attention_heads", c.num_heads},
      {"num_key_value_heads", c.num_kv_heads},
      {"head_dim", c.head_dim},
      {"intermediate_size", c.intermediate_size},
      {"vocab_size", c.vocab_size},
      {"hidden_act", "silu"},
      {"rms_norm_eps", ShortFloat(c.rms_norm_eps)},
      {"rope_theta", ShortFloat(c.rope.theta)},
      {"tie_word_embeddings", c.tie_word_embeddings},
  };
  if (family.hf_config_has_bias_keys) {
    j["attention_bias"] = c.attention_bias;
    j["mlp_bias"] = false;
  }
  if (c.max_position_embeddings > 0) j["max_position_embeddings"] = c.max_position_embeddings;
  if (c.bos_token_id >= 0) j["bos_token_id"] = c.bos_token_id;
  if (c.eos_token_ids.size() == 1) j["eos_token_id"] = c.eos_token_ids.front();
  if (c.eos_token_ids.size() > 1) j["eos_token_id"] = c.eos_token_ids;
  if (const TensorInfo* embed = model.weights.Find("model.embed_tokens.weight")) {
    j["torch_dtype"] = TorchDtype(embed->type);
  }
  const RopeParameters& r = c.rope;
  if (r.type != RopeType::kDefault) {
    nlohmann::json s = {{"rope_type", RopeTypeName(r.type)}};
    if (r.factor) s["factor"] = ShortFloat(*r.factor);
    if (r.original_max_position_embeddings) {
      s["original_max_position_embeddings"] = *r.original_max_position_embeddings;
    }
    if (r.type == RopeType::kLlama3) {
      s["low_freq_factor"] = ShortFloat(r.low_freq_factor);
      s["high_freq_factor"] = ShortFloat(r.high_freq_factor);
    }
    if (r.beta_fast) s["beta_fast"] = ShortFloat(*r.beta_fast);
    if (r.beta_slow) s["beta_slow"] = ShortFloat(*r.beta_slow);
    if (r.attention_factor) s["attention_factor"] = ShortFloat(*r.attention_factor);
    j["rope_scaling"] = s;
  }
  if (c.sliding_window > 0) {
    if (!c.layer_uses_sliding_window.empty()) {
      nlohmann::json types = nlohmann::json::array();
      for (bool sliding : c.layer_uses_sliding_window) {
        types.push_back(sliding ? "sliding_attention" : "full_attention");
      }
      j["layer_types"] = types;
    }
    j["sliding_window"] = c.sliding_window;
    if (family.sliding_window == SlidingWindowRule::kUseSlidingWindowFlag) {
      j["use_sliding_window"] = true;
    }
  }
  if (c.rotary_dim != c.head_dim) {
    j["partial_rotary_factor"] = static_cast<double>(c.rotary_dim) / c.head_dim;
  }
  if (c.moe.num_experts > 0) {
    j["num_experts_per_tok"] = c.moe.experts_per_token;
    if (c.arch == ModelArch::kMixtral) {
      j["num_local_experts"] = c.moe.num_experts;
    } else {
      j["num_experts"] = c.moe.num_experts;
      j["moe_intermediate_size"] = c.moe.expert_intermediate_size;
      j["norm_topk_prob"] = c.moe.norm_topk_prob;
      j["decoder_sparse_step"] = 1;
      nlohmann::json dense = nlohmann::json::array();
      for (int layer = 0; layer < c.num_layers; ++layer) {
        if (!c.IsMoeLayer(layer)) dense.push_back(layer);
      }
      j["mlp_only_layers"] = dense;
    }
  }
  // What config.json cannot say of this model (Gemma's norms stored as 1 + weight, llama.cpp's
  // DeltaNet layout, ...) is refused rather than written with another meaning: the file read
  // back must describe the same forward.
  const std::string origin = fmt::format("the config.json for {}", model.weights.origin());
  std::string differs;
  try {
    differs = FirstForwardDifference(ParseHfConfig(j, origin), c);
  } catch (const Error& e) {
    differs = fmt::format("settings ({})", e.what());
  }
  if (!differs.empty()) {
    Fail("quantize",
         "{}: a {} GGUF cannot be written as an MLX directory here: config.json would give it "
         "other {} (quantize its Hugging Face checkpoint instead)",
         model.weights.origin(), c.model_type, differs);
  }
  return j;
}

nlohmann::json MlxQuantizeReport::ToJson() const {
  nlohmann::json tensors_json = nlohmann::json::array();
  for (const MlxTensorResult& t : tensors) {
    nlohmann::json e = {{"name", t.name},
                        {"quantized", t.quantized},
                        {"parameters", t.parameters},
                        {"source_bytes", t.source_bytes},
                        {"output_bytes", t.output_bytes}};
    if (t.quantized) {
      e["bits"] = t.bits;
      e["group_size"] = t.group_size;
    }
    if (!t.kept_reason.empty()) e["kept_reason"] = t.kept_reason;
    tensors_json.push_back(e);
  }
  nlohmann::json j = {{"source", source.string()},
                      {"out", out_dir.string()},
                      {"mode", quant::MlxModeName(mode)},
                      {"bits", bits},
                      {"group_size", group_size},
                      {"recipe", recipe.empty() ? nlohmann::json(nullptr) : nlohmann::json(recipe)},
                      {"tensors_quantized", quantized_count},
                      {"tensors_kept", kept_count},
                      {"total_parameters", total_parameters},
                      {"tensor_bytes", tensor_bytes},
                      {"output_bytes", output_bytes},
                      {"bits_per_weight", bits_per_weight},
                      {"quantized_bits_per_weight", quantized_bits_per_weight},
                      {"copied_files", copied_files},
                      {"notes", notes},
                      {"tensors", tensors_json}};
  return j;
}

std::string MlxQuantizeReport::Summary() const {
  std::string out;
  std::map<int, int> by_bits;  // bits -> quantized tensors
  uint64_t source_bytes = 0;
  for (const MlxTensorResult& t : tensors) {
    source_bytes += t.source_bytes;
    if (t.quantized) ++by_bits[t.bits];
  }
  std::string bits_text;
  for (const auto& [b, n] : by_bits) {
    bits_text += fmt::format("{}{} at {} bits", bits_text.empty() ? "" : ", ", n, b);
  }
  out += fmt::format("quantized {} tensors ({}, {}{}, group size {}): {}\n", quantized_count,
                     quant::MlxModeName(mode), recipe.empty() ? "" : "recipe " + recipe + ", ",
                     recipe.empty() ? fmt::format("{} bits", bits) : "mixed bits", group_size,
                     bits_text.empty() ? "none" : bits_text);
  int plain_kept = 0;
  for (const MlxTensorResult& t : tensors) {
    if (t.quantized) continue;
    if (t.kept_reason.empty()) {
      ++plain_kept;
    } else {
      out += fmt::format("  kept {}: {}\n", t.name, t.kept_reason);
    }
  }
  out += fmt::format("kept {} tensors in full precision ({} norms/biases and other tensors{})\n",
                     kept_count, plain_kept,
                     kept_count > plain_kept
                         ? fmt::format(", {} weights listed above", kept_count - plain_kept)
                         : std::string());
  out += fmt::format(
      "bits per weight: {:.3f} over all {} parameters (scales, biases and unquantized tensors "
      "counted, as mlx-lm reports it); {:.3f} over the quantized tensors\n",
      bits_per_weight, total_parameters, quantized_bits_per_weight);
  out += fmt::format("wrote {}: {} ({} of tensors; source tensors {})\n", out_dir.string(),
                     Megabytes(output_bytes), Megabytes(tensor_bytes), Megabytes(source_bytes));
  if (!copied_files.empty()) {
    std::string files;
    for (const std::string& f : copied_files) files += (files.empty() ? "" : ", ") + f;
    out += fmt::format("copied {}\n", files);
  }
  for (const std::string& note : notes) out += fmt::format("note: {}\n", note);
  return out;
}

}  // namespace proctor
