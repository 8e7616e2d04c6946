// The quantized candidates `proctor demo` scores: a teacher's weights re-quantized in memory with
// MLX affine quantization (quant/mlx_quant.h: MLX's own CPU rules, scales and biases rounded to
// the teacher's 16-bit type) and dequantized back to f32 for the engine, which is exactly the
// arithmetic the MLX format prescribes (w = scale * q + bias in f32), held in memory instead of
// being written as an MLX directory.
//
// Every 2-D weight whose input width is a multiple of the group size is quantized (embeddings
// and lm_head included, as mlx-lm does); norms and biases are kept as they are.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "eval/teacher_forced.h"
#include "model/load.h"
#include "model/runtime_model.h"

namespace proctor {

struct QuantizedCandidate {
  std::string name;  // "mlx 4-bit g64"
  int bits = 0;
  int group_size = 0;
  double bits_per_weight = 0;  // storage bits (codes + scales + biases + unquantized tensors)
                               // over the teacher's parameter count
  int64_t quantized_tensors = 0;
  int64_t kept_tensors = 0;  // not quantized (norms, widths not a multiple of the group)
  std::shared_ptr<WeightStore> weights;  // f32 dequantized matrices + views of the teacher's rest
};

// Every stored value of a model (block types count their values).
int64_t CountParameters(const WeightStore& weights);
// 8 * stored bytes / CountParameters.
double BitsPerWeight(const WeightStore& weights);

// Quantizes `teacher` (which must outlive the candidate: unquantized tensors are views) with MLX
// affine quantization of `bits` and `group_size`. Error for parameters MLX does not define or a
// weight type the engine cannot decode.
QuantizedCandidate QuantizeCandidateMlx(const LoadedModel& teacher, int bits, int group_size);

// The teacher-forced forward of a candidate's weights with the teacher's config.
TeacherForcedLogits CandidateForward(const ModelConfig& config,
                                     std::shared_ptr<const WeightStore> weights,
                                     const RuntimeOptions& runtime);

}  // namespace proctor
