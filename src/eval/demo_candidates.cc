#include "eval/demo_candidates.h"

#include <fmt/format.h>

#include <vector>

#include "model/greedy.h"
#include "ops/convert.h"
#include "quant/mlx_quant.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace proctor {

int64_t CountParameters(const WeightStore& weights) {
  int64_t n = 0;
  for (const auto& name : weights.Names()) n += weights.Get(name).NumElements();
  return n;
}

double BitsPerWeight(const WeightStore& weights) {
  const int64_t params = CountParameters(weights);
  return params > 0 ? 8.0 * static_cast<double>(weights.TotalBytes()) / static_cast<double>(params)
                    : 0.0;
}

QuantizedCandidate QuantizeCandidateMlx(const LoadedModel& teacher, int bits, int group_size) {
  quant::CheckMlxParams(quant::MlxMode::kAffine, bits, group_size, "demo candidate");
  QuantizedCandidate c;
  c.name = fmt::format("mlx {}-bit g{}", bits, group_size);
  c.bits = bits;
  c.group_size = group_size;
  c.weights = std::make_shared<WeightStore>(fmt::format("{} of {}", c.name, teacher.spec));
  const WeightStore& source = teacher.weights;
  double stored_bits = 0;
  for (const auto& name : source.Names()) {
    const TensorInfo& info = source.Get(name);
    const bool matrix = info.shape.size() == 2 && name.ends_with(".weight");
    if (!matrix || info.shape[1] % group_size != 0) {
      c.weights->AddView(info);
      stored_bits += 8.0 * static_cast<double>(info.bytes);
      ++c.kept_tensors;
      continue;
    }
    const MatView w = source.Matrix(name);
    if (!ops::IsSupportedWeightType(w.type)) {
      Fail("demo", "{}: tensor {} has type {}, which the engine cannot decode for quantization",
           teacher.spec, name, Name(w.type));
    }
    // MLX keeps scales and biases in the model's 16-bit type (f32 for other models).
    const DType scale_type =
        (w.type == DType::kBF16 || w.type == DType::kF16) ? w.type : DType::kF32;
    Tensor dense(DType::kF32, w.rows, w.cols);
    ThreadPool::Global().ParallelFor(static_cast<size_t>(w.rows), [&](size_t b, size_t e, int) {
      for (size_t r = b; r < e; ++r) {
        ops::DequantizeRow(
            w, static_cast<int64_t>(r),
            std::span<float>(dense.RowF32(static_cast<int64_t>(r)), static_cast<size_t>(w.cols)));
      }
    });
    const quant::MlxQuantizedTensor q = quant::QuantizeMlx(
        dense.f32(), w.rows, w.cols, quant::MlxMode::kAffine, bits, group_size, scale_type);
    const quant::MlxQuantizedMatrix view = q.View();
    Tensor decoded(DType::kF32, w.rows, w.cols);
    ThreadPool::Global().ParallelFor(static_cast<size_t>(w.rows), [&](size_t b, size_t e, int) {
      for (size_t r = b; r < e; ++r) {
        quant::DecodeMlxRowSegment(view, static_cast<int64_t>(r), 0, w.cols,
                                   decoded.RowF32(static_cast<int64_t>(r)));
      }
    });
    stored_bits += 8.0 * static_cast<double>(q.packed.size_bytes() + q.scales.size_bytes() +
                                             q.biases.size_bytes());
    c.weights->AddOwned(name, std::move(decoded), info.shape);
    ++c.quantized_tensors;
  }
  c.bits_per_weight = stored_bits / static_cast<double>(CountParameters(source));
  return c;
}

TeacherForcedLogits CandidateForward(const ModelConfig& config,
                                     std::shared_ptr<const WeightStore> weights,
                                     const RuntimeOptions& runtime) {
  auto owned_config = std::make_shared<ModelConfig>(config);
  auto model = std::make_shared<RuntimeModel>(*owned_config, *weights, runtime);
  return [owned_config, weights, model](std::span<const int32_t> tokens, int64_t chunk,
                                        const LogitsChunkFn& on_chunk) {
    RunTeacherForced(*model, tokens, chunk, on_chunk);
  };
}

}  // namespace proctor
