#include "eval/clients/engine_client.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "model/greedy.h"
#include "util/error.h"
#include "util/file.h"

namespace proctor {
namespace {

// The earliest position where one of `stops` begins in `text`, or npos.
size_t FirstStop(const std::string& text, const std::vector<std::string>& stops) {
  size_t first = std::string::npos;
  for (const std::string& stop : stops) {
    if (stop.empty()) continue;
    first = std::min(first, text.find(stop));
  }
  return first;
}

}  // namespace

std::string EngineClient::DecodeContinuation(std::span<const int32_t> prompt,
                                             std::span<const int32_t> generated) const {
  // Decoded after the prompt's last token, so that a leading space a tokenizer drops at the
  // start of a text (SentencePiece's dummy prefix) is kept.
  std::vector<int32_t> ids(1, prompt.back());
  ids.insert(ids.end(), generated.begin(), generated.end());
  const std::string head = tokenizer_->Decode(prompt.last(1), /*skip_special_tokens=*/true);
  std::string text = tokenizer_->Decode(ids, /*skip_special_tokens=*/true);
  if (text.starts_with(head)) return text.substr(head.size());
  return tokenizer_->Decode(generated, /*skip_special_tokens=*/true);
}

EngineClient::EngineClient(std::shared_ptr<const EvalModel> model, const RuntimeOptions& options,
                           int64_t chunk, const std::filesystem::path& chat_template_file)
    : model_(std::move(model)), chunk_(chunk), tokenizer_(model_->tokenizer()) {
  if (tokenizer_ == nullptr) {
    Fail("tasks",
         "model '{}' has no tokenizer (tokenizer.json or a GGUF vocabulary) and text needs "
         "one: pass --tokenizer PATH (a folder or tokenizer.json, or the .gguf it came from)",
         model_->spec());
  }
  runtime_ = model_->Runtime(options);
  std::optional<text::ChatConfig> config;
  if (!model_->path().empty()) {
    config = text::FindChatConfig(model_->path(), false, chat_template_file);
    std::filesystem::path source = model_->tokenizer_source();
    if (std::filesystem::is_regular_file(source) && source.extension() != ".gguf") {
      source = source.parent_path();  // a tokenizer.json: its folder may hold the template
    }
    if (!config && source != model_->path()) {
      config = text::FindChatConfig(source, false, chat_template_file);
    }
  } else if (!chat_template_file.empty()) {
    config = text::ChatConfig{.template_source = ReadFileToString(chat_template_file),
                              .template_origin = chat_template_file.string(),
                              .special_tokens = nlohmann::ordered_json::object()};
  }
  if (config) {
    chat_config_ = *std::move(config);
    chat_ = text::ChatTemplate::Parse(chat_config_.template_source, chat_config_.template_origin);
    const nlohmann::ordered_json probe =
        nlohmann::ordered_json::array({{{"role", "user"}, {"content", "hi"}}});
    text::ChatOptions plain;
    plain.add_generation_prompt = true;
    plain.special_tokens = chat_config_.special_tokens;
    text::ChatOptions with_tool = plain;
    with_tool.tools = nlohmann::ordered_json::array(
        {{{"type", "function"},
          {"function",
           {{"name", "probe_tool"},
            {"description", "d"},
            {"parameters",
             {{"type", "object"}, {"properties", nlohmann::ordered_json::object()}}}}}}});
    try {
      renders_tools_ = chat_->Render(probe, plain) != chat_->Render(probe, with_tool);
    } catch (const Error&) {
      renders_tools_ = false;  // a template that cannot render a bare user turn: no tools
    }
  }
  for (const int64_t id : model_->config().eos_token_ids)
    stop_ids_.push_back(static_cast<int32_t>(id));
  if (tokenizer_->EosId() >= 0 &&
      std::find(stop_ids_.begin(), stop_ids_.end(), tokenizer_->EosId()) == stop_ids_.end()) {
    stop_ids_.push_back(tokenizer_->EosId());
  }
}

std::vector<int32_t> EngineClient::PromptIds(const CompletionRequest& request) const {
  if (!request.chat) return tokenizer_->Encode(request.prompt, /*add_special_tokens=*/true);
  if (!chat_) {
    Fail("tasks", "model '{}' has no chat template, so a chat request cannot be rendered",
         model_->spec());
  }
  text::ChatOptions options;
  options.add_generation_prompt = true;
  options.enable_thinking = request.enable_thinking;
  options.special_tokens = chat_config_.special_tokens;
  if (!request.tools.is_null()) options.tools = request.tools;
  const std::string rendered = chat_->Render(request.messages, options);
  return tokenizer_->Encode(rendered, /*add_special_tokens=*/false);
}

CompletionResult EngineClient::Complete(const CompletionRequest& request) {
  const Generation generation = Generate(request);
  CompletionResult result;
  result.text = generation.text;
  result.prompt_tokens = static_cast<int64_t>(generation.prompt_ids.size());
  result.completion_tokens = static_cast<int64_t>(generation.ids.size());
  return result;
}

EngineClient::Generation EngineClient::Generate(const CompletionRequest& request) {
  const std::vector<int32_t> prompt = PromptIds(request);
  if (prompt.empty()) Fail("tasks", "the prompt of a request encodes to no tokens");
  GreedyOptions greedy;
  greedy.max_new_tokens = request.max_tokens;
  greedy.chunk = chunk_;
  greedy.stop_ids = stop_ids_;
  if (!request.stop.empty()) {
    greedy.stop_after = [&](std::span<const int32_t> generated) {
      return FirstStop(DecodeContinuation(prompt, generated), request.stop) != std::string::npos;
    };
  }
  Generation result{.prompt_ids = prompt, .ids = {}, .text = {}};
  greedy.reached_context = &result.reached_context;
  result.ids = GreedyGenerate(*runtime_, prompt, greedy);
  result.text = DecodeContinuation(prompt, result.ids);
  if (const size_t stop = FirstStop(result.text, request.stop); stop != std::string::npos) {
    result.text.resize(stop);
  }
  return result;
}

int32_t EngineClient::ChoiceTokenId(const std::string& prompt,
                                    const std::vector<int32_t>& prompt_ids,
                                    const std::string& choice) const {
  const std::vector<int32_t> full =
      tokenizer_->Encode(prompt + choice, /*add_special_tokens=*/true);
  if (full.size() > prompt_ids.size() &&
      std::equal(prompt_ids.begin(), prompt_ids.end(), full.begin())) {
    return full[prompt_ids.size()];
  }
  // The choice merged with the end of the prompt: its own first token.
  const std::vector<int32_t> alone = tokenizer_->Encode(choice, /*add_special_tokens=*/false);
  if (alone.empty()) Fail("tasks", "the choice '{}' encodes to no tokens", choice);
  return alone.front();
}

ChoiceResult EngineClient::ChooseNextToken(const ChoiceRequest& request) {
  const std::vector<int32_t> prompt = tokenizer_->Encode(request.prompt, true);
  if (prompt.empty()) Fail("tasks", "the prompt of a request encodes to no tokens");
  Tensor hidden;
  bool reused = false;
  if (context_reuse_ && !request.shared_prefix.empty() &&
      request.prompt.starts_with(request.shared_prefix)) {
    if (prefix_.text != request.shared_prefix) {
      prefix_.text = request.shared_prefix;
      prefix_.ids = tokenizer_->Encode(request.shared_prefix, true);
      prefix_.cache = runtime_->MakeCache(static_cast<int64_t>(prefix_.ids.size()));
      if (!prefix_.ids.empty()) PrefillLastHidden(*runtime_, prefix_.ids, chunk_, *prefix_.cache);
    }
    // Reused only where the prompt's tokens begin with the prefix's own (no merge across it).
    if (!prefix_.ids.empty() && prompt.size() > prefix_.ids.size() &&
        std::equal(prefix_.ids.begin(), prefix_.ids.end(), prompt.begin())) {
      ModelCache cache = prefix_.cache->Clone();
      hidden = PrefillLastHidden(
          *runtime_, std::span<const int32_t>(prompt).subspan(prefix_.ids.size()), chunk_, cache);
      reused = true;
      ++prefix_reuses_;
    }
  }
  if (!reused) {
    ModelCache cache = runtime_->MakeCache(static_cast<int64_t>(prompt.size()));
    hidden = PrefillLastHidden(*runtime_, prompt, chunk_, cache);
  }
  const Tensor logits = runtime_->LogitsFromHidden(hidden.View());
  ChoiceResult result;
  for (const std::string& choice : request.choices) {
    const int32_t id = ChoiceTokenId(request.prompt, prompt, choice);
    const double score = logits.RowF32(0)[id];
    result.scores.push_back(score);
    if (result.choice < 0 || score > result.scores[static_cast<size_t>(result.choice)]) {
      result.choice = static_cast<int>(result.scores.size()) - 1;
    }
  }
  return result;
}

std::pair<std::vector<int32_t>, std::vector<int32_t>> EngineClient::EncodePair(
    const LoglikelihoodRequest& request) const {
  std::string context = request.context;
  std::string continuation = request.continuation;
  const size_t kept = context.find_last_not_of(' ') + 1;  // npos + 1 == 0: all spaces
  if (kept < context.size()) {
    continuation = context.substr(kept) + continuation;
    context.resize(kept);
  }
  const size_t context_length = tokenizer_->Encode(context, /*add_special_tokens=*/true).size();
  std::vector<int32_t> whole = tokenizer_->Encode(context + continuation, true);
  if (whole.size() <= context_length || context_length == 0) {
    Fail("tasks",
         "the continuation '{}' adds no token after its context (or the context '{}' "
         "encodes to none)",
         request.continuation, request.context.substr(0, 80));
  }
  std::vector<int32_t> tail(whole.begin() + static_cast<std::ptrdiff_t>(context_length),
                            whole.end());
  whole.resize(context_length);
  return {std::move(whole), std::move(tail)};
}

LoglikelihoodResult EngineClient::Loglikelihoods(
    const std::vector<LoglikelihoodRequest>& requests) {
  LoglikelihoodResult result;
  result.logprobs.assign(requests.size(), 0.0);
  result.greedy.assign(requests.size(), true);
  std::vector<std::pair<std::vector<int32_t>, std::vector<int32_t>>> encoded;
  encoded.reserve(requests.size());
  for (const LoglikelihoodRequest& request : requests) encoded.push_back(EncodePair(request));
  std::vector<bool> done(requests.size(), false);
  const size_t vocab = static_cast<size_t>(runtime_->vocab_size());
  for (size_t first = 0; first < requests.size(); ++first) {
    if (done[first]) continue;
    const std::vector<int32_t>& context = encoded[first].first;
    ModelCache cache = runtime_->MakeCache(static_cast<int64_t>(context.size()));
    const Tensor last = PrefillLastHidden(*runtime_, context, chunk_, cache);
    for (size_t i = first; i < requests.size(); ++i) {
      if (done[i] || encoded[i].first != context) continue;
      if (i != first && !context_reuse_) continue;  // evaluated from scratch on its own turn
      done[i] = true;
      const std::vector<int32_t>& continuation = encoded[i].second;
      // Row j predicts continuation[j]: the context's last position, then the continuation's
      // own positions but the last.
      Tensor hidden =
          Tensor::F32(static_cast<int64_t>(continuation.size()), runtime_->hidden_size());
      std::copy_n(last.RowF32(0), runtime_->hidden_size(), hidden.RowF32(0));
      if (continuation.size() > 1) {
        ModelCache branch = cache.Clone();
        const Tensor rest = runtime_->ForwardHidden(
            std::span<const int32_t>(continuation.data(), continuation.size() - 1), branch);
        for (int64_t r = 0; r < rest.rows(); ++r) {
          std::copy_n(rest.RowF32(r), runtime_->hidden_size(), hidden.RowF32(r + 1));
        }
      }
      const Tensor logits = runtime_->LogitsFromHidden(hidden.View());
      for (size_t j = 0; j < continuation.size(); ++j) {
        const std::span<const float> row(logits.RowF32(static_cast<int64_t>(j)), vocab);
        double max = -INFINITY;
        for (const float v : row) max = std::max(max, static_cast<double>(v));
        double sum = 0;
        for (const float v : row) sum += std::exp(static_cast<double>(v) - max);
        const int32_t target = continuation[j];
        result.logprobs[i] +=
            static_cast<double>(row[static_cast<size_t>(target)]) - max - std::log(sum);
        if (ArgmaxLowestIndex(row) != target) result.greedy[i] = false;
      }
    }
  }
  return result;
}

nlohmann::ordered_json EngineClient::Describe() const {
  return {{"kind", "engine"},
          {"model", model_->spec()},
          {"chat_template", chat_ ? chat_config_.template_origin : std::string("none")},
          {"tokenizer", tokenizer_->Describe()}};
}

}  // namespace proctor
