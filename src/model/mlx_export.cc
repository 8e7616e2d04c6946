// `proctor quantize` core: plans which tensors are quantized, streams the quantized safetensors
// into a temporary directory and renames it into place (see mlx_export.h).
#include "model/mlx_export.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <map>
#include <memory>

#include "formats/family_traits.h"
#include "formats/gguf_model.h"
#include "formats/safetensors_writer.h"
#include "model/load.h"
#include "model/model_summary.h"
#include "model/quant_recipe.h"
#include "ops/convert.h"
#include "util/error.h"
#include "util/file.h"
#include "util/json_file.h"
#include "util/thread_pool.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;
using quant::MlxMode;

// Files copied unchanged from a safetensors source directory (when present).
constexpr const char* kCopiedFiles[] = {"tokenizer.json",
                                        "tokenizer_config.json",
                                        "special_tokens_map.json",
                                        "generation_config.json",
                                        "chat_template.jinja",
                                        "chat_template.json",
                                        "tokenizer.model",
                                        "vocab.json",
                                        "merges.txt",
                                        "added_tokens.json"};

// One source tensor and what becomes of it.
struct PlannedTensor {
  const TensorInfo* source = nullptr;
  std::string module;  // name without ".weight" / ".bias"
  MlxTensorResult result;
  int permute_heads = 0;  // > 0: GGUF llama Q/K rows to put back in HF order
  int head_dim = 0;
  // A routed expert's matrix, written with its layer's other experts as one stacked tensor,
  // mlx-lm's <moe>.switch_mlp.<gate_proj|up_proj|down_proj> ([experts, ...]; StackExperts).
  // Expert 0's plan lists the stack's members in expert order.
  std::string stack_module;  // empty: written on its own
  std::vector<size_t> stack_members;
};

std::string ModulePath(const std::string& name) {
  const size_t dot = name.rfind('.');
  return dot == std::string::npos ? name : name.substr(0, dot);
}

void RefuseQuantizedSource(const LoadedModel& model) {
  for (const std::string& name : model.weights.Names()) {
    const TensorInfo& t = model.weights.Get(name);
    if (name.ends_with(".scales") || name.ends_with(".biases")) {
      Fail("quantize",
           "{}: the source is already quantized (it has \"{}\"); quantize a "
           "full-precision model",
           model.source.string(), name);
    }
    if (!Info(t.type).is_float && (name.ends_with(".weight") || t.type == DType::kU32)) {
      Fail("quantize",
           "{}: the source is already quantized (tensor \"{}\" is {}, expected f32, "
           "f16 or bf16); quantize a full-precision model",
           model.source.string(), name, Name(t.type));
    }
  }
}

void CheckOutputDir(const fs::path& out_dir) {
  std::error_code ec;
  if (!fs::exists(out_dir, ec)) return;
  if (!fs::is_directory(out_dir, ec)) {
    Fail("quantize", "--out {}: exists and is not a directory", out_dir.string());
  }
  if (!fs::is_empty(out_dir, ec)) {
    Fail("quantize",
         "--out {}: exists and is not empty (choose a new directory; nothing is "
         "overwritten)",
         out_dir.string());
  }
}

// Removes the temporary directory unless released.
class TempDirGuard {
 public:
  explicit TempDirGuard(fs::path path) : path_(std::move(path)) {}
  ~TempDirGuard() {
    if (!path_.empty()) {
      std::error_code ec;
      fs::remove_all(path_, ec);
    }
  }
  void Release() { path_.clear(); }

 private:
  fs::path path_;
};

