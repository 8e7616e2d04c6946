#include "eval/clients/http_client.h"

#include <httplib.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <regex>
#include <thread>

#include "util/error.h"

namespace proctor {
namespace {

using Json = nlohmann::json;

struct ParsedUrl {
  std::string scheme_host_port;
  std::string path;
};

ParsedUrl ParseEndpoint(const std::string& url) {
  static const std::regex kUrl(R"(^(https?://[^/\s]+)(/[^\s]*)?$)");
  std::smatch match;
  if (!std::regex_match(url, match, kUrl)) {
    Fail("http", "--endpoint '{}' is not an http(s) URL (e.g. http://127.0.0.1:8080)", url);
  }
  ParsedUrl parsed{match[1].str(), match[2].str()};
  while (!parsed.path.empty() && parsed.path.back() == '/') parsed.path.pop_back();
  if (parsed.path.ends_with("/v1")) parsed.path.resize(parsed.path.size() - 3);
  return parsed;
}

// The server's own words from an error body: {"error": {"message": ...}} or the text itself.
std::string ServerMessage(const std::string& body) {
  try {
    const Json json = Json::parse(body);
    if (json.contains("error")) {
      const Json& error = json["error"];
      if (error.is_object() && error.contains("message") && error["message"].is_string()) {
        return error["message"].get<std::string>();
      }
      if (error.is_string()) return error.get<std::string>();
    }
  } catch (const Json::exception&) {
  }
  return body.size() > 300 ? body.substr(0, 300) + "..." : body;
}

// The top next tokens of a /v1/completions answer with logprobs, as (text, log-probability):
// OpenAI's legacy form {"top_logprobs": [{TOKEN: LOGPROB, ...}]} or the newer
// {"content": [{"top_logprobs": [{"token": ..., "logprob": ...}]}]} (llama-server).
std::vector<std::pair<std::string, double>> TopLogprobs(const Json& choice) {
  std::vector<std::pair<std::string, double>> out;
  if (!choice.contains("logprobs") || !choice["logprobs"].is_object()) return out;
  const Json& logprobs = choice["logprobs"];
  if (logprobs.contains("top_logprobs") && logprobs["top_logprobs"].is_array() &&
      !logprobs["top_logprobs"].empty() && logprobs["top_logprobs"][0].is_object()) {
    for (const auto& [token, value] : logprobs["top_logprobs"][0].items()) {
      if (value.is_number()) out.emplace_back(token, value.get<double>());
    }
  } else if (logprobs.contains("content") && logprobs["content"].is_array() &&
             !logprobs["content"].empty()) {
    const Json& first = logprobs["content"][0];
    if (first.contains("top_logprobs") && first["top_logprobs"].is_array()) {
      for (const Json& entry : first["top_logprobs"]) {
        if (entry.contains("token") && entry["token"].is_string() && entry.contains("logprob") &&
            entry["logprob"].is_number()) {
          out.emplace_back(entry["token"].get<std::string>(), entry["logprob"].get<double>());
        }
      }
    }
  }
  return out;
}

}  // namespace

HttpCompletionClient::HttpCompletionClient(HttpClientOptions options)
    : options_(std::move(options)) {
  const ParsedUrl url = ParseEndpoint(options_.endpoint);
  base_path_ = url.path;
  client_ = std::make_unique<httplib::Client>(url.scheme_host_port);
  client_->set_connection_timeout(10, 0);
  const auto timeout = std::chrono::duration<double>(options_.timeout_seconds);
  client_->set_read_timeout(std::chrono::duration_cast<std::chrono::microseconds>(timeout));
  client_->set_write_timeout(60, 0);
  const httplib::Result answer = client_->Get(base_path_ + "/v1/models");
  if (!answer) {
    Fail("http", "cannot reach {} ({}): is the server running, and is the URL right?",
         options_.endpoint, httplib::to_string(answer.error()));
  }
  if (answer->status != 200) {
    Fail("http",
         "{} answered GET {}/v1/models with status {}: {} (an OpenAI-compatible server "
         "is expected)",
         options_.endpoint, base_path_, answer->status, ServerMessage(answer->body));
  }
  try {
    models_ = Json::parse(answer->body);
  } catch (const Json::exception&) {
    Fail("http",
         "{}: GET /v1/models did not answer JSON (an OpenAI-compatible server is "
         "expected)",
         options_.endpoint);
  }
}

HttpCompletionClient::~HttpCompletionClient() = default;

std::optional<Json> HttpCompletionClient::Post(const std::string& path, const Json& body,
                                               std::string* error) {
  const std::string text = body.dump();
  double backoff = 0.5;
  for (int attempt = 0;; ++attempt) {
    const httplib::Result answer = client_->Post(base_path_ + path, text, "application/json");
    bool retry = false;
    if (!answer) {
      *error = fmt::format("POST {}: {}", path, httplib::to_string(answer.error()));
      retry = true;
    } else if (answer->status == 200) {
      try {
        return Json::parse(answer->body);
      } catch (const Json::exception&) {
        *error = fmt::format("POST {}: the answer is not JSON", path);
        return std::nullopt;
      }
    } else {
      *error =
          fmt::format("POST {}: status {}: {}", path, answer->status, ServerMessage(answer->body));
      retry = answer->status == 429 || answer->status >= 500;
    }
    if (!retry || attempt >= options_.retries) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::duration<double>(backoff));
    backoff *= 2;
  }
}

