// The seam between the task evals and whatever produces the answers (ARCHITECTURE.md): the local
// engine (eval/clients/engine_client.h), an OpenAI-compatible HTTP server
// (eval/clients/http_client.h), or scripted answers (eval/clients/scripted_client.h, tests).
// Task runners talk only to this interface.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace proctor {

// One generation: either a conversation (rendered by the client with the model's chat template,
// or by the server) or raw text (encoded with the tokenizer's special tokens, BOS included when
// the tokenizer adds it). Greedy, `max_tokens` new tokens at most, ending at an end-of-sequence
// token (not part of the text) or just before the first of `stop`.
struct CompletionRequest {
  bool chat = false;
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();  // chat: [{role, content}]
  bool enable_thinking = false;                                       // chat: the template flag
  nlohmann::ordered_json tools = nlohmann::ordered_json();  // chat: OpenAI tools; null: none
  std::string prompt{};                                     // raw text
  int max_tokens = 256;
  std::vector<std::string> stop{};
};

// Which of `choices` the model puts first as the next token after raw `prompt`: each choice's
// first token as it continues the prompt, compared by the logits of the last prompt position.
struct ChoiceRequest {
  std::string prompt;
  std::vector<std::string> choices;  // e.g. " A", " B", " C", " D"
  // The start of `prompt` that many requests share (MMLU's header and shots): a client may
  // evaluate it once and reuse it. Empty: none.
  std::string shared_prefix{};
};

// The log-probability of `continuation` following `context` (raw text), as
// lm-evaluation-harness's loglikelihood requests define it: the context is encoded as a prompt
// (special tokens as the tokenizer prescribes), the continuation as the tokens that
// context + continuation adds after it; trailing spaces of the context move to the
// continuation.
struct LoglikelihoodRequest {
  std::string context;
  std::string continuation;
};

// How a request ended. kRequestError: the client could not get an answer (the server failed,
// or it lacks what the task needs); `error` says why.
enum class ClientStatus { kOk, kRequestError };

struct CompletionResult {
  ClientStatus status = ClientStatus::kOk;
  std::string text{};
  std::string error{};
  // Calls a server returned as structured tool_calls: [{"name", "arguments"}]; empty otherwise
  // (the calls are then in the text).
  nlohmann::json tool_calls = nlohmann::json::array();
  int64_t prompt_tokens = 0;      // 0 when unknown
  int64_t completion_tokens = 0;  // 0 when unknown
};

struct ChoiceResult {
  ClientStatus status = ClientStatus::kOk;
  int choice = -1;               // the winner (lowest index on ties); -1: none of the choices was
                                 // among what the client could see (unscorable)
  std::vector<double> scores{};  // per choice: logit or log-probability; NaN when not seen
  std::string error{};
};

struct LoglikelihoodResult {
  ClientStatus status = ClientStatus::kOk;
  std::vector<double> logprobs{};  // per request: the sum over the continuation's tokens
  std::vector<bool> greedy{};      // per request: every continuation token was the argmax
  std::string error{};
};

class CompletionClient {
 public:
  virtual ~CompletionClient() = default;
  virtual CompletionResult Complete(const CompletionRequest& request) = 0;
  virtual ChoiceResult ChooseNextToken(const ChoiceRequest& request) = 0;
  // Several requests at once (the choices of one item): requests with the same context share
  // its evaluation where the client can.
  virtual LoglikelihoodResult Loglikelihoods(const std::vector<LoglikelihoodRequest>& requests) = 0;
  // False when conversations cannot be rendered (a local model without a chat template); chat
  // tasks then fall back to raw text, as each task documents.
  virtual bool CanChat() const = 0;
  // Whether a chat request's `tools` reach the model (a template that renders them, or a
  // server); false: a tool task describes its functions in the text instead.
  virtual bool CanUseTools() const = 0;
  // What answers: {"kind": "engine" | "http" | "scripted", ...} for the results file.
  virtual nlohmann::ordered_json Describe() const = 0;
};

}  // namespace proctor