std::vector<PlannedTensor> Plan(const LoadedModel& model, const MlxQuantizeOptions& opt,
                                const std::optional<QuantRecipe>& recipe) {
  const ModelConfig& c = model.config;
  const bool gguf_llama = model.format == ModelFormat::kGguf && c.rope_adjacent_pairs;
  std::vector<PlannedTensor> plan;
  for (const std::string& name : model.weights.Names()) {
    // Buffers and a tied head's copy (GGUF llama3 rope factors go into config.json instead).
    if (!IsModelParameter(c, name)) continue;
    const TensorInfo& t = model.weights.Get(name);
    PlannedTensor p;
    p.source = &t;
    p.module = ModulePath(name);
    MlxTensorResult& r = p.result;
    r.name = name;
    r.parameters = t.NumElements();
    r.source_bytes = t.bytes;
    if (gguf_llama &&
        (p.module.ends_with("self_attn.q_proj") || p.module.ends_with("self_attn.k_proj"))) {
      p.permute_heads = p.module.ends_with("q_proj") ? c.num_heads : c.num_kv_heads;
      p.head_dim = c.head_dim;
      if (t.shape.empty() || t.shape[0] != int64_t{p.permute_heads} * c.head_dim) {
        Fail("quantize", "{}: \"{}\" has shape {}, expected {} rows ({} heads x {})",
             model.source.string(), name, ShapeString(t.shape),
             int64_t{p.permute_heads} * c.head_dim, p.permute_heads, c.head_dim);
      }
    }
    r.quantizable =
        name.ends_with(".weight") && t.shape.size() == 2 && IsQuantizableModule(p.module);
    if (r.quantizable && t.type != DType::kF32 && t.type != DType::kF16 && t.type != DType::kBF16) {
      Fail("quantize", "{}: \"{}\" is {}; proctor quantize reads f32, f16 or bf16 weights",
           model.source.string(), name, Name(t.type));
    }
    if (r.quantizable) {
      const int64_t in = t.shape[1];
      auto skip = std::find_if(
          opt.skip_patterns.begin(), opt.skip_patterns.end(),
          [&](const std::string& pat) { return GlobMatch(pat, p.module) || GlobMatch(pat, name); });
      if (skip != opt.skip_patterns.end()) {
        r.kept_reason = fmt::format("matches --skip {}", *skip);
      } else if (in % opt.group_size != 0) {
        r.kept_reason = fmt::format(
            "input width {} is not a multiple of the group size {} (kept in {}, as mlx-lm and "
            "llama.cpp leave such tensors)",
            in, opt.group_size, Name(t.type));
      } else {
        r.quantized = true;
        r.group_size = opt.group_size;
        r.bits = recipe ? RecipeBits(*recipe, p.module, c.num_layers) : opt.bits;
      }
    }
    plan.push_back(std::move(p));
  }
  return plan;
}

// "model.layers.L.<moe>.experts.E.<matrix>" -> {"model.layers.L.<moe>.switch_mlp.<mlx-lm name>",
// E} for a family's routed expert matrices; nullopt for any other module.
std::optional<std::pair<std::string, int>> ExpertStack(const ModelConfig& c,
                                                       std::string_view module) {
  const LayerTensorNames& names = FamilyOf(c.arch).tensors;
  const std::string marker = fmt::format(".{}.experts.", names.moe);
  const size_t at = module.find(marker);
  if (!module.starts_with("model.layers.") || at == std::string_view::npos) return std::nullopt;
  const std::string_view rest = module.substr(at + marker.size());
  const size_t dot = rest.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  int expert = 0;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + dot, expert);
  if (ec != std::errc() || end != rest.data() + dot) return std::nullopt;
  const std::string_view matrix = rest.substr(dot + 1);
  const std::string_view stacked = matrix == names.expert_gate   ? "gate_proj"
                                   : matrix == names.expert_up   ? "up_proj"
                                   : matrix == names.expert_down ? "down_proj"
                                                                 : "";
  if (stacked.empty()) return std::nullopt;
  return std::pair{fmt::format("{}.{}.switch_mlp.{}", module.substr(0, at), names.moe, stacked),
                   expert};
}

