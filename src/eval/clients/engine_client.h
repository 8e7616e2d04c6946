// The local engine behind the CompletionClient seam: greedy decoding (lowest index on ties) after
// a chunked prefill, stopping at any end-of-sequence id (not part of the text), the completion
// decoded without special tokens as the text the new tokens add to the prompt (a leading space
// included); chat requests rendered with the model's chat template (its
// folder's tokenizer_config.json / chat_template.jinja, or a .gguf's tokenizer.chat_template) and
// encoded without special tokens, raw prompts encoded with them. The run's KV scheme and compute
// mode apply (RuntimeOptions).
#pragma once

#include <memory>
#include <optional>

#include "eval/clients/completion_client.h"
#include "eval/runners/eval_model.h"
#include "model/runtime_model.h"
#include "text/chat_template.h"

namespace proctor {

class EngineClient : public CompletionClient {
 public:
  // Error("[tasks] ...") when the model has no tokenizer (a task needs text). A non-empty
  // `chat_template_file` replaces the model's chat template (or gives one to a model without).
  EngineClient(std::shared_ptr<const EvalModel> model, const RuntimeOptions& options, int64_t chunk,
               const std::filesystem::path& chat_template_file = {});

  // Off: every request is evaluated from its first token (no shared prefix kept, no shared
  // context evaluated once); for measuring what the reuse saves.
  void set_context_reuse(bool on) { context_reuse_ = on; }
  // Requests that continued a kept shared prefix instead of evaluating it again.
  int64_t prefix_reuses() const { return prefix_reuses_; }

  CompletionResult Complete(const CompletionRequest& request) override;
  // Complete's greedy decoding, with the token ids: the prompt's, and the generated ones (a stop
  // id that ended generation is not among them).
  struct Generation {
    std::vector<int32_t> prompt_ids;
    std::vector<int32_t> ids;
    std::string text;              // the generated text, cut at the first stop string
    bool reached_context = false;  // generation ended because the model's context was full
  };
  Generation Generate(const CompletionRequest& request);
  ChoiceResult ChooseNextToken(const ChoiceRequest& request) override;
  // Requests with the same context evaluate it once (its cache is cloned per continuation).
  LoglikelihoodResult Loglikelihoods(const std::vector<LoglikelihoodRequest>& requests) override;
  bool CanChat() const override { return chat_.has_value(); }
  // The template renders tools: a conversation renders differently with a tool than without.
  bool CanUseTools() const override { return renders_tools_; }
  nlohmann::ordered_json Describe() const override;

  // The token ids a request's prompt becomes (tests, benchmarks).
  std::vector<int32_t> PromptIds(const CompletionRequest& request) const;
  // The id of `choice`'s first token as it continues `prompt` (see ChooseNextToken).
  int32_t ChoiceTokenId(const std::string& prompt, const std::vector<int32_t>& prompt_ids,
                        const std::string& choice) const;
  // lm-evaluation-harness's encoding of a pair: trailing spaces of the context move to the
  // continuation; context + continuation is encoded whole and split after as many tokens as
  // the context alone has. Error when the continuation adds no token.
  std::pair<std::vector<int32_t>, std::vector<int32_t>> EncodePair(
      const LoglikelihoodRequest& request) const;
  // The text `generated` adds after `prompt` (not empty), without special tokens.
  std::string DecodeContinuation(std::span<const int32_t> prompt,
                                 std::span<const int32_t> generated) const;

 private:
  std::shared_ptr<const EvalModel> model_;
  std::shared_ptr<const RuntimeModel> runtime_;
  int64_t chunk_;
  const text::Tokenizer* tokenizer_;
  std::optional<text::ChatTemplate> chat_;
  text::ChatConfig chat_config_;
  std::vector<int32_t> stop_ids_;
  bool context_reuse_ = true;
  bool renders_tools_ = false;
  int64_t prefix_reuses_ = 0;
  // The last shared prefix evaluated: its text, its tokens and its cache.
  struct PrefixState {
    std::string text;
    std::vector<int32_t> ids;
    std::optional<ModelCache> cache;
  };
  PrefixState prefix_;
};

}  // namespace proctor
