#include "eval/runners/eval_model.h"

#include <fmt/format.h>

#include "eval/runners/results_json.h"
#include "formats/gguf.h"
#include "model/synthetic_mlx.h"
#include "text/tokenizer/gguf_tokenizer.h"
#include "util/error.h"

namespace proctor {
namespace {

constexpr std::string_view kSyntheticPrefix = "synthetic:";

// The tokenizer a model on disk carries, or null when it has no tokenizer files (a GGUF file
// without tokenizer.ggml.model, or with llama.cpp's vocabulary-less "none" / "no_vocab").
std::unique_ptr<text::Tokenizer> ModelTokenizer(const LoadedModel& model) {
  if (model.format == ModelFormat::kGguf) {
    if (model.gguf == nullptr) return {};
    const std::optional<std::string_view> kind = model.gguf->FindString("tokenizer.ggml.model");
    if (!kind || *kind == "none" || *kind == "no_vocab") return {};
    return text::LoadGgufTokenizer(model.source);
  }
  if (!std::filesystem::exists(model.source / "tokenizer.json")) return {};
  return text::LoadTokenizer(model.source);
}

// The engine's stepper, keeping the runtime model (and through it the EvalModel) alive.
class OwningStepper final : public LogitsStepper {
 public:
  OwningStepper(std::shared_ptr<const RuntimeModel> model, int64_t max_positions)
      : model_(std::move(model)), stepper_(*model_, max_positions) {}
  MatView Step(std::span<const int32_t> tokens) override { return stepper_.Step(tokens); }

 private:
  std::shared_ptr<const RuntimeModel> model_;
  EngineLogitsStepper stepper_;
};

}  // namespace

std::shared_ptr<const EvalModel> EvalModel::Open(const std::string& spec,
                                                 const std::filesystem::path& tokenizer) {
  std::shared_ptr<EvalModel> model(new EvalModel());
  model->spec_ = spec;
  if (!tokenizer.empty()) {
    model->tokenizer_ = text::LoadTokenizer(tokenizer);
    model->tokenizer_source_ = tokenizer;
  }
  if (spec.starts_with(kSyntheticPrefix)) {
    std::string name = spec.substr(kSyntheticPrefix.size());
    std::string dtype_name = "bf16";
    if (const size_t colon = name.find(':'); colon != std::string::npos) {
      dtype_name = name.substr(colon + 1);
      name = name.substr(0, colon);
    }
    const ModelConfig config = SyntheticConfig(name);
    model->weights_name_ = dtype_name;
    if (const auto dtype = ParseDType(dtype_name)) {
      model->synthetic_.emplace(BuildSyntheticModel(config, *dtype));
    } else if (const auto mlx = ParseMlxQuantSpec(dtype_name)) {
      model->synthetic_.emplace(BuildSyntheticMlxModel(config, *mlx));
    } else {
      Fail("model",
           "{}: unknown weight type '{}' (f32, f16, bf16, q8_0 ... q6_k, affine<bits>-g<group>, "
           "mxfp4, mxfp8, nvfp4)",
           spec, dtype_name);
    }
  } else {
    model->loaded_.emplace(LoadModel(spec));
    model->path_ = model->loaded_->source;
    model->weights_name_ = model->loaded_->config.stored_dtype;
    if (tokenizer.empty()) model->tokenizer_ = ModelTokenizer(*model->loaded_);
  }
  const int64_t logits = model->config().vocab_size;
  if (model->tokenizer_ && static_cast<int64_t>(model->tokenizer_->VocabSize()) > logits) {
    Fail("tokenizer", "{} has {} tokens, but model '{}' has {} logits: it is not this model's",
         model->tokenizer_->Describe(), model->tokenizer_->VocabSize(), spec, logits);
  }
  return model;
}

const ModelConfig& EvalModel::config() const {
  return loaded_ ? loaded_->config : synthetic_->config;
}

const WeightStore& EvalModel::weights() const {
  return loaded_ ? loaded_->weights : synthetic_->weights;
}

std::shared_ptr<const RuntimeModel> EvalModel::Runtime(const RuntimeOptions& options) const {
  // The runtime model keeps references into this object: its deleter keeps it alive.
  std::shared_ptr<const EvalModel> self = shared_from_this();
  return std::shared_ptr<const RuntimeModel>(new RuntimeModel(config(), weights(), options),
                                             [self](const RuntimeModel* m) { delete m; });
}

TeacherForcedLogits EvalModel::Forward(const RuntimeOptions& options) const {
  std::shared_ptr<const RuntimeModel> runtime = Runtime(options);
  return [runtime](int64_t max_positions) -> std::unique_ptr<LogitsStepper> {
    return std::make_unique<OwningStepper>(runtime, max_positions);
  };
}

VocabularyIdentity EvalModel::Identity(const std::string& role) const {
  VocabularyIdentity v;
  v.source = fmt::format("{} '{}'", role, spec_);
  v.logits_vocab = config().vocab_size;
  if (tokenizer_ == nullptr) return v;
  v.tokenizer_vocab = static_cast<int64_t>(tokenizer_->VocabSize());
  v.tokenizer_sha256 = TokenizerFingerprint(*tokenizer_);
  v.bos_id = tokenizer_->BosId();
  v.eos_id = tokenizer_->EosId();
  v.tokenizer_description = tokenizer_->Describe();
  return v;
}

nlohmann::ordered_json EvalModel::Describe(const std::string& role) const {
  if (path_.empty()) return {{"role", role}, {"kind", "unresolved"}, {"spec", spec_}};
  return DescribeModelFiles(role, spec_, path_);
}

nlohmann::ordered_json EvalModel::Describe(const EvalModel* model, const std::string& role,
                                           const std::string& spec) {
  return model != nullptr ? model->Describe(role) : DescribeModelInput(role, spec);
}

}  // namespace proctor