// Groups the routed experts' matrices into mlx-lm's stacked tensors (what mlx-lm's conversion
// writes and every mlx-lm MoE model reads, quantized or not). A stack needs one setting for all
// its experts: the same shape, type and quantization (Error naming the two that differ).
void StackExperts(const LoadedModel& model, std::vector<PlannedTensor>& plan) {
  const ModelConfig& c = model.config;
  if (c.moe.num_experts == 0) return;
  std::map<std::string, std::vector<size_t>> stacks;  // module -> plan index per expert
  for (size_t i = 0; i < plan.size(); ++i) {
    if (!plan[i].source->name.ends_with(".weight")) continue;
    const auto stack = ExpertStack(c, plan[i].module);
    if (!stack) continue;
    std::vector<size_t>& members = stacks[stack->first];
    members.resize(static_cast<size_t>(c.moe.num_experts), plan.size());
    if (stack->second >= c.moe.num_experts) continue;  // not an expert of this model
    members[static_cast<size_t>(stack->second)] = i;
    plan[i].stack_module = stack->first;
  }
  for (auto& [module, members] : stacks) {
    const PlannedTensor& first = plan[members[0]];
    for (const size_t i : members) {
      if (i == plan.size()) {
        Fail("quantize", "{}: {} lacks an expert (the model has {})", model.source.string(), module,
             c.moe.num_experts);
      }
      const PlannedTensor& p = plan[i];
      const MlxTensorResult &a = first.result, &b = p.result;
      if (p.source->shape != first.source->shape || p.source->type != first.source->type ||
          a.quantized != b.quantized || a.bits != b.bits || a.group_size != b.group_size) {
        Fail("quantize",
             "{}: \"{}\" and \"{}\" would be written differently ({} {} {}, {} {} {}); mlx-lm's "
             "stacked experts ({}) need one setting per layer",
             model.source.string(), first.source->name, p.source->name, Name(first.source->type),
             ShapeString(first.source->shape), a.quantized ? fmt::format("{}-bit", a.bits) : "kept",
             Name(p.source->type), ShapeString(p.source->shape),
             b.quantized ? fmt::format("{}-bit", b.bits) : "kept", module);
      }
    }
    plan[members[0]].stack_members = members;
  }
}

DType ScaleType(const PlannedTensor& p, MlxMode mode) {
  return mode == MlxMode::kAffine ? p.source->type : DType::kU8;
}

// The tensors written for `p`: its own, or (expert 0 of a stack) the stack's, [experts, ...];
// none for the stack's other experts.
std::vector<SafetensorsTensorSpec> OutputSpecs(const PlannedTensor& p, MlxMode mode) {
  const TensorInfo& t = *p.source;
  if (!p.stack_module.empty() && p.stack_members.empty()) return {};
  const std::string module = p.stack_module.empty() ? p.module : p.stack_module;
  std::vector<int64_t> outer;
  if (!p.stack_members.empty()) outer.push_back(static_cast<int64_t>(p.stack_members.size()));
  const auto shape = [&](std::vector<int64_t> inner) {
    inner.insert(inner.begin(), outer.begin(), outer.end());
    return inner;
  };
  if (!p.result.quantized) {
    return {{p.stack_module.empty() ? t.name : module + ".weight", t.type, shape(t.shape)}};
  }
  const int64_t rows = t.shape[0], cols = t.shape[1];
  const int bits = p.result.bits, group = p.result.group_size;
  std::vector<SafetensorsTensorSpec> specs = {
      {module + ".weight", DType::kU32, shape({rows, cols * bits / 32})},
      {module + ".scales", ScaleType(p, mode), shape({rows, cols / group})}};
  if (mode == MlxMode::kAffine) {
    specs.push_back({module + ".biases", ScaleType(p, mode), shape({rows, cols / group})});
  }
  return specs;
}

