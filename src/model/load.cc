#include "model/load.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "formats/gguf.h"
#include "formats/gguf_model.h"
#include "formats/multimodal_wrapper.h"
#include "formats/safetensors.h"
#include "model/mlx_weights.h"
#include "model/runtime_model.h"
#include "util/error.h"
#include "util/file.h"
#include "util/json_file.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;

bool LooksLikeRepoId(std::string_view spec) {
  const size_t slash = spec.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == spec.size()) return false;
  if (spec.find('/', slash + 1) != std::string_view::npos) return false;
  if (spec.starts_with('.') || spec.starts_with('~')) return false;
  for (char ch : spec) {
    const bool ok = std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' ||
                    ch == '.' || ch == '/';
    if (!ok) return false;
  }
  return true;
}

// A snapshot folder holds either config.json (+ safetensors) or exactly one .gguf file.
std::optional<LocatedModel> ModelInDirectory(const fs::path& dir) {
  if (fs::exists(dir / "config.json")) return LocatedModel{ModelFormat::kSafetensors, dir};
  std::vector<fs::path> ggufs;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".gguf") ggufs.push_back(entry.path());
  }
  if (ggufs.size() == 1) return LocatedModel{ModelFormat::kGguf, ggufs.front()};
  return std::nullopt;
}

std::string ReadTrimmed(const fs::path& path) {
  std::string text = ReadFileToString(path);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  return text;
}

}  // namespace

std::vector<fs::path> HuggingFaceCacheDirs() {
  std::vector<fs::path> dirs;
  auto add = [&](const fs::path& dir) {
    if (std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) dirs.push_back(dir);
  };
  auto env = [](const char* name) -> const char* {
    const char* value = std::getenv(name);
    return value != nullptr && *value != '\0' ? value : nullptr;
  };
  if (const char* hub = env("HF_HUB_CACHE")) add(hub);
  if (const char* home = env("HF_HOME")) add(fs::path(home) / "hub");
  if (const char* xdg = env("XDG_CACHE_HOME")) add(fs::path(xdg) / "huggingface" / "hub");
  if (const char* home = env("HOME")) add(fs::path(home) / ".cache" / "huggingface" / "hub");
  return dirs;
}

LocatedModel LocateModel(std::string_view model_spec) {
  const fs::path path{std::string(model_spec)};
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    if (!fs::exists(path / "config.json")) {
      Fail("model",
           "{}: the directory has no config.json (a model directory holds config.json "
           "and *.safetensors)",
           path.string());
    }
    return LocatedModel{ModelFormat::kSafetensors, path};
  }
  if (fs::is_regular_file(path, ec)) {
    if (path.extension() == ".gguf") return LocatedModel{ModelFormat::kGguf, path};
    if (path.filename() == "config.json") {
      return LocatedModel{ModelFormat::kSafetensors, path.parent_path()};
    }
    Fail("model", "{}: not a model (expected a .gguf file or a directory with config.json)",
         path.string());
  }
  if (!LooksLikeRepoId(model_spec)) {
    Fail("model",
         "{}: no such file or directory (MODEL is a directory with config.json, a .gguf "
         "file, or a Hugging Face id org/name in the local cache)",
         model_spec);
  }
  const std::string folder_name = "models--" +
                                  std::string(model_spec.substr(0, model_spec.find('/'))) + "--" +
                                  std::string(model_spec.substr(model_spec.find('/') + 1));
  std::vector<std::string> looked;
  for (const fs::path& cache : HuggingFaceCacheDirs()) {
    const fs::path repo = cache / folder_name;
    looked.push_back(repo.string());
    if (!fs::is_directory(repo / "snapshots", ec)) continue;
    std::optional<fs::path> snapshot;
    if (fs::exists(repo / "refs" / "main")) {
      const std::string revision = ReadTrimmed(repo / "refs" / "main");
      if (!revision.empty() && revision.find('/') == std::string::npos &&
          fs::is_directory(repo / "snapshots" / revision, ec)) {
        snapshot = repo / "snapshots" / revision;
      }
    }
    if (!snapshot) {  // no usable refs/main: accept a single snapshot
      std::vector<fs::path> snapshots;
      for (const auto& entry : fs::directory_iterator(repo / "snapshots", ec)) {
        if (entry.is_directory()) snapshots.push_back(entry.path());
      }
      if (snapshots.size() == 1) snapshot = snapshots.front();
    }
    if (!snapshot) continue;
    if (std::optional<LocatedModel> found = ModelInDirectory(*snapshot)) return *found;
  }
  Fail("model",
       "\"{}\" is not a local path and is not in the Hugging Face cache (nothing is "
       "downloaded; fetch it first, e.g. `huggingface-cli download {}`); looked in: {}",
       model_spec, model_spec,
       looked.empty() ? std::string("(no cache folder: HOME unset)")
                      : fmt::format("{}", fmt::join(looked, ", ")));
}