CompletionResult HttpCompletionClient::Complete(const CompletionRequest& request) {
  Json body = {{"max_tokens", request.max_tokens}, {"temperature", 0}};
  if (!options_.model.empty()) body["model"] = options_.model;
  if (!request.stop.empty()) body["stop"] = request.stop;
  std::string path;
  if (request.chat) {
    path = "/v1/chat/completions";
    body["messages"] = request.messages;
    body["chat_template_kwargs"] = {{"enable_thinking", request.enable_thinking}};
    if (!request.tools.is_null()) body["tools"] = request.tools;
  } else {
    path = "/v1/completions";
    body["prompt"] = request.prompt;
  }
  CompletionResult result;
  const std::optional<Json> answer = Post(path, body, &result.error);
  if (!answer) {
    result.status = ClientStatus::kRequestError;
    return result;
  }
  const Json* text = nullptr;
  if (answer->contains("choices") && (*answer)["choices"].is_array() &&
      !(*answer)["choices"].empty()) {
    const Json& choice = (*answer)["choices"][0];
    if (request.chat && choice.contains("message") && choice["message"].contains("content")) {
      text = &choice["message"]["content"];
    } else if (!request.chat && choice.contains("text")) {
      text = &choice["text"];
    }
  }
  if (text == nullptr || !(text->is_string() || text->is_null())) {
    result.status = ClientStatus::kRequestError;
    result.error = fmt::format("POST {}: no choices[0].{} in the answer", path,
                               request.chat ? "message.content" : "text");
    return result;
  }
  if (text->is_string()) result.text = text->get<std::string>();
  if (request.chat) {
    const Json& message = (*answer)["choices"][0]["message"];
    if (message.contains("tool_calls") && message["tool_calls"].is_array()) {
      for (const Json& call : message["tool_calls"]) {
        if (!call.contains("function") || !call["function"].is_object()) continue;
        result.tool_calls.push_back({{"name", call["function"].value("name", "")},
                                     {"arguments", call["function"].value("arguments", Json())}});
      }
    }
  }
  if (answer->contains("usage") && (*answer)["usage"].is_object()) {
    result.prompt_tokens = (*answer)["usage"].value("prompt_tokens", int64_t{0});
    result.completion_tokens = (*answer)["usage"].value("completion_tokens", int64_t{0});
  }
  return result;
}

