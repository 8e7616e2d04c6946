// Resolution of linear-layer weights to dense views or MLX quantized matrices (see mlx_weights.h).
#include "model/mlx_weights.h"

#include <fmt/format.h>

#include <string>

#include "ops/convert.h"
#include "util/error.h"

namespace proctor {
namespace {

std::string Where(const TensorInfo& info) {
  return fmt::format("{}: tensor \"{}\"", info.file,
                     info.source_name.empty() ? info.name : info.source_name);
}

// A MatView over a 2-D tensor whose shape has been checked.
MatView View2D(const TensorInfo& info) {
  return MatView{info.type, info.shape[0], info.shape[1],
                 BytesFor(info.type, static_cast<uint64_t>(info.shape[1])), info.data};
}

// Checks scales / biases: dtype (affine: f32, f16, bf16; float modes: u8 codes) and shape.
void CheckSideTensor(const TensorInfo& info, const MlxQuantParams& p, int64_t out, int64_t groups,
                     std::string_view path, int64_t in) {
  const bool affine = p.mode == quant::MlxMode::kAffine;
  const bool type_ok =
      affine ? (info.type == DType::kF32 || info.type == DType::kF16 || info.type == DType::kBF16)
             : info.type == DType::kU8;
  if (!type_ok) {
    Fail("model", "{} has dtype {}; expected {} for {} quantization of \"{}\"", Where(info),
         Name(info.type), affine ? "f32, f16 or bf16" : "u8", quant::MlxModeName(p.mode), path);
  }
  const std::vector<int64_t> expected{out, groups};
  if (info.shape != expected) {
    Fail("model", "{} has shape {}, expected {} ({} inputs / group size {})", Where(info),
         ShapeString(info.shape), ShapeString(expected), in, p.group_size);
  }
}

}  // namespace

std::optional<MlxQuantParams> MlxModuleParams(const WeightStore& weights,
                                              const std::optional<MlxQuantization>& quantization,
                                              std::string_view path) {
  const std::string scales_name = fmt::format("{}.scales", path);
  const TensorInfo* scales = weights.Find(scales_name);
  if (quantization) {
    const auto it = quantization->overrides.find(path);
    if (it != quantization->overrides.end()) {
      if (!it->second) {
        if (scales != nullptr) {
          Fail("model",
               "{}: config.json \"{}\" marks \"{}\" as not quantized (false), but tensor \"{}\" "
               "exists in {}",
               weights.origin(), quantization->key, path, scales_name, scales->file);
        }
        return std::nullopt;
      }
      if (scales == nullptr) {
        const MlxQuantParams& p = *it->second;
        Fail("model",
             "{}: config.json \"{}\" quantizes \"{}\" ({}, {} bits, group size {}), but tensor "
             "\"{}\" "
             "is missing",
             weights.origin(), quantization->key, path, quant::MlxModeName(p.mode), p.bits,
             p.group_size, scales_name);
      }
      return it->second;
    }
  }
  if (scales == nullptr) return std::nullopt;
  if (!quantization) {
    Fail("model",
         "{}: \"{}\" marks \"{}\" as MLX-quantized, but config.json has no \"quantization\" block "
         "giving bits and group_size",
         Where(*scales), scales_name, path);
  }
  if (!quantization->bits || !quantization->group_size) {
    Fail("model",
         "{}: \"{}\" marks \"{}\" as MLX-quantized, but config.json \"{}\" gives no default {} "
         "(and no override for \"{}\")",
         Where(*scales), scales_name, path, quantization->key,
         !quantization->bits ? "bits" : "group_size", path);
  }
  return MlxQuantParams{quantization->mode, *quantization->bits, *quantization->group_size};
}

ops::LinearWeight ResolveLinear(const WeightStore& weights,
                                const std::optional<MlxQuantization>& quantization,
                                std::string_view path, int64_t out, int64_t in) {
  const std::string weight_name = fmt::format("{}.weight", path);
  const TensorInfo& weight = weights.Get(weight_name);
  const std::optional<MlxQuantParams> params = MlxModuleParams(weights, quantization, path);
  if (!params) {
    if (weight.type == DType::kU32) {
      Fail("model",
           "{} is u32 with shape {} (packed MLX codes), but \"{}.scales\" is missing; expected "
           "a float [{}, {}] weight, or scales and biases beside packed codes",
           Where(weight), ShapeString(weight.shape), path, out, in);
    }
    weights.Expect(weight_name, {out, in});
    if (!ops::IsSupportedWeightType(weight.type)) {
      Fail(
          "model",
          "{} has dtype {}, which a linear layer cannot use (packed MLX weights need \"{}.scales\" "
          "beside them)",
          Where(weight), Name(weight.type), path);
    }
    return weights.Matrix(weight_name);
  }
  const MlxQuantParams& p = *params;
  quant::CheckMlxParams(p.mode, p.bits, p.group_size, Where(weight));
  if (in % p.group_size != 0 || in * p.bits % 32 != 0) {
    Fail("model", "{}: \"{}\" has {} inputs, not a whole number of groups of {} ({} bits)",
         Where(weight), path, in, p.group_size, p.bits);
  }
  const int64_t words = in * p.bits / 32, groups = in / p.group_size;
  if (weight.type != DType::kU32) {
    Fail("model", "{} has dtype {}; an MLX-quantized weight ({} bits) is u32 packed codes",
         Where(weight), Name(weight.type), p.bits);
  }
  const std::vector<int64_t> expected{out, words};
  if (weight.shape != expected) {
    Fail("model", "{} has shape {}, expected {} ([{}, {}] at {} bits: {} u32 words per row)",
         Where(weight), ShapeString(weight.shape), ShapeString(expected), out, in, p.bits, words);
  }
  const TensorInfo& scales = weights.Get(fmt::format("{}.scales", path));
  CheckSideTensor(scales, p, out, groups, path, in);
  const TensorInfo* biases = weights.Find(fmt::format("{}.biases", path));
  quant::MlxQuantizedMatrix m;
  m.mode = p.mode;
  m.bits = p.bits;
  m.group_size = p.group_size;
  m.packed = View2D(weight);
  m.scales = View2D(scales);
  if (p.mode == quant::MlxMode::kAffine) {
    if (biases == nullptr) {
      Fail("model", "{}: affine-quantized \"{}\" has no \"{}.biases\" tensor", Where(weight), path,
           path);
    }
    CheckSideTensor(*biases, p, out, groups, path, in);
    if (biases->type != scales.type) {
      Fail("model", "{} has dtype {} but its scales {}; expected the same", Where(*biases),
           Name(biases->type), Name(scales.type));
    }
    m.biases = View2D(*biases);
  } else if (biases != nullptr) {
    Fail("model", "{}: {} quantization has no biases, expected no such tensor", Where(*biases),
         quant::MlxModeName(p.mode));
  }
  quant::ValidateMlxMatrix(m, Where(weight));
  return m;
}

}  // namespace proctor