void ValidateWeights(const ModelConfig& c, const WeightStore& w) {
  const int64_t hidden = c.hidden_size;
  const int64_t q_dim = static_cast<int64_t>(c.num_heads) * c.head_dim;
  const int64_t kv_dim = static_cast<int64_t>(c.num_kv_heads) * c.head_dim;
  const int64_t ff = c.intermediate_size;
  const int64_t vocab = c.vocab_size;
  // Linear layers and the embedding may be MLX-quantized: ResolveLinear checks either form.
  auto linear = [&](const std::string& path, int64_t out, int64_t in) {
    ResolveLinear(w, c.mlx_quantization, path, out, in);
  };
  auto expect = [&](const std::string& name, const std::vector<int64_t>& shape) {
    w.Expect(name, shape);
  };
  linear("model.embed_tokens", vocab, hidden);
  expect("model.norm.weight", {hidden});
  if (!c.tie_word_embeddings || w.Has("lm_head.weight")) linear("lm_head", vocab, hidden);
  for (int layer = 0; layer < c.num_layers; ++layer) {
    const std::string p = fmt::format("model.layers.{}.", layer);
    const LayerNormNames norms = NormNamesOf(FamilyOf(c.arch).block);
    const LayerTensorNames& names = FamilyOf(c.arch).tensors;
    for (std::string_view norm : {norms.attention, norms.attention_out, norms.mlp, norms.mlp_out}) {
      if (!norm.empty()) expect(fmt::format("{}{}.weight", p, norm), {hidden});
    }
    // A gated MLP at `prefix`: gate_proj / up_proj / down_proj (the defaults), or a routed
    // expert's matrices under the family's names.
    const auto mlp = [&](const std::string& prefix, int64_t size,
                         const LayerTensorNames& named = {}) {
      linear(prefix + std::string(named.expert_gate), size, hidden);
      linear(prefix + std::string(named.expert_up), size, hidden);
      linear(prefix + std::string(named.expert_down), hidden, size);
    };
    if (c.IsMoeLayer(layer)) {
      const std::string m = fmt::format("{}{}.", p, names.moe);
      linear(m + std::string(names.router), c.moe.num_experts, hidden);
      for (int e = 0; e < c.moe.num_experts; ++e) {
        mlp(fmt::format("{}experts.{}.", m, e), c.moe.expert_intermediate_size, names);
      }
      if (c.moe.shared_expert_intermediate_size > 0) {
        mlp(p + "mlp.shared_expert.", c.moe.shared_expert_intermediate_size);
        linear(p + "mlp.shared_expert_gate", 1, hidden);
      }
    } else if (names.fused_gate_up) {
      linear(p + "mlp.gate_up_proj", 2 * ff, hidden);
      linear(p + "mlp.down_proj", hidden, ff);
    } else {
      mlp(p + "mlp.", ff);
    }
    if (c.IsLinearAttentionLayer(layer)) {
      const LinearAttentionConfig& la = c.linear_attention;
      const std::string m = p + "linear_attn.";
      using enum ModelConfig::LinearProjections;
      if (c.linear_projections == kFused) {
        linear(m + "in_proj_qkvz", la.conv_dim() + la.value_dim(), hidden);
      } else {
        linear(m + "in_proj_qkv", la.conv_dim(), hidden);
        linear(m + "in_proj_z", la.value_dim(), hidden);
      }
      if (c.linear_projections == kSeparate) {
        linear(m + "in_proj_b", la.num_value_heads, hidden);
        linear(m + "in_proj_a", la.num_value_heads, hidden);
      } else {
        linear(m + "in_proj_ba", 2 * la.num_value_heads, hidden);
      }
      linear(m + "out_proj", hidden, la.value_dim());
      expect(m + "conv1d.weight", la.ConvWeightShape());
      expect(m + la.ATensorName(), {la.num_value_heads});
      expect(m + "dt_bias", {la.num_value_heads});
      expect(m + "norm.weight", {la.value_head_dim});
      continue;
    }
    // With an output gate, q_proj also yields the gate: twice the rows.
    const int64_t q_rows = c.attention_output_gate ? 2 * q_dim : q_dim;
    if (names.fused_qkv) {
      linear(p + "self_attn.qkv_proj", q_rows + 2 * kv_dim, hidden);
    } else {
      linear(p + "self_attn.q_proj", q_rows, hidden);
      linear(p + "self_attn.k_proj", kv_dim, hidden);
      linear(p + "self_attn.v_proj", kv_dim, hidden);
    }
    linear(p + "self_attn.o_proj", hidden, q_dim);
    if (c.attention_bias) {
      expect(p + "self_attn.q_proj.bias", {q_dim});
      expect(p + "self_attn.k_proj.bias", {kv_dim});
      expect(p + "self_attn.v_proj.bias", {kv_dim});
    }
    if (w.Has(p + "self_attn.o_proj.bias")) expect(p + "self_attn.o_proj.bias", {hidden});
    if (c.qk_norm) {
      expect(p + "self_attn.q_norm.weight", {c.head_dim});
      expect(p + "self_attn.k_norm.weight", {c.head_dim});
    }
  }
}

