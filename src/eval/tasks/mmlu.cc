#include "eval/tasks/mmlu.h"

#include <fmt/format.h>
#include <algorithm>

#include "eval/scoring/sample_indices.h"

namespace proctor {
namespace {

constexpr int kShots = 5;
constexpr const char* kLetters[4] = {"A", "B", "C", "D"};

std::string QuestionBlock(const MmluItem& item) {
  std::string out = StripWhitespace(item.question);
  for (int c = 0; c < 4; ++c) out += fmt::format("\n{}. {}", kLetters[c], item.choices[c]);
  out += "\nAnswer:";
  return out;
}

class MmluTask : public Task {
 public:
  MmluTask(std::vector<MmluSubject> subjects, int64_t n, uint32_t seed)
      : subjects_(std::move(subjects)),
        picks_(SampleMmlu(subjects_, n, seed)),
        n_(n),
        seed_(seed),
        picked_per_subject_(subjects_.size(), 0) {
    for (const MmluPick& pick : picks_) ++picked_per_subject_[static_cast<size_t>(pick.subject)];
  }

  const std::string& name() const override { return name_; }
  int64_t size() const override { return static_cast<int64_t>(picks_.size()); }
  std::string ItemId(int64_t i) const override {
    const MmluPick& pick = picks_[static_cast<size_t>(i)];
    return fmt::format("{}/{}", subjects_[static_cast<size_t>(pick.subject)].name, pick.item);
  }

  ItemRecord Run(int64_t i, CompletionClient& client) const override {
    const MmluPick& pick = picks_[static_cast<size_t>(i)];
    const MmluSubject& subject = subjects_[static_cast<size_t>(pick.subject)];
    const MmluItem& item = subject.test[static_cast<size_t>(pick.item)];
    ItemRecord record;
    record.id = ItemId(i);
    record.group = subject.name;
    record.prompt = MmluPrompt(subject, item);
    record.expected = kLetters[item.answer];
    // The 5-shot prefix is offered for reuse only when another sampled item of the subject will
    // reuse it: evaluating it apart for a single item only costs time.
    const bool shared = picked_per_subject_[static_cast<size_t>(pick.subject)] > 1;
    const ChoiceResult result =
        client.ChooseNextToken({.prompt = record.prompt,
                                .choices = {" A", " B", " C", " D"},
                                .shared_prefix = shared ? MmluFewShotPrefix(subject) : ""});
    if (MarkRequestError(result.status, result.error, &record)) return record;
    if (result.choice < 0) {
      record.outcome = ItemOutcome::kUnscorable;
      return record;
    }
    record.completion = kLetters[result.choice];
    record.extracted = record.completion;
    record.outcome = result.choice == item.answer ? ItemOutcome::kCorrect : ItemOutcome::kWrong;
    return record;
  }

  nlohmann::ordered_json Settings() const override {
    return {{"shots", kShots},
            {"prompt", "raw (no chat template)"},
            {"scoring", "next-token choice among ' A', ' B', ' C', ' D'"},
            {"n", n_},
            {"seed", seed_},
            {"subjects", subjects_.size()}};
  }

 private:
  std::string name_ = "mmlu";
  std::vector<MmluSubject> subjects_;
  std::vector<MmluPick> picks_;
  int64_t n_;
  uint32_t seed_;
  std::vector<int64_t> picked_per_subject_;  // sampled items of each subject
};

}  // namespace

std::string MmluFewShotPrefix(const MmluSubject& subject) {
  std::string subject_words = subject.name;
  std::replace(subject_words.begin(), subject_words.end(), '_', ' ');
  std::string out = fmt::format(
      "The following are multiple choice questions (with answers) about {}.\n\n", subject_words);
  for (int s = 0; s < kShots; ++s) {
    const MmluItem& shot = subject.dev.at(static_cast<size_t>(s));
    out += QuestionBlock(shot) + " " + kLetters[shot.answer] + "\n\n";
  }
  return out;
}

std::string MmluPrompt(const MmluSubject& subject, const MmluItem& item) {
  return MmluFewShotPrefix(subject) + QuestionBlock(item);
}

std::vector<MmluPick> SampleMmlu(const std::vector<MmluSubject>& subjects, int64_t n,
                                 uint32_t seed) {
  int64_t total = 0;
  for (const MmluSubject& subject : subjects) total += static_cast<int64_t>(subject.test.size());
  const bool all = n <= 0 || n >= total;
  const int64_t per_subject =
      all ? 0
          : std::max<int64_t>(1, n / static_cast<int64_t>(std::max<size_t>(1, subjects.size())));
  std::vector<MmluPick> picks;
  for (size_t s = 0; s < subjects.size(); ++s) {
    const int64_t size = static_cast<int64_t>(subjects[s].test.size());
    if (all) {
      for (int64_t i = 0; i < size; ++i) picks.push_back({static_cast<int>(s), i});
    } else {
      for (const int64_t i : SampleIndices(size, per_subject, seed)) {
        picks.push_back({static_cast<int>(s), i});
      }
    }
  }
  if (!all && static_cast<int64_t>(picks.size()) > n) picks.resize(static_cast<size_t>(n));
  return picks;
}

std::unique_ptr<Task> MakeMmluTask(std::vector<MmluSubject> subjects, int64_t n, uint32_t seed) {
  return std::make_unique<MmluTask>(std::move(subjects), n, seed);
}

}  // namespace proctor
