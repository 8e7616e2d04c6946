#include "eval/candidate_forward.h"

#include <memory>
#include <optional>

#include "model/greedy.h"
#include "model/load.h"
#include "model/synthetic_model.h"
#include "util/error.h"

namespace proctor {
namespace {

// A model's config and weights, from disk or (spec "synthetic:<name>[:<dtype>]") built with
// random weights of a real model's shapes (model/synthetic_model.h).
struct ModelSource {
  std::optional<LoadedModel> loaded;        // a model on disk (kept whole: it owns the mmaps)
  std::optional<SyntheticModel> synthetic;  // or a synthetic one
  const ModelConfig& config() const { return loaded ? loaded->config : synthetic->config; }
  const WeightStore& weights() const { return loaded ? loaded->weights : synthetic->weights; }
};

std::shared_ptr<ModelSource> LoadSource(const std::string& spec) {
  auto source = std::make_shared<ModelSource>();
  constexpr std::string_view kSynthetic = "synthetic:";
  if (spec.rfind(kSynthetic, 0) == 0) {
    std::string name = spec.substr(kSynthetic.size());
    std::string dtype_name = "bf16";
    if (const size_t colon = name.find(':'); colon != std::string::npos) {
      dtype_name = name.substr(colon + 1);
      name = name.substr(0, colon);
    }
    const auto dtype = ParseDType(dtype_name);
    if (!dtype) Fail("model", "{}: unknown weight type '{}'", spec, dtype_name);
    source->synthetic.emplace(BuildSyntheticModel(SyntheticConfig(name), *dtype));
    return source;
  }
  source->loaded.emplace(LoadModel(spec));
  return source;
}

class EngineStepper final : public LogitsStepper {
 public:
  EngineStepper(std::shared_ptr<const RuntimeModel> model, int64_t max_positions)
      : model_(std::move(model)), cache_(model_->MakeCache(max_positions)) {}
  MatView Step(std::span<const int32_t> tokens) override {
    Tensor hidden = model_->ForwardHidden(tokens, cache_);
    if (logits_.rows() != hidden.rows()) logits_ = Tensor::F32(hidden.rows(), model_->vocab_size());
    model_->LogitsFromHidden(hidden.View(), logits_.MutF32());
    return logits_.View();
  }

 private:
  std::shared_ptr<const RuntimeModel> model_;
  ModelCache cache_;
  Tensor logits_;  // [chunk, V]
};

// The runtime model keeps references into the source: the deleter keeps the source alive.
std::shared_ptr<const RuntimeModel> MakeRuntime(const std::string& spec,
                                                const RuntimeOptions& options) {
  std::shared_ptr<ModelSource> source = LoadSource(spec);
  return std::shared_ptr<const RuntimeModel>(
      new RuntimeModel(source->config(), source->weights(), options),
      [source](const RuntimeModel* m) { delete m; });
}

}  // namespace

TeacherForcedLogits MakeCandidateForward(const std::string& model_spec,
                                         const RuntimeOptions& options) {
  std::shared_ptr<const RuntimeModel> model = MakeRuntime(model_spec, options);
  return [model](std::span<const int32_t> tokens, int64_t chunk, const LogitsChunkFn& on_chunk) {
    RunTeacherForced(*model, tokens, chunk, on_chunk);
  };
}

SteppedModel MakeSteppedModel(const std::string& model_spec, const RuntimeOptions& options) {
  std::shared_ptr<const RuntimeModel> model = MakeRuntime(model_spec, options);
  SteppedModel stepped;
  stepped.vocab = model->vocab_size();
  stepped.start = [model](int64_t max_positions) -> std::unique_ptr<LogitsStepper> {
    return std::make_unique<EngineStepper>(model, max_positions);
  };
  return stepped;
}

}  // namespace proctor
