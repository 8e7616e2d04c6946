// Model summaries for `proctor inspect MODEL` (see model_summary.h).
#include "model/model_summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "formats/gguf.h"
#include "model/gguf_recipe.h"
#include "model/mlx_weights.h"
#include "ops/linear_weight.h"

namespace proctor {
namespace {

// "<base>" of "<base>.<suffix>", or "" when name does not end in "." + suffix.
std::string BaseOf(const std::string& name, std::string_view suffix) {
  const std::string tail = "." + std::string(suffix);
  if (name.size() <= tail.size() || !name.ends_with(tail)) return "";
  return name.substr(0, name.size() - tail.size());
}

std::string Bytes(uint64_t bytes) {
  if (bytes >= 1000ull * 1000 * 1000) return fmt::format("{:.2f} GB", bytes / 1e9);
  if (bytes >= 1000ull * 1000) return fmt::format("{:.1f} MB", bytes / 1e6);
  if (bytes >= 1000ull) return fmt::format("{:.1f} kB", bytes / 1e3);
  return fmt::format("{} B", bytes);
}

std::string Count(int64_t n) {
  if (n >= 1000000000) return fmt::format("{:.2f} B", n / 1e9);
  if (n >= 1000000) return fmt::format("{:.1f} M", n / 1e6);
  if (n >= 1000) return fmt::format("{:.1f} k", n / 1e3);
  return fmt::format("{}", n);
}

// One logical tensor: an MLX matrix's packed codes stand for the triple (its scales and biases
// fold into it).
struct LogicalTensor {
  std::string type;
  int64_t parameters = 0;
  uint64_t bytes = 0;
};

// The MLX scales / biases that fold into their matrix.
std::set<std::string> FoldedNames(const WeightStore& w, const std::optional<MlxQuantization>& q) {
  std::set<std::string> folded;
  for (const std::string& name : w.Names()) {
    const std::string base = BaseOf(name, "weight");
    if (base.empty() || !MlxModuleParams(w, q, base)) continue;
    folded.insert(base + ".scales");
    folded.insert(base + ".biases");
  }
  return folded;
}

LogicalTensor Logical(const WeightStore& w, const std::optional<MlxQuantization>& q,
                      const std::string& name) {
  const TensorInfo& info = w.Get(name);
  LogicalTensor t{
      .type = std::string(Name(info.type)), .parameters = info.NumElements(), .bytes = info.bytes};
  const std::string base = BaseOf(name, "weight");
  if (base.empty()) return t;
  if (const std::optional<MlxQuantParams> p = MlxModuleParams(w, q, base)) {
    t.type = ops::MlxTypeName(p->mode, p->bits, p->group_size);
    t.parameters = info.shape.size() == 2 ? info.shape[0] * (info.shape[1] * 32 / p->bits) : 0;
    for (const char* side : {".scales", ".biases"}) {
      if (const TensorInfo* s = w.Find(base + side)) t.bytes += s->bytes;
    }
  }
  return t;
}

}  // namespace

bool IsModelParameter(const ModelConfig& config, std::string_view tensor_name) {
  if (tensor_name == "rope_freqs.weight") return false;
  if (tensor_name.ends_with(".rotary_emb.inv_freq")) return false;
  return !(tensor_name == "lm_head.weight" && config.tie_word_embeddings);
}

int64_t CountModelParameters(const ModelConfig& config, const WeightStore& weights) {
  const std::set<std::string> folded = FoldedNames(weights, config.mlx_quantization);
  int64_t n = 0;
  for (const std::string& name : weights.Names()) {
    if (folded.contains(name) || !IsModelParameter(config, name)) continue;
    n += Logical(weights, config.mlx_quantization, name).parameters;
  }
  return n;
}

ModelSummary SummarizeModel(const LoadedModel& model) {
  ModelSummary s;
  s.spec = model.spec;
  s.source = model.source.string();
  s.format = model.format == ModelFormat::kGguf ? "gguf" : "safetensors";
  if (model.gguf != nullptr) {
    if (const std::optional<int64_t> type = model.gguf->FindInt("general.file_type")) {
      s.gguf_file_type = fmt::format("type {}", *type);
      for (const GgufFileType& t : GgufFileTypes()) {
        if (t.llama_ftype == *type) s.gguf_file_type = std::string(t.name);
      }
    }
  }
  s.config = model.config;
  const WeightStore& w = model.weights;
  const std::optional<MlxQuantization>& q = model.config.mlx_quantization;
  std::map<std::string, WeightTypeStats> by_type;
  std::set<std::string> files;
  const std::set<std::string> folded = FoldedNames(w, q);
  for (const std::string& name : w.Names()) {
    const TensorInfo& info = w.Get(name);
    ++s.file_tensors;
    s.weight_bytes += info.bytes;
    s.resident_bytes += info.bytes;
    if (info.file != "<memory>") files.insert(info.file);
    if (folded.count(name)) continue;
    if (!IsModelParameter(model.config, name)) {
      s.non_parameters.push_back(name);
      s.non_parameter_bytes += info.bytes;
      continue;
    }
    const LogicalTensor t = Logical(w, q, name);
    WeightTypeStats& stats = by_type[t.type];
    stats.type = t.type;
    ++stats.tensors;
    stats.parameters += t.parameters;
    stats.bytes += t.bytes;
    ++s.tensors;
    s.parameters += t.parameters;
  }
  // A GGUF's stacked experts are one tensor in the file and one per expert in the store.
  if (model.gguf != nullptr) s.file_tensors = static_cast<int64_t>(model.gguf->tensors().size());
  for (const std::string& file : files) {
    std::error_code ec;
    const uintmax_t size = std::filesystem::file_size(file, ec);
    if (!ec) s.disk_bytes += size;
    ++s.files;
  }
  s.f32_bytes = static_cast<uint64_t>(s.parameters) * 4;
  for (auto& [type, stats] : by_type) s.types.push_back(stats);
  std::stable_sort(s.types.begin(), s.types.end(),
                   [](const auto& a, const auto& b) { return a.bytes > b.bytes; });
  return s;
}

std::string FormatModelSummary(const ModelSummary& s) {
  const ModelConfig& c = s.config;
  std::string out = fmt::format("model {} ({})\n", s.source, s.format);
  out += fmt::format("  architecture     {} (model_type {})\n", ArchName(c.arch), c.model_type);
  if (!s.gguf_file_type.empty()) {
    out += fmt::format("  file type        {} (general.file_type; llama.cpp's name)\n",
                       s.gguf_file_type);
  }
  out += fmt::format("  layers           {}\n", c.num_layers);
  out += fmt::format("  hidden           {} (heads {} / kv {}, head_dim {}, ff {})\n",
                     c.hidden_size, c.num_heads, c.num_kv_heads, c.head_dim, c.intermediate_size);
  out += fmt::format("  vocab            {}{}\n", c.vocab_size,
                     c.tie_word_embeddings ? " (tied embeddings)" : "");
  out += fmt::format("  tensors          {} ({} in the files)\n", s.tensors, s.file_tensors);
  out += fmt::format("  parameters       {} ({})\n", Count(s.parameters), s.parameters);
  out += "  weight types\n";
  size_t width = 0;
  for (const auto& t : s.types) width = std::max(width, t.type.size());
  for (const auto& t : s.types) {
    out += fmt::format("    {:<{}}  {:>5} tensors  {:>9} params  {:>6.3f} bits/weight  {:>10}\n",
                       t.type, width, t.tensors, Count(t.parameters), t.BitsPerWeight(),
                       Bytes(t.bytes));
  }
  if (!s.non_parameters.empty()) {
    std::string names;
    for (const auto& n : s.non_parameters) names += (names.empty() ? "" : ", ") + n;
    out += fmt::format(
        "  also stored      {} ({}; not parameters: a tied LM head's copy or a buffer)\n", names,
        Bytes(s.non_parameter_bytes));
  }
  out +=
      fmt::format("  bits per weight  {:.3f} (every stored tensor, scales and biases included)\n",
                  s.BitsPerWeight());
  out += fmt::format("  size on disk     {} ({} bytes in {} weight file{})\n", Bytes(s.disk_bytes),
                     s.disk_bytes, s.files, s.files == 1 ? "" : "s");
  out += fmt::format("  in memory        {} ({} bytes of weights, used as stored; as f32: {})\n",
                     Bytes(s.resident_bytes), s.resident_bytes, Bytes(s.f32_bytes));
  return out;
}

nlohmann::json ModelSummaryToJson(const ModelSummary& s) {
  const ModelConfig& c = s.config;
  nlohmann::json types = nlohmann::json::array();
  for (const auto& t : s.types) {
    types.push_back({{"type", t.type},
                     {"tensors", t.tensors},
                     {"parameters", t.parameters},
                     {"bytes", t.bytes},
                     {"bits_per_weight", t.BitsPerWeight()}});
  }
  return {{"model", s.spec},
          {"source", s.source},
          {"format", s.format},
          {"gguf_file_type", s.gguf_file_type},
          {"architecture", std::string(ArchName(c.arch))},
          {"model_type", c.model_type},
          {"layers", c.num_layers},
          {"hidden_size", c.hidden_size},
          {"num_heads", c.num_heads},
          {"num_kv_heads", c.num_kv_heads},
          {"head_dim", c.head_dim},
          {"intermediate_size", c.intermediate_size},
          {"vocab_size", c.vocab_size},
          {"tie_word_embeddings", c.tie_word_embeddings},
          {"tensors", s.tensors},
          {"file_tensors", s.file_tensors},
          {"parameters", s.parameters},
          {"non_parameters", s.non_parameters},
          {"non_parameter_bytes", s.non_parameter_bytes},
          {"types", types},
          {"bits_per_weight", s.BitsPerWeight()},
          {"weight_bytes", s.weight_bytes},
          {"disk_bytes", s.disk_bytes},
          {"weight_files", s.files},
          {"resident_bytes", s.resident_bytes},
          {"f32_bytes", s.f32_bytes}};
}

}  // namespace proctor
