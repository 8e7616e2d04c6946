// Where the engine plugs into scoring: the teacher-forced forward of a candidate model.
#pragma once

#include <string>

#include "eval/teacher_forced.h"
#include "model/runtime_model.h"

namespace proctor {

// Loads the model at `model_spec` (directory, .gguf or cached HF id; model/load.h) and returns
// its teacher-forced forward: per sequence one cache, RunTeacherForced in chunks. The returned
// function owns the loaded weights.
TeacherForcedLogits MakeCandidateForward(const std::string& model_spec,
                                         const RuntimeOptions& options = {});

}  // namespace proctor
