// A task eval as the runner sees it: a fixed, sampled list of items, each asked through a
// CompletionClient and scored to one outcome (docs/task-evals.md).
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "eval/clients/completion_client.h"

namespace proctor {

// kUnscorable: the model answered but nothing could be read out of it (no number, none of the
// choices seen); it counts as not correct. kRequestError: no answer came (a server error).
enum class ItemOutcome { kCorrect, kWrong, kUnscorable, kRequestError };
const char* ItemOutcomeName(ItemOutcome outcome);  // "correct", "wrong", ...
// Error("[tasks] ...") for an unknown name (`source` names where it was read).
ItemOutcome ParseItemOutcome(const std::string& name, const std::string& source);

// Further scores summed over a task's items, each named {hits, of}: IFEval's {"loose", {1, 1}}
// and {"instructions strict", {2, 3}}, in the order the task reports them.
using Tallies = std::vector<std::pair<std::string, std::array<int64_t, 2>>>;

// One scored item, as --outputs keeps it.
struct ItemRecord {
  std::string id;          // stable within the task ("abstract_algebra/12", "1318")
  std::string prompt;      // the raw text, or the user turn of a chat prompt
  std::string completion;  // what the model answered ("C" for a next-token choice)
  std::string extracted;   // the answer read out of it ("" when unscorable)
  std::string expected;
  ItemOutcome outcome = ItemOutcome::kWrong;
  std::string error;  // kRequestError: why
  // Tasks with a length-normalised second metric (acc_norm): whether it picked the answer.
  std::optional<bool> correct_norm;
  // The slice the item belongs to, for per-slice accuracy ("hops=2", an MMLU subject).
  std::string group;
  Tallies tallies;
};

// SampleIndices(total, n, seed) (FORMATS.md section 5); every item when n <= 0.
std::vector<int64_t> SampleTaskItems(int64_t total, int64_t n, uint32_t seed);

// A conversation of one user turn.
nlohmann::ordered_json UserTurn(const std::string& content);

// Marks `record` as a request error when `status` says no answer came; returns whether it did.
bool MarkRequestError(ClientStatus status, const std::string& error, ItemRecord* record);

// client.Complete(request), or nullopt with `record` marked as a request error.
std::optional<CompletionResult> Ask(CompletionClient& client, const CompletionRequest& request,
                                    ItemRecord* record);

class Task {
 public:
  virtual ~Task() = default;
  virtual const std::string& name() const = 0;
  virtual int64_t size() const = 0;  // items after sampling
  virtual std::string ItemId(int64_t i) const = 0;
  virtual ItemRecord Run(int64_t i, CompletionClient& client) const = 0;
  // The task's own settings for the results file (shots, max tokens, prompt mode, sampling).
  virtual nlohmann::ordered_json Settings() const = 0;
  // Said once before the run when the task had to depart from its documented form (a chat task
  // on a client that cannot chat falls back to raw text); empty otherwise.
  virtual std::string Note() const { return {}; }
  // Whether the table lists the accuracy of each group under the task's row (hashhop's hop
  // counts); groups are in the results JSON either way.
  virtual bool ShowsGroups() const { return false; }
};

}  // namespace proctor
