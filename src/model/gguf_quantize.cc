#include "model/gguf_quantize.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "formats/gguf.h"
#include "formats/gguf_writer.h"
#include "model/gguf_recipe.h"
#include "model/load.h"
#include "quant/ggml_blocks.h"
#include "util/error.h"
#include "util/half.h"
#include "util/thread_pool.h"
#include "util/timing.h"

namespace proctor {
namespace fs = std::filesystem;
namespace {

bool IsFloat(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

void RowsToF32(DType stored, const uint8_t* data, size_t n, float* out) {
  switch (stored) {
    case DType::kF32:
      std::memcpy(out, data, n * sizeof(float));
      return;
    case DType::kF16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, data + 2 * i, 2);
        out[i] = F16ToF32(h);
      }
      return;
    case DType::kBF16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, data + 2 * i, 2);
        out[i] = BF16ToF32(h);
      }
      return;
    default:
      Fail("quantize", "cannot read {} values as f32", Name(stored));
  }
}

// Encodes n values (whole blocks of `type`) as ggml's quantize_chunk does without an
// importance matrix.
void EncodeRow(DType type, const float* x, size_t n, uint8_t* out) {
  switch (type) {
    case DType::kF32:
      std::memcpy(out, x, n * sizeof(float));
      return;
    case DType::kF16:
    case DType::kBF16:
      for (size_t i = 0; i < n; ++i) {
        const uint16_t h = type == DType::kF16 ? F32ToF16(x[i]) : F32ToBF16(x[i]);
        std::memcpy(out + 2 * i, &h, 2);
      }
      return;
    default:
      break;
  }
  const quant::BlockTraits* traits = quant::FindBlockTraits(type);
  if (traits == nullptr || traits->quantize_ref == nullptr) {
    Fail("quantize", "proctor has no quantizer for {}", Name(type));
  }
  traits->quantize_ref(x, static_cast<int64_t>(n) / traits->block_elems, out);
}

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

void CheckOutFile(const fs::path& out_file) {
  if (out_file.extension() != ".gguf") {
    Fail("quantize", "--out {}: a GGUF file name must end in .gguf", out_file.string());
  }
  std::error_code ec;
  if (fs::exists(out_file, ec)) {
    Fail("quantize",
         "--out {}: already exists (proctor does not overwrite; remove it or pick "
         "another name)",
         out_file.string());
  }
}

std::string Megabytes(uint64_t bytes) { return fmt::format("{:.2f} MB", bytes / 1e6); }

}  // namespace

GgufQuantizeReport QuantizeModelToGguf(const std::string& source_spec, const fs::path& out_file,
                                       const GgufQuantizeOptions& options) {
  const double start = MonotonicSeconds();
  const std::optional<GgufFileType> file_type = FindGgufFileType(options.type);
  if (!file_type) {
    Fail("quantize", "unknown --type \"{}\" (GGUF file types proctor writes: {})", options.type,
         GgufFileTypeNames());
  }
  CheckOutFile(out_file);
  const LocatedModel located = LocateModel(source_spec);
  if (located.format != ModelFormat::kGguf) {
    Fail("quantize",
         "{}: --type writes a GGUF from a GGUF source, and this is a safetensors directory. Make "
         "an F16 GGUF of it with llama.cpp's convert_hf_to_gguf.py (--outtype f16) and quantize "
         "that, or drop --type to write an MLX directory",
         located.path.string());
  }
  const std::shared_ptr<GgufFile> file = GgufFile::Open(located.path);
  const GgufModelFacts facts = FactsOf(*file);

  std::vector<GgufTensorPlan> plan;
  std::map<std::string, const GgufTensorInfo*, std::less<>> source;
  for (const GgufTensorInfo& t : file->tensors()) {
    plan.push_back(GgufTensorPlan{std::string(t.name), t.dims, t.type, t.type, ""});
    source[std::string(t.name)] = &t;
  }
  SortLikeLlamaCpp(plan);
  PlanGgufTensorTypes(*file_type, facts, options.pure, plan);
  for (const GgufTensorPlan& t : plan) {
    if (t.type != t.stored && !IsFloat(t.stored)) {
      Fail("quantize",
           "{}: tensor \"{}\" is already quantized ({}); quantize from the F16 / F32 GGUF "
           "(proctor does not re-quantize)",
           located.path.string(), t.name, Name(t.stored));
    }
  }

  GgufMetadata metadata;
  for (const auto& [key, value] : file->metadata()) metadata.Copy(key, value);
  metadata.SetUint32("general.quantization_version", 2);
  metadata.SetUint32("general.file_type", file_type->llama_ftype);
  for (const char* key : {"split.no", "split.count", "split.tensors.count"}) metadata.Remove(key);

  GgufQuantizeReport report;
  report.source = located.path;
  report.out_file = out_file;
  report.file_type = std::string(file_type->name);
  report.llama_ftype = file_type->llama_ftype;
  report.pure = options.pure;
  std::vector<GgufTensorSpec> specs;
  for (const GgufTensorPlan& t : plan) {
    specs.push_back(GgufTensorSpec{t.name, t.dims, t.type});
    const GgufTensorInfo& info = *source.at(t.name);
    GgufTensorResult result{t.name,
                            t.stored,
                            t.type,
                            t.why,
                            static_cast<int64_t>(specs.back().Elements()),
                            info.bytes,
                            specs.back().Bytes()};
    report.total_parameters += result.parameters;
    report.tensor_bytes += result.output_bytes;
    report.tensors.push_back(std::move(result));
  }

  ThreadPool& pool = ThreadPool::Global();
  size_t index = 0;
  report.file_bytes = WriteGguf(
      out_file, metadata, specs, [&](const GgufTensorSpec& spec, const GgufByteSink& sink) {
        if (options.on_tensor) options.on_tensor(spec.name, index, specs.size());
        ++index;
        const GgufTensorInfo& info = *source.at(spec.name);
        if (spec.type == info.type) {
          sink(std::span<const uint8_t>(info.data, info.bytes));
          return;
        }
        const size_t cols = spec.dims[0];
        const size_t rows = spec.Elements() / cols;
        const size_t in_row = BytesFor(info.type, cols), out_row = BytesFor(spec.type, cols);
        // Rows in slabs of about 32 MB of f32, quantized in parallel, written in order.
        const size_t slab = std::max<size_t>(1, (size_t{8} << 20) / cols);
        std::vector<uint8_t> out(std::min(rows, slab) * out_row);
        for (size_t r0 = 0; r0 < rows; r0 += slab) {
          const size_t n = std::min(slab, rows - r0);
          pool.ParallelFor(n, [&](size_t begin, size_t end, int) {
            std::vector<float> values(cols);
            for (size_t r = begin; r < end; ++r) {
              RowsToF32(info.type, info.data + (r0 + r) * in_row, cols, values.data());
              EncodeRow(spec.type, values.data(), cols, out.data() + r * out_row);
            }
          });
          sink(std::span<const uint8_t>(out.data(), n * out_row));
        }
      });
  report.bits_per_weight =
      report.total_parameters > 0 ? 8.0 * report.tensor_bytes / report.total_parameters : 0.0;
  report.seconds = SecondsSince(start);
  return report;
}

