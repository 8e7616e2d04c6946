#include "model/gguf_quantize.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "formats/gguf_model.h"
#include "formats/gguf_writer.h"
#include "model/gguf_recipe.h"
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
  GgufSource source = OpenGgufSource(source_spec, options.vocabulary);

  std::vector<GgufTensorPlan> plan;
  std::map<std::string, const GgufSourceTensor*, std::less<>> by_name;
  for (const GgufSourceTensor& t : source.tensors) {
    plan.push_back(GgufTensorPlan{t.name, t.dims, t.type, t.type, ""});
    by_name[t.name] = &t;
  }
  SortLikeLlamaCpp(plan);
  PlanGgufTensorTypes(*file_type, source.facts, options.pure, plan);
  for (const GgufTensorPlan& t : plan) {
    if (t.type != t.stored && !IsFloat(t.stored)) {
      Fail("quantize",
           "{}: tensor \"{}\" is already quantized ({}); quantize from the F16 / F32 GGUF "
           "(proctor does not re-quantize)",
           source.path.string(), t.name, Name(t.stored));
    }
  }

  GgufMetadata& metadata = source.metadata;
  metadata.SetUint32("general.quantization_version", 2);
  metadata.SetUint32("general.file_type", file_type->llama_ftype);
  for (const char* key : {"split.no", "split.count", "split.tensors.count"}) metadata.Remove(key);

  GgufQuantizeReport report;
  report.source = source.path;
  report.source_kind = source.kind;
  report.out_file = out_file;
  report.file_type = std::string(file_type->name);
  report.llama_ftype = file_type->llama_ftype;
  report.pure = options.pure;
  std::vector<GgufTensorSpec> specs;
  for (const GgufTensorPlan& t : plan) {
    specs.push_back(GgufTensorSpec{t.name, t.dims, t.type});
    GgufTensorResult result{t.name,
                            t.stored,
                            t.type,
                            t.why,
                            static_cast<int64_t>(specs.back().Elements()),
                            by_name.at(t.name)->bytes,
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
        const GgufSourceTensor& in = *by_name.at(spec.name);
        if (spec.type == in.data_type && in.permute_heads == 0) {
          sink(std::span<const uint8_t>(in.data, in.bytes));
          return;
        }
        const size_t cols = spec.dims[0];
        const size_t rows = spec.Elements() / cols;
        const size_t in_row = BytesFor(in.data_type, cols), out_row = BytesFor(spec.type, cols);
        const int64_t head_dim = in.permute_heads > 0 ? rows / in.permute_heads : 0;
        // Rows in slabs of about 32 MB of f32, quantized in parallel, written in order.
        const size_t slab = std::max<size_t>(1, (size_t{8} << 20) / cols);
        std::vector<uint8_t> out(std::min(rows, slab) * out_row);
        for (size_t r0 = 0; r0 < rows; r0 += slab) {
          const size_t n = std::min(slab, rows - r0);
          pool.ParallelFor(n, [&](size_t begin, size_t end, int) {
            std::vector<float> values(cols);
            for (size_t r = begin; r < end; ++r) {
              const int64_t row = static_cast<int64_t>(r0 + r);
              const int64_t from = head_dim > 0 ? HfRowOfGgufRow(row, head_dim) : row;
              RowsToF32(in.data_type, in.data + from * in_row, cols, values.data());
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
          {"source_format", source_kind},
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
  std::string out = fmt::format(
      "wrote {} ({}{}, general.file_type {}) from {}{}\n", out_file.string(), file_type,
      pure ? ", --pure" : "", llama_ftype, source.string(),
      source_kind == "safetensors" ? " (read as convert_hf_to_gguf.py --outtype f32 writes it)"
                                   : "");
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
