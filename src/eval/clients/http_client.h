// An OpenAI-compatible HTTP server behind the CompletionClient seam (llama-server, vLLM,
// mlx_lm.server, ...): chat requests go to /v1/chat/completions (with
// chat_template_kwargs.enable_thinking), raw prompts to /v1/completions, next-token choices to
// /v1/completions with max_tokens 1 and `logprobs` (the choices are looked up among the server's
// top log-probabilities: a choice the server does not list cannot win). Temperature 0. Failed
// connections, 429 and 5xx answers are retried with backoff; other errors end the item as a
// request error naming the status and the server's message.
#pragma once

#include <memory>
#include <string>

#include "eval/clients/completion_client.h"

namespace httplib {
class Client;
}

namespace proctor {

struct HttpClientOptions {
  std::string endpoint;          // "http://host:port" (a trailing "/v1" is accepted); https too
  std::string model;             // the request's "model" field; empty: omitted
  int top_logprobs = 20;         // how many next tokens a choice request asks for
  int retries = 3;               // after the first try; backoff 0.5 s, 1 s, 2 s, ...
  double timeout_seconds = 600;  // per request (reading the answer)
};

class HttpCompletionClient : public CompletionClient {
 public:
  // Error("[http] ...") when the endpoint is not a URL or does not answer GET /v1/models.
  explicit HttpCompletionClient(HttpClientOptions options);
  ~HttpCompletionClient() override;

  CompletionResult Complete(const CompletionRequest& request) override;
  ChoiceResult ChooseNextToken(const ChoiceRequest& request) override;
  // /v1/completions with echo, max_tokens 0 and logprobs (OpenAI's legacy completions, vLLM):
  // the prompt's own token log-probabilities after the context's characters. A server without
  // them (llama-server) makes every such item a request error that says so.
  LoglikelihoodResult Loglikelihoods(const std::vector<LoglikelihoodRequest>& requests) override;
  bool CanChat() const override { return true; }  // the server renders conversations
  bool CanUseTools() const override { return true; }
  nlohmann::ordered_json Describe() const override;

 private:
  // POSTs `body` to `path`; the parsed answer, or an error message in *error.
  std::optional<nlohmann::json> Post(const std::string& path, const nlohmann::json& body,
                                     std::string* error);

  HttpClientOptions options_;
  std::string base_path_;  // the URL's path, without a trailing "/v1" or "/"
  std::unique_ptr<httplib::Client> client_;
  nlohmann::json models_;  // what GET /v1/models answered
};

}  // namespace proctor
