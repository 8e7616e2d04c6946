#include "eval/tasks/gsm8k.h"

#include <fmt/format.h>

#include "eval/tasks/answer_extraction.h"

namespace proctor {
namespace {

// Written for proctor (not GSM8K items), in GSM8K's own solution style.
constexpr const char* kExemplars =
    "Q: There are 15 trees in the grove. Grove workers will plant trees in the grove today. "
    "After they are done, there will be 21 trees. How many trees did the grove workers plant "
    "today?\n"
    "A: There were 15 trees and there are 21 trees after the planting, so the workers planted "
    "21 - 15 = 6 trees.\n#### 6\n\n"
    "Q: Leah had 32 chocolates and her sister had 42. If they ate 35, how many pieces do they "
    "have left in total?\n"
    "A: Together they had 32 + 42 = 74 chocolates. After eating 35 they have 74 - 35 = 39 "
    "left.\n#### 39\n\n"
    "Q: Shawn has five toys. For Christmas, he got two toys each from his mom and dad. How many "
    "toys does he have now?\n"
    "A: He got 2 + 2 = 4 more toys, so he has 5 + 4 = 9 toys now.\n#### 9\n\n";

std::string FormatNumber(double value) {
  if (value == static_cast<double>(static_cast<int64_t>(value))) {
    return fmt::format("{}", static_cast<int64_t>(value));
  }
  return fmt::format("{}", value);
}

class Gsm8kTask : public Task {
 public:
  Gsm8kTask(std::vector<Gsm8kItem> items, int64_t n, uint32_t seed, bool chat)
      : items_(std::move(items)),
        picks_(SampleTaskItems(static_cast<int64_t>(items_.size()), n, seed)),
        n_(n),
        seed_(seed),
        chat_(chat) {}

  const std::string& name() const override { return name_; }
  int64_t size() const override { return static_cast<int64_t>(picks_.size()); }
  std::string ItemId(int64_t i) const override {
    return fmt::format("{}", picks_[static_cast<size_t>(i)]);
  }

  ItemRecord Run(int64_t i, CompletionClient& client) const override {
    const Gsm8kItem& item = items_[static_cast<size_t>(picks_[static_cast<size_t>(i)])];
    ItemRecord record;
    record.id = ItemId(i);
    record.prompt = Gsm8kPrompt(item);
    record.expected = FormatNumber(item.answer);
    CompletionRequest request;
    request.max_tokens = kGsm8kMaxTokens;
    if (chat_) {
      request.chat = true;
      request.messages = UserTurn(record.prompt);
      request.enable_thinking = false;
    } else {
      request.prompt = record.prompt;
      request.stop = {kGsm8kRawStop};
    }
    const std::optional<CompletionResult> reply = Ask(client, request, &record);
    if (!reply) return record;
    const CompletionResult& result = *reply;
    record.completion = result.text;
    const NumericAnswer answer = ExtractGsm8kAnswer(result.text);
    if (!answer.value) {
      record.outcome = ItemOutcome::kUnscorable;
      return record;
    }
    record.extracted = FormatNumber(*answer.value);
    record.outcome =
        Gsm8kCorrect(item.answer, *answer.value) ? ItemOutcome::kCorrect : ItemOutcome::kWrong;
    return record;
  }

  nlohmann::ordered_json Settings() const override {
    return {{"shots", 3},
            {"prompt", chat_ ? "chat (one user turn, generation prompt, thinking off)"
                             : "raw text (no chat template), stop at '\\nQ:'"},
            {"max_tokens", kGsm8kMaxTokens},
            {"decoding", "greedy"},
            {"n", n_},
            {"seed", seed_}};
  }

  std::string Note() const override {
    if (chat_) return {};
    return "gsm8k: no chat template, so the prompt is raw text (exemplars + question) and "
           "generation stops at '\\nQ:'";
  }

 private:
  std::string name_ = "gsm8k";
  std::vector<Gsm8kItem> items_;
  std::vector<int64_t> picks_;
  int64_t n_;
  uint32_t seed_;
  bool chat_;
};

}  // namespace

const std::string& Gsm8kExemplars() {
  static const std::string exemplars = kExemplars;
  return exemplars;
}

std::string Gsm8kPrompt(const Gsm8kItem& item) {
  return Gsm8kExemplars() + "Q: " + item.question + "\nA:";
}

std::unique_ptr<Task> MakeGsm8kTask(std::vector<Gsm8kItem> items, int64_t n, uint32_t seed,
                                    bool chat) {
  return std::make_unique<Gsm8kTask>(std::move(items), n, seed, chat);
}

}  // namespace proctor
