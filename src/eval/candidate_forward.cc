#include "eval/candidate_forward.h"

#include "util/error.h"

namespace proctor {

TeacherForcedLogits MakeCandidateForward(const std::string& model_path) {
  // The engine plugs in here: load the model (model::LoadModel), and return a forward that,
  // per sequence, makes a cache and calls ForwardHidden + LogitsFromHidden chunk by chunk.
  Fail("kl",
       "model loading is not available yet: cannot run candidate '{}' (the inference engine is "
       "being built; `proctor demo` scores synthetic candidates through the same scorer)",
       model_path);
}

}  // namespace proctor