// Quantizes a whole tensor, rows in parallel (each row is independent, so the result does not
// depend on the thread count), decoding at most kChunkRows source rows at a time per thread.
quant::MlxQuantizedTensor QuantizeTensor(const WeightStore& weights, const PlannedTensor& p,
                                         MlxMode mode) {
  const MatView w = weights.Matrix(p.source->name);
  const int64_t rows = w.rows, cols = w.cols;
  const int bits = p.result.bits, group = p.result.group_size;
  const DType scale_type = ScaleType(p, mode);
  quant::MlxQuantizedTensor out;
  out.mode = mode;
  out.bits = bits;
  out.group_size = group;
  out.packed = Tensor(DType::kU32, rows, cols * bits / 32);
  out.scales = Tensor(scale_type, rows, cols / group);
  if (mode == MlxMode::kAffine) out.biases = Tensor(scale_type, rows, cols / group);
  constexpr int64_t kChunkRows = 64;
  ThreadPool::Global().ParallelForGrain(
      static_cast<size_t>(rows), kChunkRows, [&](size_t begin, size_t end, int) {
        std::vector<float> chunk;  // [n, cols] f32 source rows
        for (int64_t r0 = static_cast<int64_t>(begin); r0 < static_cast<int64_t>(end);
             r0 += kChunkRows) {
          const int64_t n = std::min<int64_t>(kChunkRows, static_cast<int64_t>(end) - r0);
          chunk.resize(static_cast<size_t>(n * cols));
          for (int64_t i = 0; i < n; ++i) {
            const int64_t src_row =
                p.permute_heads > 0 ? GgufRowOfHfRow(r0 + i, p.head_dim) : r0 + i;
            ops::DecodeRowSegment(w, src_row, 0, cols, chunk.data() + i * cols);
          }
          const quant::MlxQuantizedTensor q =
              quant::QuantizeMlx(chunk.data(), n, cols, mode, bits, group, p.source->type);
          auto copy_rows = [&](const Tensor& from, Tensor& to) {
            if (to.rows() == 0) return;
            const size_t row_bytes = to.View().RowBytes();
            std::memcpy(to.bytes() + static_cast<size_t>(r0) * row_bytes, from.bytes(),
                        static_cast<size_t>(n) * row_bytes);
          };
          copy_rows(q.packed, out.packed);
          copy_rows(q.scales, out.scales);
          copy_rows(q.biases, out.biases);
        }
      });
  return out;
}

// Streams tensors in sorted-name order: a quantized module's .biases/.scales/.weight are
// adjacent in that order, so the module is quantized once (when its first part is asked for).
class TensorProducer {
 public:
  TensorProducer(const LoadedModel& model, std::vector<PlannedTensor>& plan,
                 const MlxQuantizeOptions& opt)
      : model_(model), plan_(plan), opt_(opt) {
    for (size_t i = 0; i < plan_.size(); ++i) {
      for (const SafetensorsTensorSpec& s : OutputSpecs(plan_[i], opt_.mode)) {
        owner_[s.name] = i;
        specs_.push_back(s);
      }
    }
  }
  const std::vector<SafetensorsTensorSpec>& specs() const { return specs_; }

  void Fill(const SafetensorsTensorSpec& spec, const TensorByteSink& sink) {
    const size_t index = owner_.at(spec.name);
    const std::vector<size_t>& stack = plan_[index].stack_members;
    if (stack.empty()) {
      FillPart(index, spec, spec.Bytes(), sink);
      return;
    }
    // A stack: each expert's part in turn, the quantized experts kept until the stack is done.
    if (cached_stack_ != index) {
      cached_stack_ = index;
      stack_cache_.clear();
    }
    for (const size_t member : stack) FillPart(member, spec, spec.Bytes() / stack.size(), sink);
  }

 private:
  // Plan `index`'s part of `spec` (the whole of it, or one expert's slice of a stack).
  void FillPart(size_t index, const SafetensorsTensorSpec& spec, uint64_t bytes,
                const TensorByteSink& sink) {
    PlannedTensor& p = plan_[index];
    if (index != announced_) {
      announced_ = index;
      if (opt_.on_tensor) opt_.on_tensor(p.result.name, ++announced_count_, plan_.size());
    }
    p.result.output_bytes += bytes;
    if (!p.result.quantized) {
      CopyTensor(p, sink);
      return;
    }
    quant::MlxQuantizedTensor* q = nullptr;
    if (p.stack_module.empty()) {
      if (cached_index_ != index) {
        cached_ = QuantizeTensor(model_.weights, p, opt_.mode);
        cached_index_ = index;
      }
      q = &cached_;
    } else {
      auto it = stack_cache_.find(index);
      if (it == stack_cache_.end()) {
        it = stack_cache_.emplace(index, QuantizeTensor(model_.weights, p, opt_.mode)).first;
      }
      q = &it->second;
    }
    const Tensor& part = spec.name.ends_with(".weight")   ? q->packed
                         : spec.name.ends_with(".scales") ? q->scales
                                                          : q->biases;
    sink(std::span<const uint8_t>(part.bytes(), part.size_bytes()));
  }