namespace {
LoadNotice& Notice() {
  static LoadNotice notice;
  return notice;
}
}  // namespace

void SetLoadNotice(LoadNotice notice) { Notice() = std::move(notice); }

uint64_t ModelFileBytes(const LocatedModel& located) {
  std::error_code ec;
  if (fs::is_regular_file(located.path, ec)) return fs::file_size(located.path, ec);
  uint64_t bytes = 0;
  for (const auto& entry : fs::directory_iterator(located.path, ec)) {
    if (entry.path().extension() == ".safetensors") bytes += entry.file_size(ec);
  }
  return bytes;
}

void SplitSwitchMlp(ModelConfig& config, WeightStore& weights) {
  if (config.moe.num_experts == 0) return;
  const LayerTensorNames& names = FamilyOf(config.arch).tensors;
  const std::pair<std::string_view, std::string_view> kMatrices[] = {
      {"gate_proj", names.expert_gate},
      {"up_proj", names.expert_up},
      {"down_proj", names.expert_down}};
  for (int layer = 0; layer < config.num_layers; ++layer) {
    const std::string moe = fmt::format("model.layers.{}.{}.", layer, names.moe);
    for (const auto& [stacked_name, expert_name] : kMatrices) {
      if (config.mlx_quantization) {
        auto& overrides = config.mlx_quantization->overrides;
        const auto stacked = overrides.find(fmt::format("{}switch_mlp.{}", moe, stacked_name));
        if (stacked != overrides.end()) {
          for (int e = 0; e < config.moe.num_experts; ++e) {
            overrides[fmt::format("{}experts.{}.{}", moe, e, expert_name)] = stacked->second;
          }
          overrides.erase(stacked);
        }
      }
      for (const char* part : {"weight", "scales", "biases"}) {
        const std::string stacked = fmt::format("{}switch_mlp.{}.{}", moe, stacked_name, part);
        const TensorInfo* found = weights.Find(stacked);
        if (found == nullptr) continue;
        std::vector<TensorInfo> experts = OuterSlices(*found);
        if (found->shape.size() != 3 || found->shape[0] != config.moe.num_experts ||
            experts.empty()) {
          Fail("model", "{}: tensor \"{}\" has shape {}; stacked experts are [{}, out, in]",
               weights.origin(), stacked, ShapeString(found->shape), config.moe.num_experts);
        }
        for (size_t e = 0; e < experts.size(); ++e) {
          experts[e].name = fmt::format("{}experts.{}.{}.{}", moe, e, expert_name, part);
          if (weights.Has(experts[e].name)) {
            Fail("model", "{}: \"{}\" and \"{}\" both hold expert {}'s {}", weights.origin(),
                 stacked, experts[e].name, e, part);
          }
          weights.AddView(std::move(experts[e]));
        }
        weights.Remove(stacked);
      }
    }
  }
}

void ReadMlxLmHybridLayout(const WeightStore& weights, ModelConfig& config) {
  LinearAttentionConfig& la = config.linear_attention;
  if (la.conv_kernel <= 1) return;  // [C, 1, 1] either way
  for (int layer = 0; layer < config.num_layers; ++layer) {
    if (!config.IsLinearAttentionLayer(layer)) continue;
    const TensorInfo* taps =
        weights.Find(fmt::format("model.layers.{}.linear_attn.conv1d.weight", layer));
    if (taps != nullptr && taps->shape.size() == 3 && taps->shape[1] == la.conv_kernel &&
        taps->shape[2] == 1) {
      la.storage = LinearAttentionConfig::Storage::kMlxLm;
      config.norm_adds_one = false;
    }
    return;
  }
}

LoadedModel LoadModel(std::string_view model_spec) {
  const LocatedModel located = LocateModel(model_spec);
  if (Notice()) Notice()(std::string(model_spec), ModelFileBytes(located));
  LoadedModel model;
  model.spec = std::string(model_spec);
  model.source = located.path;
  model.format = located.format;
  model.weights.set_origin(located.path.string());
  if (located.format == ModelFormat::kGguf) {
    std::shared_ptr<const GgufFile> gguf = GgufFile::Open(located.path);
    AddGgufTensors(gguf, model.weights);
    model.config = ConfigFromGguf(*gguf, model.weights);
    model.gguf = std::move(gguf);
  } else {
    const fs::path config_path = located.path / "config.json";
    const nlohmann::json config_json = ReadJsonFile(config_path, "model");
    model.config = ParseHfConfig(config_json, config_path.string());
    LoadSafetensorsDirectory(located.path, model.weights);
    if (!model.config.text_model_of.empty()) KeepTextModelTensors(model.weights);
    SplitSwitchMlp(model.config, model.weights);
    ReadMlxLmHybridLayout(model.weights, model.config);
  }
  ValidateWeights(model.config, model.weights);
  return model;
}

}  // namespace proctor
