#include "eval/candidate_forward.h"

#include <memory>

#include "model/greedy.h"
#include "model/load.h"

namespace proctor {

TeacherForcedLogits MakeCandidateForward(const std::string& model_spec,
                                         const RuntimeOptions& options) {
  auto loaded = std::make_shared<LoadedModel>(LoadModel(model_spec));
  auto model = std::make_shared<RuntimeModel>(loaded->config, loaded->weights, options);
  return [loaded, model](std::span<const int32_t> tokens, int64_t chunk,
                         const LogitsChunkFn& on_chunk) {
    RunTeacherForced(*model, tokens, chunk, on_chunk);
  };
}

}  // namespace proctor
