// A CompletionClient whose answers are scripted by the caller (tests): each request goes to a
// function; every request is kept so a test can check what a task asked.
#pragma once

#include <functional>
#include <utility>
#include <vector>

#include "eval/clients/completion_client.h"

namespace proctor {

class ScriptedClient : public CompletionClient {
 public:
  using CompleteFn = std::function<CompletionResult(const CompletionRequest&)>;
  using ChooseFn = std::function<ChoiceResult(const ChoiceRequest&)>;
  using LoglikelihoodFn =
      std::function<LoglikelihoodResult(const std::vector<LoglikelihoodRequest>&)>;

  ScriptedClient(CompleteFn complete, ChooseFn choose, bool can_chat = true,
                 LoglikelihoodFn loglikelihoods = nullptr)
      : complete_(std::move(complete)),
        choose_(std::move(choose)),
        loglikelihoods_(std::move(loglikelihoods)),
        can_chat_(can_chat) {}

  CompletionResult Complete(const CompletionRequest& request) override {
    completions.push_back(request);
    return complete_(request);
  }
  ChoiceResult ChooseNextToken(const ChoiceRequest& request) override {
    choices.push_back(request);
    return choose_(request);
  }
  LoglikelihoodResult Loglikelihoods(const std::vector<LoglikelihoodRequest>& requests) override {
    loglikelihood_batches.push_back(requests);
    if (!loglikelihoods_) {
      return LoglikelihoodResult{.status = ClientStatus::kRequestError, .error = "not scripted"};
    }
    return loglikelihoods_(requests);
  }
  bool CanChat() const override { return can_chat_; }
  bool CanUseTools() const override { return can_chat_; }
  nlohmann::ordered_json Describe() const override { return {{"kind", "scripted"}}; }

  std::vector<CompletionRequest> completions;  // every Complete request, in order
  std::vector<ChoiceRequest> choices;          // every ChooseNextToken request, in order
  std::vector<std::vector<LoglikelihoodRequest>> loglikelihood_batches;  // every Loglikelihoods

 private:
  CompleteFn complete_;
  ChooseFn choose_;
  LoglikelihoodFn loglikelihoods_;
  bool can_chat_;
};

}  // namespace proctor