  void CopyTensor(const PlannedTensor& p, const TensorByteSink& sink) {
    const TensorInfo& t = *p.source;
    if (p.permute_heads == 0) {
      sink(std::span<const uint8_t>(t.data, t.bytes));
      return;
    }
    const int64_t rows = t.shape[0];
    const size_t row_bytes = t.bytes / static_cast<size_t>(rows);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t src = GgufRowOfHfRow(r, p.head_dim);
      sink(std::span<const uint8_t>(t.data + static_cast<size_t>(src) * row_bytes, row_bytes));
    }
  }

  const LoadedModel& model_;
  std::vector<PlannedTensor>& plan_;
  const MlxQuantizeOptions& opt_;
  std::map<std::string, size_t> owner_;
  std::vector<SafetensorsTensorSpec> specs_;
  size_t announced_ = static_cast<size_t>(-1);
  size_t announced_count_ = 0;
  size_t cached_index_ = static_cast<size_t>(-1);
  quant::MlxQuantizedTensor cached_;
  size_t cached_stack_ = static_cast<size_t>(-1);
  std::map<size_t, quant::MlxQuantizedTensor> stack_cache_;  // plan index -> quantized expert
};

// Writes the shards and model.safetensors.index.json into dir; returns the tensor bytes.
uint64_t WriteWeights(const fs::path& dir, TensorProducer& producer, uint64_t max_shard_bytes,
                      int64_t total_parameters) {
  std::vector<SafetensorsTensorSpec> specs = producer.specs();
  std::sort(specs.begin(), specs.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  std::vector<std::vector<SafetensorsTensorSpec>> shards(1);
  uint64_t shard_bytes = 0, total = 0;
  for (const SafetensorsTensorSpec& s : specs) {
    const uint64_t bytes = s.Bytes();
    if (!shards.back().empty() && shard_bytes + bytes > max_shard_bytes) {
      shards.emplace_back();
      shard_bytes = 0;
    }
    shards.back().push_back(s);
    shard_bytes += bytes;
    total += bytes;
  }
  nlohmann::json weight_map = nlohmann::json::object();
  for (size_t i = 0; i < shards.size(); ++i) {
    const std::string file = shards.size() == 1 ? std::string("model.safetensors")
                                                : fmt::format("model-{:05d}-of-{:05d}.safetensors",
                                                              i + 1, shards.size());
    WriteSafetensors(dir / file, shards[i], {{"format", "mlx"}},
                     [&](const SafetensorsTensorSpec& spec, const TensorByteSink& sink) {
                       producer.Fill(spec, sink);
                     });
    for (const SafetensorsTensorSpec& s : shards[i]) weight_map[s.name] = file;
  }
  const nlohmann::json index = {
      {"metadata", {{"total_size", total}, {"total_parameters", total_parameters}}},
      {"weight_map", weight_map}};
  WriteFileAtomic(dir / "model.safetensors.index.json", index.dump(4) + "\n");
  return total;
}

// config.json's quantization block as mlx-lm 0.32 writes it: the run's group size, bits and mode
// (with a recipe, the bits asked for, else mlx-lm's default 4), then one entry per module that a
// recipe quantizes or --skip keeps.
nlohmann::json QuantizationBlock(const std::vector<PlannedTensor>& plan,
                                 const MlxQuantizeOptions& opt, int asked_bits) {
  const int top_bits = opt.recipe.empty() ? opt.bits : asked_bits != 0 ? asked_bits : 4;
  nlohmann::json q = {{"group_size", opt.group_size},
                      {"bits", top_bits},
                      {"mode", std::string(quant::MlxModeName(opt.mode))}};
  for (const PlannedTensor& p : plan) {
    const MlxTensorResult& r = p.result;
    if (!r.quantizable) continue;
    if (!p.stack_module.empty() && p.stack_members.empty()) continue;  // the stack's entry
    const std::string& module = p.stack_module.empty() ? p.module : p.stack_module;
    if (!r.quantized && r.kept_reason.starts_with("matches --skip")) {
      q[module] = false;
    } else if (r.quantized && !opt.recipe.empty()) {
      // mlx-lm records the predicate's dict for every module a recipe quantizes.
      q[module] = {{"group_size", r.group_size},
                   {"bits", r.bits},
                   {"mode", std::string(quant::MlxModeName(opt.mode))}};
    }
  }
  return q;
}

}  // namespace

