// Where the real engine plugs into scoring: the teacher-forced forward of a candidate model.
#pragma once

#include <string>

#include "eval/teacher_forced.h"

namespace proctor {

// The teacher-forced forward of the model at `model_path` (chunked, one cache per sequence).
// Until the engine can load models this throws Error("[kl] model loading is not available
// yet ...").
TeacherForcedLogits MakeCandidateForward(const std::string& model_path);

}  // namespace proctor
