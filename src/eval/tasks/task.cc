#include "eval/tasks/task.h"

#include "eval/scoring/sample_indices.h"
#include "util/error.h"

namespace proctor {

const char* ItemOutcomeName(ItemOutcome outcome) {
  switch (outcome) {
    case ItemOutcome::kCorrect:
      return "correct";
    case ItemOutcome::kWrong:
      return "wrong";
    case ItemOutcome::kUnscorable:
      return "unscorable";
    case ItemOutcome::kRequestError:
      return "request_error";
  }
  return "?";
}

std::vector<int64_t> SampleTaskItems(int64_t total, int64_t n, uint32_t seed) {
  return SampleIndices(total, n <= 0 ? total : n, seed);
}

nlohmann::ordered_json UserTurn(const std::string& content) {
  return nlohmann::ordered_json::array(
      {nlohmann::ordered_json{{"role", "user"}, {"content", content}}});
}

bool MarkRequestError(ClientStatus status, const std::string& error, ItemRecord* record) {
  if (status != ClientStatus::kRequestError) return false;
  record->outcome = ItemOutcome::kRequestError;
  record->error = error;
  return true;
}

std::optional<CompletionResult> Ask(CompletionClient& client, const CompletionRequest& request,
                                    ItemRecord* record) {
  CompletionResult result = client.Complete(request);
  if (MarkRequestError(result.status, result.error, record)) return std::nullopt;
  return result;
}

ItemOutcome ParseItemOutcome(const std::string& name, const std::string& source) {
  for (const ItemOutcome outcome : {ItemOutcome::kCorrect, ItemOutcome::kWrong,
                                    ItemOutcome::kUnscorable, ItemOutcome::kRequestError}) {
    if (name == ItemOutcomeName(outcome)) return outcome;
  }
  Fail("tasks", "{}: unknown outcome '{}' (expected correct, wrong, unscorable or request_error)",
       source, name);
}

}  // namespace proctor