MlxQuantizeOptions ResolveMlxQuantizeOptions(const MlxQuantizeOptions& options) {
  MlxQuantizeOptions o = options;
  std::optional<QuantRecipe> recipe;
  if (!o.recipe.empty()) {
    recipe = FindQuantRecipe(o.recipe);
    if (!recipe) {
      Fail("quantize", "unknown recipe \"{}\" (known: {})", o.recipe, QuantRecipeNames());
    }
    if (o.mode != MlxMode::kAffine) {
      Fail("quantize", "recipe {} needs --mode affine, got {} (mlx-lm's recipes are affine only)",
           o.recipe, quant::MlxModeName(o.mode));
    }
    if (o.bits != 0 && o.bits != recipe->low_bits) {
      Fail("quantize",
           "--bits {} contradicts recipe {} ({} bits, {} for the sensitive layers); "
           "leave --bits out",
           o.bits, o.recipe, recipe->low_bits, recipe->high_bits);
    }
    o.bits = recipe->low_bits;
  }
  const int default_bits = o.mode == MlxMode::kMxfp8 ? 8 : 4;
  const int default_group = o.mode == MlxMode::kAffine ? 64 : o.mode == MlxMode::kNvfp4 ? 16 : 32;
  if (o.bits == 0) o.bits = default_bits;
  if (o.group_size == 0) o.group_size = default_group;
  quant::CheckMlxParams(o.mode, o.bits, o.group_size,
                        fmt::format("proctor quantize --mode {} --bits {} --group-size {}",
                                    quant::MlxModeName(o.mode), o.bits, o.group_size));
  if (o.max_shard_bytes == 0) Fail("quantize", "max_shard_bytes should be positive");
  return o;
}