nlohmann::json GgufQuantizeReport::ToJson() const {
  nlohmann::json tensors_json = nlohmann::json::array();
  for (const GgufTensorResult& t : tensors) {
    nlohmann::json j = {{"name", t.name},
                        {"stored", Name(t.stored)},
                        {"type", Name(t.type)},
                        {"parameters", t.parameters},
                        {"source_bytes", t.source_bytes},
                        {"output_bytes", t.output_bytes}};
    if (!t.why.empty()) j["why"] = t.why;
    tensors_json.push_back(std::move(j));
  }
  return {{"source", source.string()},
          {"out", out_file.string()},
          {"format", "gguf"},
          {"type", file_type},
          {"general.file_type", llama_ftype},
          {"pure", pure},
          {"parameters", total_parameters},
          {"tensor_bytes", tensor_bytes},
          {"file_bytes", file_bytes},
          {"bits_per_weight", bits_per_weight},
          {"seconds", seconds},
          {"tensors", std::move(tensors_json)}};
}

std::string GgufQuantizeReport::Summary() const {
  struct TypeTotals {
    int tensors = 0;
    int64_t parameters = 0;
    uint64_t bytes = 0;
  };
  std::map<std::string_view, TypeTotals> by_type;
  for (const GgufTensorResult& t : tensors) {
    TypeTotals& totals = by_type[Name(t.type)];
    ++totals.tensors;
    totals.parameters += t.parameters;
    totals.bytes += t.output_bytes;
  }
  std::string out =
      fmt::format("wrote {} ({}{}, general.file_type {}) from {}\n", out_file.string(), file_type,
                  pure ? ", --pure" : "", llama_ftype, source.string());
  out += "  type     tensors   parameters   bits/weight   size\n";
  for (const auto& [name, t] : by_type) {
    out += fmt::format("  {:<8} {:>7} {:>12} {:>13.3f}   {}\n", name, t.tensors, t.parameters,
                       t.parameters > 0 ? 8.0 * t.bytes / t.parameters : 0.0, Megabytes(t.bytes));
  }
  int changed = 0;
  for (const GgufTensorResult& t : tensors) {
    if (t.why.empty()) continue;
    if (changed++ == 0) out += "  llama.cpp's rules (what differs from the base type):\n";
    out += fmt::format("    {:<32} {:<6} {}\n", t.name, Name(t.type), t.why);
  }
  out += fmt::format(
      "  bits per weight  {:.3f} (8 x tensor bytes / parameters)\n  size             {} in {:.1f} "
      "s\n  legend: tensors outside the rules keep their stored type (norms, 1-D tensors)\n",
      bits_per_weight, Megabytes(file_bytes), seconds);
  return out;
}

}  // namespace proctor