ChoiceResult HttpCompletionClient::ChooseNextToken(const ChoiceRequest& request) {
  Json body = {{"prompt", request.prompt},
               {"max_tokens", 1},
               {"temperature", 0},
               {"logprobs", options_.top_logprobs}};
  if (!options_.model.empty()) body["model"] = options_.model;
  ChoiceResult result;
  const std::optional<Json> answer = Post("/v1/completions", body, &result.error);
  if (!answer) {
    result.status = ClientStatus::kRequestError;
    return result;
  }
  if (!answer->contains("choices") || !(*answer)["choices"].is_array() ||
      (*answer)["choices"].empty()) {
    result.status = ClientStatus::kRequestError;
    result.error = "POST /v1/completions: no choices in the answer";
    return result;
  }
  const auto top = TopLogprobs((*answer)["choices"][0]);
  if (top.empty()) {
    result.status = ClientStatus::kRequestError;
    result.error =
        "POST /v1/completions: the answer has no top log-probabilities (the server does not "
        "support `logprobs`, which next-token choice tasks need)";
    return result;
  }
  for (const std::string& choice : request.choices) {
    double score = std::numeric_limits<double>::quiet_NaN();
    for (const auto& [token, logprob] : top) {
      if (token == choice) score = std::isnan(score) ? logprob : std::max(score, logprob);
    }
    result.scores.push_back(score);
    if (!std::isnan(score) &&
        (result.choice < 0 || score > result.scores[static_cast<size_t>(result.choice)])) {
      result.choice = static_cast<int>(result.scores.size()) - 1;
    }
  }
  return result;
}

LoglikelihoodResult HttpCompletionClient::Loglikelihoods(
    const std::vector<LoglikelihoodRequest>& requests) {
  LoglikelihoodResult result;
  for (const LoglikelihoodRequest& request : requests) {
    Json body = {{"prompt", request.context + request.continuation},
                 {"max_tokens", 0},
                 {"temperature", 0},
                 {"echo", true},
                 {"logprobs", 1}};
    if (!options_.model.empty()) body["model"] = options_.model;
    const std::optional<Json> answer = Post("/v1/completions", body, &result.error);
    if (!answer) {
      result.status = ClientStatus::kRequestError;
      return result;
    }
    const Json* logprobs = nullptr;
    if (answer->contains("choices") && (*answer)["choices"].is_array() &&
        !(*answer)["choices"].empty() && (*answer)["choices"][0].contains("logprobs")) {
      logprobs = &(*answer)["choices"][0]["logprobs"];
    }
    if (logprobs == nullptr || !logprobs->is_object() || !logprobs->contains("token_logprobs") ||
        !logprobs->contains("text_offset") || !(*logprobs)["token_logprobs"].is_array() ||
        !(*logprobs)["text_offset"].is_array() ||
        (*logprobs)["token_logprobs"].size() != (*logprobs)["text_offset"].size()) {
      result.status = ClientStatus::kRequestError;
      result.error =
          "POST /v1/completions with echo: the answer has no prompt token_logprobs and "
          "text_offset (the server does not echo prompt log-probabilities, which "
          "log-likelihood tasks need; vLLM and OpenAI's legacy completions do)";
      return result;
    }
    double sum = 0;
    bool greedy = true;
    const Json& values = (*logprobs)["token_logprobs"];
    const Json& offsets = (*logprobs)["text_offset"];
    const Json* top = logprobs->contains("top_logprobs") ? &(*logprobs)["top_logprobs"] : nullptr;
    for (size_t t = 0; t < values.size(); ++t) {
      if (!offsets[t].is_number() || offsets[t].get<size_t>() < request.context.size()) continue;
      if (!values[t].is_number()) continue;
      sum += values[t].get<double>();
      if (top != nullptr && top->is_array() && t < top->size() && (*top)[t].is_object()) {
        for (const auto& [token, value] : (*top)[t].items()) {
          if (value.is_number() && value.get<double>() > values[t].get<double>()) greedy = false;
        }
      }
    }
    result.logprobs.push_back(sum);
    result.greedy.push_back(greedy);
  }
  return result;
}

nlohmann::ordered_json HttpCompletionClient::Describe() const {
  nlohmann::ordered_json out = {{"kind", "http"}, {"endpoint", options_.endpoint}};
  if (!options_.model.empty()) out["model"] = options_.model;
  if (models_.contains("data") && models_["data"].is_array() && !models_["data"].empty() &&
      models_["data"][0].contains("id")) {
    out["server_model"] = models_["data"][0]["id"];
  }
  out["top_logprobs"] = options_.top_logprobs;
  return out;
}

}  // namespace proctor
