// Random MLX-quantized models (see synthetic_mlx.h).
#include "model/synthetic_mlx.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <string>

#include "model/runtime_model.h"
#include "util/error.h"
#include "util/half.h"
#include "util/seeded_random.h"
#include "util/thread_pool.h"

namespace proctor {
namespace {

// Adds "<path>.weight" (+ .scales, .biases) of [out, in] with values within +-amplitude.
void AddQuantized(WeightStore& store, const std::string& path, int64_t out, int64_t in,
                  float amplitude, const MlxQuantParams& p, uint64_t seed) {
  const bool affine = p.mode == quant::MlxMode::kAffine;
  const int64_t groups = in / p.group_size;
  Tensor packed(DType::kU32, out, in * p.bits / 32);
  Tensor scales(affine ? DType::kBF16 : DType::kU8, out, groups);
  Tensor biases = affine ? Tensor(DType::kBF16, out, groups) : Tensor();
  uint16_t scale_bits = 0, bias_bits = 0;
  uint8_t scale_code = 0;
  switch (p.mode) {
    case quant::MlxMode::kAffine:  // codes 0..2^b-1 -> [-a, a]
      scale_bits = F32ToBF16(2.0f * amplitude / static_cast<float>((1 << p.bits) - 1));
      bias_bits = F32ToBF16(-amplitude);
      break;
    case quant::MlxMode::kMxfp4:  // E2M1 up to 6, E4M3 up to 448; scales 2^(e - 127)
    case quant::MlxMode::kMxfp8:
      scale_code = quant::EncodeE8M0(amplitude / (p.bits == 4 ? 6.0f : 448.0f));
      break;
    case quant::MlxMode::kNvfp4:
      scale_code = quant::EncodeE4M3(amplitude / 6.0f);
      break;
  }
  const uint64_t base = HashName(path, seed);
  const size_t row_bytes = static_cast<size_t>(packed.cols()) * 4;
  ThreadPool::Global().ParallelFor(static_cast<size_t>(out), [&](size_t begin, size_t end, int) {
    for (size_t r = begin; r < end; ++r) {
      uint64_t state = base + r * 0x632BE59BD9B4E019ull;
      uint8_t* row = packed.bytes() + r * row_bytes;
      for (size_t b = 0; b < row_bytes; b += 8) {
        const uint64_t bits = SplitMix64(state);
        std::memcpy(row + b, &bits, std::min<size_t>(8, row_bytes - b));
      }
      if (p.mode == quant::MlxMode::kMxfp8) {  // no NaN codes (0x7F, 0xFF)
        for (size_t b = 0; b < row_bytes; ++b) {
          if ((row[b] & 0x7F) == 0x7F) row[b] = static_cast<uint8_t>(row[b] - 1);
        }
      }
      for (int64_t g = 0; g < groups; ++g) {
        const size_t i = r * static_cast<size_t>(groups) + static_cast<size_t>(g);
        if (affine) {
          std::memcpy(scales.bytes() + 2 * i, &scale_bits, 2);
          std::memcpy(biases.bytes() + 2 * i, &bias_bits, 2);
        } else {
          scales.bytes()[i] = scale_code;
        }
      }
    }
  });
  store.AddOwned(path + ".weight", std::move(packed));
  store.AddOwned(path + ".scales", std::move(scales));
  if (affine) store.AddOwned(path + ".biases", std::move(biases));
}

// A bf16 matrix (for widths that are not whole groups), values uniform in +-amplitude.
void AddDense(WeightStore& store, const std::string& name, int64_t out, int64_t in, float amplitude,
              uint64_t seed) {
  Tensor t(DType::kBF16, out, in);
  uint64_t state = HashName(name, seed);
  auto* values = reinterpret_cast<uint16_t*>(t.bytes());
  for (int64_t i = 0; i < out * in; ++i) {
    values[i] = F32ToBF16(amplitude * SplitMix64Uniform(state));
  }
  store.AddOwned(name, std::move(t));
}

}  // namespace

std::optional<MlxQuantParams> ParseMlxQuantSpec(std::string_view spec) {
  MlxQuantParams p;
  if (spec == "mxfp4" || spec == "nvfp4" || spec == "mxfp8") {
    p.mode = *quant::ParseMlxMode(spec);
    p.bits = spec == "mxfp8" ? 8 : 4;
    p.group_size = spec == "nvfp4" ? 16 : 32;
    return p;
  }
  int bits = 0, group = 0;
  char tail = 0;
  const std::string text(spec);
  if (std::sscanf(text.c_str(), "affine%d-g%d%c", &bits, &group, &tail) != 2) return std::nullopt;
  p.bits = bits;
  p.group_size = group;
  try {
    quant::CheckMlxParams(p.mode, p.bits, p.group_size, "synthetic");
  } catch (const Error&) {
    return std::nullopt;
  }
  return p;
}

SyntheticModel BuildSyntheticMlxModel(const ModelConfig& config, const MlxQuantParams& params,
                                      uint64_t seed) {
  quant::CheckMlxParams(params.mode, params.bits, params.group_size, "synthetic MLX model");
  SyntheticModel m;
  m.config = config;
  m.config.stored_dtype = params.mode == quant::MlxMode::kAffine
                              ? fmt::format("mlx affine {}-bit g{}", params.bits, params.group_size)
                              : fmt::format("mlx {}", quant::MlxModeName(params.mode));
  MlxQuantization q;
  q.key = "quantization";
  q.bits = params.bits;
  q.group_size = params.group_size;
  q.mode = params.mode;
  m.config.mlx_quantization = q;
  m.weights.set_origin(fmt::format("synthetic:{}", config.model_type));
  auto matrix = [&](const std::string& name, int64_t out, int64_t in, float amplitude) {
    if (in % params.group_size == 0 && in * params.bits % 32 == 0) {
      const std::string path = name.substr(0, name.size() - std::string_view(".weight").size());
      AddQuantized(m.weights, path, out, in, amplitude, params, seed);
    } else {
      AddDense(m.weights, name, out, in, amplitude, seed);
    }
  };
  auto kept = [&](const std::string& name, int64_t rows, int64_t cols, float center,
                  float amplitude, const std::vector<int64_t>& shape) {
    Tensor t = Tensor::F32(rows, cols);
    uint64_t state = HashName(name, seed);
    for (int64_t i = 0; i < rows * cols; ++i) {
      t.f32()[i] = center + amplitude * SplitMix64Uniform(state);
    }
    m.weights.AddOwned(name, std::move(t), shape);
  };
  ForEachSyntheticTensor(config, {.matrix = matrix, .kept = kept});
  return m;
}

}  // namespace proctor
