#include "eval/tasks/mmlu.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>

#include "eval/clients/scripted_client.h"
#include "eval/scoring/sample_indices.h"
#include "util/testing_files.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;

MmluSubject SmallSubject() {
  MmluSubject s;
  s.name = "college_physics";
  for (int i = 0; i < 6; ++i) {
    MmluItem item;
    item.question = fmt::format("  Q{}?\n", i);  // trimmed in the prompt
    for (int c = 0; c < 4; ++c) item.choices[c] = std::string(1, static_cast<char>('w' + c));
    item.answer = i % 4;
    s.dev.push_back(item);
  }
  for (int i = 0; i < 10; ++i) {
    MmluItem item;
    item.question = fmt::format("T{}", i);
    for (int c = 0; c < 4; ++c) item.choices[c] = fmt::format(" c{}", c);
    item.answer = (i * 3) % 4;
    s.test.push_back(item);
  }
  return s;
}

TEST(MmluPrompt, TheDocumentedBytes) {
  const MmluSubject s = SmallSubject();
  EXPECT_EQ(MmluPrompt(s, s.test[2]),
            "The following are multiple choice questions (with answers) about college physics.\n\n"
            "Q0?\nA. w\nB. x\nC. y\nD. z\nAnswer: A\n\n"
            "Q1?\nA. w\nB. x\nC. y\nD. z\nAnswer: B\n\n"
            "Q2?\nA. w\nB. x\nC. y\nD. z\nAnswer: C\n\n"
            "Q3?\nA. w\nB. x\nC. y\nD. z\nAnswer: D\n\n"
            "Q4?\nA. w\nB. x\nC. y\nD. z\nAnswer: A\n\n"
            "T2\nA.  c0\nB.  c1\nC.  c2\nD.  c3\nAnswer:");
}

TEST(MmluPrompt, TheRealFirstAstronomyItem) {
  const fs::path dir = testing::FixturesDir() / "mmlu";
  if (!fs::exists(dir)) GTEST_SKIP() << "fixture absent: " << dir;
  const std::vector<MmluSubject> subjects = ReadMmlu(dir);
  const auto s = std::find_if(subjects.begin(), subjects.end(),
                              [](const MmluSubject& x) { return x.name == "astronomy"; });
  ASSERT_NE(s, subjects.end());
  const std::string prompt = MmluPrompt(*s, s->test[0]);
  EXPECT_TRUE(prompt.starts_with(
      "The following are multiple choice questions (with answers) about astronomy.\n\n"
      "You are pushing a truck along a road. Would it be easier to accelerate this truck on "
      "Mars? Why? (Assume there is no friction)\nA. It would be harder since the truck is "
      "heavier on Mars.\nB. It would be easier since the truck is lighter on Mars.\nC. It would "
      "be harder since the truck is lighter on Mars.\nD. It would be the same no matter where "
      "you are.\nAnswer: D\n\nWhere do most short-period comets"))
      << prompt.substr(0, 600);
  EXPECT_TRUE(prompt.ends_with(
      "(\"rusted\") minerals.\nB. Because the atmosphere scatters more light at bluer "
      "wavelengths transmitting mostly red light.\nC. Because Mars is covered with ancient lava "
      "flows which are red in color.\nD. Because flowing water on Mars's surface altered the "
      "surface minerals several billion years ago.\nAnswer: A\n\n"
      "What is true for a type-Ia (\"type one-a\") supernova?\nA. This type occurs in binary "
      "systems.\nB. This type occurs in young galaxies.\nC. This type produces gamma-ray "
      "bursts.\nD. This type produces high amounts of X-rays.\nAnswer:"))
      << prompt.substr(prompt.size() - 600);
}

