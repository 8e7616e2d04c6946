#include "eval/tasks/hashhop.h"

#include <fmt/format.h>

#include "eval/scoring/sample_indices.h"
#include "eval/tasks/answer_extraction.h"

namespace proctor {
namespace {

constexpr std::string_view kLetters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

std::string DrawHash(Mulberry32& random) {
  std::string hash(kHashHopLength, ' ');
  for (char& c : hash) c = kLetters[static_cast<size_t>(random.Next() * kLetters.size())];
  return hash;
}

bool IsLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

class HashHopTask : public Task {
 public:
  HashHopTask(int64_t n, uint32_t seed, bool chat)
      : n_(n <= 0 ? kHashHopDefaultItems : n), seed_(seed), chat_(chat) {}

  const std::string& name() const override { return name_; }
  int64_t size() const override { return n_; }
  std::string ItemId(int64_t i) const override { return fmt::format("{}", i); }

  ItemRecord Run(int64_t i, CompletionClient& client) const override {
    const HashHopItem item = MakeHashHopItem(seed_, i);
    ItemRecord record;
    record.id = ItemId(i);
    record.group = fmt::format("hops={}", item.hops);
    record.prompt = HashHopPrompt(item);
    record.expected = item.expected;
    CompletionRequest request;
    request.max_tokens = kHashHopMaxTokens;
    if (chat_) {
      request.chat = true;
      request.messages = UserTurn(record.prompt);
    } else {
      request.prompt = record.prompt + "\nAnswer:";
    }
    const std::optional<CompletionResult> answer = Ask(client, request, &record);
    if (!answer) return record;
    const CompletionResult& result = *answer;
    record.completion = result.text;
    record.extracted = FirstHash(result.text);
    if (record.extracted.empty()) {
      record.outcome = ItemOutcome::kUnscorable;
    } else {
      record.outcome =
          record.extracted == item.expected ? ItemOutcome::kCorrect : ItemOutcome::kWrong;
    }
    return record;
  }

  nlohmann::ordered_json Settings() const override {
    return {{"hops", "1 + item % 4"},
            {"chains", kHashHopChains},
            {"hash_letters", kHashHopLength},
            {"max_tokens", kHashHopMaxTokens},
            {"prompt", chat_ ? "chat (one user turn, generation prompt, thinking off)"
                             : "raw text ending in 'Answer:'"},
            {"n", n_},
            {"seed", seed_}};
  }

  bool ShowsGroups() const override { return true; }

  std::string Note() const override {
    if (chat_) return {};
    return "hashhop: no chat template, so the prompt is raw text ending in 'Answer:'";
  }

 private:
  std::string name_ = "hashhop";
  int64_t n_;
  uint32_t seed_;
  bool chat_;
};

}  // namespace

HashHopItem MakeHashHopItem(uint32_t seed, int64_t index) {
  HashHopItem item;
  item.hops = 1 + static_cast<int>(index % 4);
  Mulberry32 random(static_cast<uint32_t>(seed * 1000003u + static_cast<uint32_t>(index)));
  std::vector<std::string> lines;
  for (int chain = 0; chain < kHashHopChains; ++chain) {
    std::string key = DrawHash(random);
    if (chain == 0) item.query = key;
    for (int level = 0; level < item.hops; ++level) {
      std::string value = DrawHash(random);
      const bool last = level + 1 == item.hops;
      lines.push_back(last ? fmt::format("{} = '{}'", key, value)
                           : fmt::format("{} = {}", key, value));
      if (chain == 0 && last) item.expected = value;
      key = std::move(value);
    }
  }
  const uint32_t shuffle_seed = static_cast<uint32_t>(random.Next() * 4294967296.0);
  for (const int64_t at : ShuffledIndices(static_cast<int64_t>(lines.size()), shuffle_seed)) {
    if (!item.lines.empty()) item.lines += '\n';
    item.lines += lines[static_cast<size_t>(at)];
  }
  return item;
}

std::string HashHopPrompt(const HashHopItem& item) {
  return fmt::format(
      "Below are variable assignments, one per line. Each variable is assigned another "
      "variable or, at the end of a chain, a final value in single quotes.\n\n{}\n\n"
      "Follow the assignments starting from {}. What final value does it reach? Answer with "
      "that 16-letter value only.",
      item.lines, item.query);
}

std::string FirstHash(std::string_view completion) {
  const std::string_view text = AnswerAfterThinking(completion);
  size_t run = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    run = IsLetter(text[i]) ? run + 1 : 0;
    if (run == static_cast<size_t>(kHashHopLength)) {
      return std::string(text.substr(i + 1 - run, run));
    }
  }
  return {};
}

std::unique_ptr<Task> MakeHashHopTask(int64_t n, uint32_t seed, bool chat) {
  return std::make_unique<HashHopTask>(n, seed, chat);
}

}  // namespace proctor
