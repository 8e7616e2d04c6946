#include "eval/tasks/task.h"

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

ItemOutcome ParseItemOutcome(const std::string& name, const std::string& source) {
  for (const ItemOutcome outcome : {ItemOutcome::kCorrect, ItemOutcome::kWrong,
                                    ItemOutcome::kUnscorable, ItemOutcome::kRequestError}) {
    if (name == ItemOutcomeName(outcome)) return outcome;
  }
  Fail("tasks", "{}: unknown outcome '{}' (expected correct, wrong, unscorable or request_error)",
       source, name);
}

}  // namespace proctor