MlxQuantizeReport QuantizeModelToMlx(const std::string& source_spec, const fs::path& out_arg,
                                     const MlxQuantizeOptions& options) {
  // "dir/" names the same directory as "dir".
  const fs::path out_dir = out_arg.has_filename() ? out_arg : out_arg.parent_path();
  if (out_dir.empty()) Fail("quantize", "--out is empty");
  const MlxQuantizeOptions opt = ResolveMlxQuantizeOptions(options);
  const std::optional<QuantRecipe> recipe =
      opt.recipe.empty() ? std::nullopt : FindQuantRecipe(opt.recipe);
  CheckOutputDir(out_dir);
  // A config.json quantization block is refused before the weights are even mapped.
  const LocatedModel located = LocateModel(source_spec);
  nlohmann::json config_json;
  if (located.format == ModelFormat::kSafetensors) {
    const fs::path config_path = located.path / "config.json";
    config_json = ReadJsonFile(config_path, "quantize");
    for (const char* key : {"quantization", "quantization_config"}) {
      if (config_json.is_object() && config_json.contains(key)) {
        Fail("quantize",
             "{}: the source is already quantized (config.json has \"{}\": {}); "
             "quantize a full-precision model",
             config_path.string(), key, config_json[key].dump());
      }
    }
  }
  const LoadedModel model = LoadModel(source_spec);
  RefuseQuantizedSource(model);
  if (located.format == ModelFormat::kGguf) config_json = HfConfigJsonFor(model);

  std::vector<PlannedTensor> plan = Plan(model, opt, recipe);
  StackExperts(model, plan);
  MlxQuantizeReport report;
  for (const std::string& pattern : opt.skip_patterns) {
    const bool used = std::any_of(plan.begin(), plan.end(), [&](const PlannedTensor& p) {
      return p.result.quantizable &&
             (GlobMatch(pattern, p.module) || GlobMatch(pattern, p.result.name));
    });
    if (!used) {
      report.notes.push_back(
          fmt::format("--skip {} matched no quantizable module (paths look like "
                      "model.layers.0.mlp.down_proj, lm_head, model.embed_tokens)",
                      pattern));
    }
  }
  report.source = model.source;
  report.out_dir = out_dir;
  report.mode = opt.mode;
  report.bits = opt.bits;
  report.group_size = opt.group_size;
  report.recipe = opt.recipe;

  // Build everything in a hidden sibling directory, then rename it into place.
  const fs::path parent = out_dir.has_parent_path() ? out_dir.parent_path() : fs::path(".");
  fs::create_directories(parent);
  const fs::path temp = parent / fmt::format(".{}.tmp-{}", out_dir.filename().string(), getpid());
  fs::remove_all(temp);
  fs::create_directory(temp);
  TempDirGuard guard(temp);

  int64_t total_parameters = 0;
  for (const PlannedTensor& p : plan) total_parameters += p.result.parameters;
  TensorProducer producer(model, plan, opt);
  report.tensor_bytes = WriteWeights(temp, producer, opt.max_shard_bytes, total_parameters);

  const nlohmann::json qblock = QuantizationBlock(plan, opt, options.bits);
  config_json["quantization"] = qblock;
  config_json["quantization_config"] = qblock;
  WriteFileAtomic(temp / "config.json", config_json.dump(4) + "\n");
  if (located.format == ModelFormat::kSafetensors) {
    for (const char* file : kCopiedFiles) {
      const fs::path from = located.path / file;
      if (!fs::is_regular_file(from)) continue;
      fs::copy_file(from, temp / file);
      report.copied_files.push_back(file);
    }
  }
  for (const auto& [name, contents] : opt.extra_files) {
    WriteFileAtomic(temp / name, contents);
    report.copied_files.push_back(name);
  }
  if (located.format == ModelFormat::kGguf && opt.extra_files.empty()) {
    report.notes.push_back(fmt::format(
        "GGUF source: no tokenizer files were written{} (the vocabulary stays in the .gguf: give "
        "text verbs --tokenizer with it)",
        opt.no_tokenizer_reason.empty() ? "" : ": " + opt.no_tokenizer_reason));
  }
  for (const auto& entry : fs::directory_iterator(temp)) report.output_bytes += entry.file_size();

  // Rename into place (an existing empty directory is replaced atomically).
  std::error_code ec;
  fs::rename(temp, out_dir, ec);
  if (ec) {
    Fail("quantize", "cannot rename {} to {}: {}", temp.string(), out_dir.string(), ec.message());
  }
  guard.Release();

  uint64_t quantized_bytes = 0;
  int64_t quantized_params = 0;
  for (PlannedTensor& p : plan) {
    MlxTensorResult& r = p.result;
    report.total_parameters += r.parameters;
    if (r.quantized) {
      ++report.quantized_count;
      quantized_bytes += r.output_bytes;
      quantized_params += r.parameters;
    } else {
      ++report.kept_count;
    }
    report.tensors.push_back(std::move(r));
  }
  report.bits_per_weight = report.total_parameters > 0
                               ? 8.0 * static_cast<double>(report.tensor_bytes) /
                                     static_cast<double>(report.total_parameters)
                               : 0.0;
  report.quantized_bits_per_weight =
      quantized_params > 0
          ? 8.0 * static_cast<double>(quantized_bytes) / static_cast<double>(quantized_params)
          : 0.0;
  return report;
}

}  // namespace proctor
