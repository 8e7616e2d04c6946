// A model as an evaluation uses it, opened once: located, its config and weights loaded
// (mmapped) and validated, its tokenizer loaded when it has one. The one object is what the
// vocabulary check (Identity), the forward (Forward) and the results file (Describe) all read,
// so a model spec is resolved and parsed once per run.
//
// Specs: a model directory (config.json + safetensors, MLX-quantized included), a .gguf file, a
// cached Hugging Face id (model/load.h), or "synthetic:<name>[:<weights>]" (random weights with a
// real model's shapes, model/synthetic_model.h; weights f32, f16, bf16 (default), a GGUF block
// type such as q4_k, or an MLX quantization such as affine4-g64 or mxfp4; no tokenizer).
//
// A model has a tokenizer when its directory holds tokenizer.json or its .gguf carries a
// vocabulary (tokenizer.ggml.model); such a tokenizer must load: a damaged one is an error, never
// silently "no tokenizer". Weights-only models (no tokenizer files) have none.
#pragma once

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "eval/runners/teacher_forced.h"
#include "eval/runners/vocab_check.h"
#include "model/load.h"
#include "model/runtime_model.h"
#include "model/synthetic_model.h"
#include "text/tokenizer/tokenizer.h"

namespace proctor {

class EvalModel : public std::enable_shared_from_this<EvalModel> {
 public:
  // Error("[model] ...", "[tokenizer] ...") naming the spec or file when it cannot be opened.
  // `tokenizer` (a folder, tokenizer.json or .gguf, as text::LoadTokenizer takes) replaces the
  // model's own (a model written without tokenizer files); Error when it has more tokens than the
  // model has logits.
  static std::shared_ptr<const EvalModel> Open(const std::string& spec,
                                               const std::filesystem::path& tokenizer = {});

  const std::string& spec() const { return spec_; }
  const ModelConfig& config() const;
  const WeightStore& weights() const;
  // What the weights are: the stored dtype of a model on disk ("bfloat16"), the weight type of a
  // synthetic one ("q4_k", "affine4-g64").
  const std::string& weights_name() const { return weights_name_; }
  // The directory or .gguf file read; empty for a synthetic model.
  const std::filesystem::path& path() const { return path_; }
  // Null when the model has no tokenizer files (and none was given).
  const text::Tokenizer* tokenizer() const { return tokenizer_.get(); }
  // Where the tokenizer came from: the tokenizer given to Open, else path(). A chat template is
  // looked for there when the model has none.
  const std::filesystem::path& tokenizer_source() const {
    return tokenizer_source_.empty() ? path_ : tokenizer_source_;
  }
  // Where chat rows look for the chat template (TokenStreamOptions::chat_model_dir): the
  // tokenizer's source when it is a model folder or a .gguf file, else that file's folder.
  std::filesystem::path chat_template_source() const {
    const std::filesystem::path& source = tokenizer_source();
    return std::filesystem::is_directory(source) || source.extension() == ".gguf"
               ? source
               : source.parent_path();
  }

  // The engine with `options`; it keeps this model alive.
  std::shared_ptr<const RuntimeModel> Runtime(const RuntimeOptions& options) const;
  // The engine's teacher-forced forward with `options` (one cache per sequence). The forward
  // keeps this model alive.
  TeacherForcedLogits Forward(const RuntimeOptions& options) const;

  // The vocabulary as the checks see it: the logits width (config vocab_size) and, with a
  // tokenizer, its size, fingerprint and special ids; `role` names it ("candidate '<spec>'").
  VocabularyIdentity Identity(const std::string& role) const;

  // The results-file input entry: the model's files with their sizes and sha256
  // (eval/runners/results_json.h DescribeModelFiles); a synthetic model is {"kind": "unresolved"}.
  nlohmann::ordered_json Describe(const std::string& role) const;
  // model->Describe(role) when the run opened `model`; else (a forward injected by a test or a
  // caller) DescribeModelInput(role, spec).
  static nlohmann::ordered_json Describe(const EvalModel* model, const std::string& role,
                                         const std::string& spec);

 private:
  EvalModel() = default;

  std::string spec_;
  std::string weights_name_;
  std::filesystem::path path_;
  std::optional<LoadedModel> loaded_;        // a model on disk (it owns the mmaps)
  std::optional<SyntheticModel> synthetic_;  // or a synthetic one
  std::unique_ptr<text::Tokenizer> tokenizer_;
  std::filesystem::path tokenizer_source_;  // the tokenizer given to Open
};

}  // namespace proctor
