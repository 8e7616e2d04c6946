#include "eval/tasks/hashhop.h"

#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "eval/clients/scripted_client.h"
#include "eval/tasks/task_runner.h"

namespace proctor {
namespace {

// Parses "KEY = VALUE" / "KEY = 'VALUE'" lines; follows `from` to a quoted value, counting hops.
std::pair<std::string, int> Follow(const std::string& lines, const std::string& from) {
  std::map<std::string, std::pair<std::string, bool>> next;
  std::istringstream in(lines);
  for (std::string line; std::getline(in, line);) {
    const size_t eq = line.find(" = ");
    std::string value = line.substr(eq + 3);
    const bool quoted = value.front() == '\'';
    if (quoted) value = value.substr(1, value.size() - 2);
    next[line.substr(0, eq)] = {value, quoted};
  }
  std::string at = from;
  for (int hops = 1; hops < 100; ++hops) {
    const auto [value, quoted] = next.at(at);
    if (quoted) return {value, hops};
    at = value;
  }
  return {"", -1};
}

TEST(HashHop, ItemsAreChainsOfTheDocumentedShape) {
  const std::regex line_form("^[A-Za-z]{16} = ([A-Za-z]{16}|'[A-Za-z]{16}')$");
  for (int64_t index = 0; index < 12; ++index) {
    SCOPED_TRACE(index);
    const HashHopItem item = MakeHashHopItem(42, index);
    EXPECT_EQ(item.hops, 1 + index % 4);
    std::istringstream in(item.lines);
    int count = 0, quoted = 0;
    std::set<std::string> keys;
    for (std::string line; std::getline(in, line); ++count) {
      EXPECT_TRUE(std::regex_match(line, line_form)) << line;
      quoted += line.back() == '\'' ? 1 : 0;
      keys.insert(line.substr(0, 16));
    }
    EXPECT_EQ(count, kHashHopChains * item.hops);
    EXPECT_EQ(quoted, kHashHopChains);  // one end per chain
    EXPECT_EQ(keys.size(), static_cast<size_t>(count));
    const auto [end, hops] = Follow(item.lines, item.query);
    EXPECT_EQ(end, item.expected);
    EXPECT_EQ(hops, item.hops);
    EXPECT_NE(HashHopPrompt(item).find(item.query), std::string::npos);
    EXPECT_NE(HashHopPrompt(item).find(item.lines), std::string::npos);
  }
  // Seeded: the same item again, another with another seed or index.
  EXPECT_EQ(MakeHashHopItem(42, 3).lines, MakeHashHopItem(42, 3).lines);
  EXPECT_NE(MakeHashHopItem(42, 3).lines, MakeHashHopItem(43, 3).lines);
  EXPECT_NE(MakeHashHopItem(42, 3).query, MakeHashHopItem(42, 7).query);
}

TEST(FirstHash, TheFirstSixteenLetterRun) {
  EXPECT_EQ(FirstHash("'AbCdEfGhIjKlMnOp'"), "AbCdEfGhIjKlMnOp");
  EXPECT_EQ(FirstHash("It is abcdefghijklmnopq."), "abcdefghijklmnop");  // 17 letters: first 16
  EXPECT_EQ(FirstHash("short words only, 1234567890123456"), "");
  EXPECT_EQ(FirstHash("<think>ZZZZZZZZZZZZZZZZ</think> answer: QWERTYUIOPasdfgh"),
            "QWERTYUIOPasdfgh");
  EXPECT_EQ(FirstHash(""), "");
}

TEST(HashHopTask, AScriptedSolverScoresPerHop) {
  // Solves every item by following the chain, except the 3-hop ones (answers the first hop).
  ScriptedClient client(
      [](const CompletionRequest& request) {
        const std::string prompt = request.messages[0]["content"].get<std::string>();
        const size_t from = prompt.find("starting from ") + 14;
        const std::string query = prompt.substr(from, 16);
        const size_t begin = prompt.find("\n\n") + 2;
        const std::string lines = prompt.substr(begin, prompt.find("\n\nFollow") - begin);
        const auto [end, hops] = Follow(lines, query);
        if (hops == 3) {
          const size_t at = lines.find(query + " = ");
          return CompletionResult{.text = lines.substr(at + 19, 16)};
        }
        return CompletionResult{.text = "The value is '" + end + "'."};
      },
      [](const ChoiceRequest&) { return ChoiceResult{}; });
  const auto task = MakeHashHopTask(20, 42, true);
  ASSERT_EQ(task->size(), 20);
  const std::vector<TaskScore> scores = RunTasks({task.get()}, client, {.quiet = true});
  ASSERT_EQ(scores.size(), 1u);
  EXPECT_EQ(scores[0].count(ItemOutcome::kCorrect), 15);
  EXPECT_EQ(scores[0].count(ItemOutcome::kWrong), 5);
  ASSERT_EQ(scores[0].groups.size(), 4u);
  EXPECT_EQ(scores[0].groups.at("hops=3"), (std::array<int64_t, 2>{5, 0}));
  EXPECT_EQ(scores[0].groups.at("hops=1"), (std::array<int64_t, 2>{5, 5}));
  EXPECT_EQ(client.completions[0].max_tokens, 32);
  EXPECT_FALSE(client.completions[0].enable_thinking);
  EXPECT_EQ(MakeHashHopTask(0, 42, true)->size(), kHashHopDefaultItems);
}

}  // namespace
}  // namespace proctor
