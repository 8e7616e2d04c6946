#include "model/gguf_source.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <numbers>

#include "formats/gguf.h"
#include "formats/gguf_model.h"
#include "model/load.h"
#include "util/error.h"
#include "util/file.h"
#include "util/json_file.h"

namespace proctor {
namespace fs = std::filesystem;
namespace {

GgufModelFacts FactsOf(const GgufFile& file) {
  GgufModelFacts facts;
  const std::optional<std::string_view> arch = file.FindString("general.architecture");
  if (!arch) Fail("quantize", "{}: no general.architecture", file.file_name());
  facts.architecture = std::string(*arch);
  const std::string p = facts.architecture + ".";
  facts.n_layer = static_cast<int>(file.GetInt(p + "block_count"));
  facts.n_expert = static_cast<int>(file.FindInt(p + "expert_count").value_or(0));
  facts.n_head = static_cast<int>(file.FindInt(p + "attention.head_count").value_or(0));
  facts.n_head_kv =
      static_cast<int>(file.FindInt(p + "attention.head_count_kv").value_or(facts.n_head));
  return facts;
}

GgufSource FromGgufFile(const fs::path& path) {
  const std::shared_ptr<GgufFile> file = GgufFile::Open(path);
  GgufSource source;
  source.path = path;
  source.kind = "gguf";
  source.keep_alive = file;
  for (const auto& [key, value] : file->metadata()) source.metadata.Copy(key, value);
  source.facts = FactsOf(*file);
  for (const GgufTensorInfo& t : file->tensors()) {
    source.tensors.push_back(GgufSourceTensor{.name = std::string(t.name),
                                              .dims = t.dims,
                                              .type = t.type,
                                              .data_type = t.type,
                                              .data = t.data,
                                              .bytes = t.bytes});
  }
  return source;
}

std::shared_ptr<const std::vector<uint8_t>> FloatBytes(const std::vector<float>& values) {
  auto bytes = std::make_shared<std::vector<uint8_t>>(values.size() * sizeof(float));
  std::memcpy(bytes->data(), values.data(), bytes->size());
  return bytes;
}

// Llama 3 RoPE scaling as llama.cpp's rope_freqs.weight: one divisor per frequency, computed in
// float32 as convert_hf_to_gguf.py's torch code does (Python scalars enter each float32 operation
// rounded to float32).
std::vector<float> Llama3RopeDivisors(const RopeParameters& rope, int head_dim) {
  const float base = static_cast<float>(rope.theta);
  const float factor = static_cast<float>(rope.factor.value_or(8.0));
  const float low = static_cast<float>(rope.low_freq_factor);
  const float high = static_cast<float>(rope.high_freq_factor);
  const double old_context =
      static_cast<double>(rope.original_max_position_embeddings.value_or(8192));
  const float low_wavelen = static_cast<float>(old_context / rope.low_freq_factor);
  const float high_wavelen = static_cast<float>(old_context / rope.high_freq_factor);
  const float two_pi = static_cast<float>(2.0 * std::numbers::pi);
  std::vector<float> divisors;
  for (int i = 0; i < head_dim; i += 2) {
    const float exponent = static_cast<float>(i) / static_cast<float>(head_dim);
    const float freq = 1.0f / std::pow(base, exponent);
    const float wavelen = two_pi / freq;
    if (wavelen < high_wavelen) {
      divisors.push_back(1.0f);
    } else if (wavelen > low_wavelen) {
      divisors.push_back(factor);
    } else {
      const float smooth =
          (static_cast<float>(old_context) / wavelen - low) / static_cast<float>(high - low);
      divisors.push_back(1.0f / ((1.0f - smooth) / factor + smooth));
    }
  }
  return divisors;
}

GgufSource FromCheckpoint(const fs::path& dir, const AddGgufVocabulary& add_vocabulary) {
  auto model = std::make_shared<LoadedModel>(LoadModel(dir.string()));
  const ModelConfig& c = model->config;
  if (c.arch != ModelArch::kLlama && c.arch != ModelArch::kMistral) {
    Fail("quantize",
         "{}: proctor writes a GGUF from a safetensors directory for Llama and Mistral "
         "checkpoints (llama.cpp's \"llama\" architecture), and this is model_type \"{}\"; make "
         "an F16 GGUF with llama.cpp's convert_hf_to_gguf.py and quantize that",
         dir.string(), c.model_type);
  }
  if (c.mlx_quantization) {
    Fail("quantize", "{}: the checkpoint is MLX-quantized; quantize a full-precision one",
         dir.string());
  }
  if (c.rope.type != RopeType::kDefault && c.rope.type != RopeType::kLinear &&
      c.rope.type != RopeType::kLlama3) {
    Fail("quantize",
         "{}: RoPE scaling of this type (yarn or dynamic) has no GGUF form in proctor (default, "
         "linear and llama3 do)",
         dir.string());
  }
  if (!add_vocabulary) Fail("quantize", "{}: no vocabulary writer was given", dir.string());
  const nlohmann::json config_json = ReadJsonFile(dir / "config.json", "quantize");

  GgufSource source;
  source.path = dir;
  source.kind = "safetensors";
  source.facts = {"llama", c.num_layers, 0, c.num_heads, c.num_kv_heads};
  GgufMetadata& m = source.metadata;
  const fs::path name = dir.filename().empty() ? dir.parent_path().filename() : dir.filename();
  m.SetString("general.architecture", "llama");
  m.SetString("general.type", "model");
  m.SetString("general.name", name.string());
  const std::string p = "llama.";
  auto u32 = [&](const std::string& key, int64_t v) {
    m.SetUint32(p + key, static_cast<uint32_t>(v));
  };
  u32("block_count", c.num_layers);
  u32("context_length", c.max_position_embeddings > 0 ? c.max_position_embeddings : 2048);
  u32("embedding_length", c.hidden_size);
  u32("feed_forward_length", c.intermediate_size);
  u32("attention.head_count", c.num_heads);
  u32("attention.head_count_kv", c.num_kv_heads);
  if (c.rope.type == RopeType::kLinear && c.rope.factor) {
    m.SetString(p + "rope.scaling.type", "linear");
    m.SetFloat32(p + "rope.scaling.factor", static_cast<float>(*c.rope.factor));
  }
  m.SetFloat32(p + "rope.freq_base", static_cast<float>(c.rope.theta));
  m.SetFloat32(p + "attention.layer_norm_rms_epsilon", c.rms_norm_eps);
  u32("attention.key_length", c.head_dim);
  u32("attention.value_length", c.head_dim);
  m.SetUint32("general.file_type", 0);
  u32("vocab_size", c.vocab_size);
  u32("rope.dimension_count", c.head_dim);
  m.SetUint32("general.quantization_version", 2);
  add_vocabulary(dir, config_json, c.vocab_size, m);

  if (c.rope.type == RopeType::kLlama3) {
    const std::vector<float> divisors = Llama3RopeDivisors(c.rope, c.head_dim);
    GgufSourceTensor t{.name = "rope_freqs.weight", .dims = {divisors.size()}};
    t.owned = FloatBytes(divisors);
    t.data = t.owned->data();
    t.bytes = t.owned->size();
    source.tensors.push_back(std::move(t));
  }
  for (const std::string& hf_name : model->weights.Names()) {
    if (hf_name.ends_with(".rotary_emb.inv_freq")) continue;
    const TensorInfo& info = model->weights.Get(hf_name);
    const std::optional<std::string> gguf_name = HfToGgufTensorName(hf_name);
    if (!gguf_name) {
      Fail("quantize", "{}: tensor \"{}\" has no name in llama.cpp's llama architecture",
           dir.string(), hf_name);
    }
    if (info.type != DType::kF32 && info.type != DType::kF16 && info.type != DType::kBF16) {
      Fail("quantize", "{}: tensor \"{}\" is {} (expected f32, f16 or bf16)", dir.string(), hf_name,
           Name(info.type));
    }
    GgufSourceTensor t{.name = *gguf_name,
                       .type = DType::kF32,
                       .data_type = info.type,
                       .data = info.data,
                       .bytes = info.bytes};
    for (auto d = info.shape.rbegin(); d != info.shape.rend(); ++d) {
      t.dims.push_back(static_cast<uint64_t>(*d));
    }
    const bool q = hf_name.find(".self_attn.q_proj.") != std::string::npos;
    const bool k = hf_name.find(".self_attn.k_proj.") != std::string::npos;
    if (q || k) {
      const int heads = q ? c.num_heads : c.num_kv_heads;
      const int64_t rows = info.shape.at(0);
      if (rows % heads != 0 || (rows / heads) % 2 != 0) {
        Fail("quantize", "{}: tensor \"{}\" has {} rows, not {} heads of an even size",
             dir.string(), hf_name, rows, heads);
      }
      t.permute_heads = heads;
      if (info.shape.size() == 1) {  // a bias: permute its values now
        std::vector<float> values(rows);
        for (int64_t r = 0; r < rows; ++r) {
          values[r] = FloatElement(info.type, info.data, HfRowOfGgufRow(r, rows / heads));
        }
        t.owned = FloatBytes(values);
        t.data = t.owned->data();
        t.bytes = t.owned->size();
        t.data_type = DType::kF32;
        t.permute_heads = 0;
      }
    }
    source.tensors.push_back(std::move(t));
  }
  source.keep_alive = std::move(model);
  return source;
}

}  // namespace

GgufSource OpenGgufSource(const std::string& model_spec, const AddGgufVocabulary& add_vocabulary) {
  const LocatedModel located = LocateModel(model_spec);
  return located.format == ModelFormat::kGguf ? FromGgufFile(located.path)
                                              : FromCheckpoint(located.path, add_vocabulary);
}

}  // namespace proctor
