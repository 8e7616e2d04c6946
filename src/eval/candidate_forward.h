// Where the engine plugs into scoring: the teacher-forced forward of a candidate model.
#pragma once

#include <string>

#include "eval/teacher_forced.h"
#include "model/runtime_model.h"

namespace proctor {

// Loads the model at `model_spec` (directory, .gguf or cached HF id; model/load.h; or
// "synthetic:<name>[:<dtype>]", random weights with a real model's shapes for speed
// measurements, model/synthetic_model.h, dtype default bf16) and returns its teacher-forced
// forward: per sequence one cache, RunTeacherForced in chunks. The returned
// function owns the loaded weights.
TeacherForcedLogits MakeCandidateForward(const std::string& model_spec,
                                         const RuntimeOptions& options = {});

// A loaded model through the stepping seam (two-model KL: both models resident).
struct SteppedModel {
  StartSequenceFn start;  // owns the loaded weights
  int64_t vocab = 0;      // logits width
};
SteppedModel MakeSteppedModel(const std::string& model_spec, const RuntimeOptions& options = {});

}  // namespace proctor