TEST(SampleMmlu, StratifiedBySubjectThenCut) {
  std::vector<MmluSubject> subjects(3, SmallSubject());
  subjects[2].test.resize(1);
  // n = 7: floor(7 / 3) = 2 per subject (the third has only 1), 5 in all.
  const auto picks = SampleMmlu(subjects, 7, 42);
  ASSERT_EQ(picks.size(), 5u);
  EXPECT_EQ(picks[0].subject, 0);
  EXPECT_EQ(picks[2].subject, 1);
  EXPECT_EQ(picks[4].subject, 2);
  // sampleIndices(10, 2, 42) per subject (FORMATS.md section 5, sample_indices_test.cc).
  const std::vector<int64_t> expected = SampleIndices(10, 2, 42);
  EXPECT_EQ(picks[0].item, expected[0]);
  EXPECT_EQ(picks[1].item, expected[1]);
  // n smaller than the subject count: one per subject, cut to n.
  const auto two = SampleMmlu(subjects, 2, 42);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[1].subject, 1);
  // n = 0 or n >= all: every item in order.
  EXPECT_EQ(SampleMmlu(subjects, 0, 42).size(), 21u);
  EXPECT_EQ(SampleMmlu(subjects, 100, 42).size(), 21u);
}

TEST(MmluTask, ScriptedChoicesGiveExactlyTheExpectedOutcomes) {
  const MmluSubject s = SmallSubject();
  // Answers right on even test items, wrong on odd ones; item 9 unscorable, item 7 errors.
  ScriptedClient client(
      [](const CompletionRequest&) { return CompletionResult{}; },
      [&](const ChoiceRequest& request) {
        ChoiceResult result;
        for (int i = 0; i < 10; ++i) {
          if (request.prompt != MmluPrompt(s, s.test[i])) continue;
          if (i == 9) return result;  // choice -1
          if (i == 7) return ChoiceResult{.status = ClientStatus::kRequestError, .error = "down"};
          result.choice = i % 2 == 0 ? s.test[i].answer : (s.test[i].answer + 1) % 4;
        }
        return result;
      });
  const auto task = MakeMmluTask({s}, 0, 42);
  ASSERT_EQ(task->size(), 10);
  int outcomes[4] = {};
  for (int64_t i = 0; i < task->size(); ++i) {
    const ItemRecord record = task->Run(i, client);
    ++outcomes[static_cast<int>(record.outcome)];
    EXPECT_EQ(record.id, "college_physics/" + std::to_string(i));
    EXPECT_EQ(record.expected, std::string(1, static_cast<char>('A' + s.test[i].answer)));
  }
  EXPECT_EQ(outcomes[static_cast<int>(ItemOutcome::kCorrect)], 5);
  EXPECT_EQ(outcomes[static_cast<int>(ItemOutcome::kWrong)], 3);
  EXPECT_EQ(outcomes[static_cast<int>(ItemOutcome::kUnscorable)], 1);
  EXPECT_EQ(outcomes[static_cast<int>(ItemOutcome::kRequestError)], 1);
  ASSERT_FALSE(client.choices.empty());
  EXPECT_EQ(client.choices[0].choices, (std::vector<std::string>{" A", " B", " C", " D"}));
  // Ten items of one subject share its 5-shot prefix, offered for reuse.
  EXPECT_EQ(client.choices[0].shared_prefix, MmluFewShotPrefix(s));
}

TEST(MmluTask, APrefixIsOfferedForReuseOnlyWhenTwoItemsShareIt) {
  MmluSubject other = SmallSubject();
  other.name = "virology";
  ScriptedClient client([](const CompletionRequest&) { return CompletionResult{}; },
                        [](const ChoiceRequest&) { return ChoiceResult{.choice = 0}; });
  // n = 2 over two subjects: one item each, so neither prefix is used twice.
  const auto single = MakeMmluTask({SmallSubject(), other}, 2, 42);
  ASSERT_EQ(single->size(), 2);
  single->Run(0, client);
  single->Run(1, client);
  EXPECT_EQ(client.choices[0].shared_prefix, "");
  EXPECT_EQ(client.choices[1].shared_prefix, "");
  // n = 4: two items each.
  const auto pairs = MakeMmluTask({SmallSubject(), other}, 4, 42);
  pairs->Run(0, client);
  EXPECT_EQ(client.choices[2].shared_prefix, MmluFewShotPrefix(SmallSubject()));
}

}  // namespace
}  // namespace proctor
