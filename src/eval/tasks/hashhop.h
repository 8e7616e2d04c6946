// HashHop: follow a chain of hash assignments hidden among other chains (after Magic's
// hash-hop generator, regenerated here with proctor's seeded generator; docs/task-evals.md).
// Chat, greedy, 32 new tokens; correct when the first 16-letter run of the answer is the chain's
// last hash; accuracy per hop count.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "eval/tasks/task.h"

namespace proctor {

inline constexpr int kHashHopLength = 16;  // letters per hash (a-z, A-Z)
inline constexpr int kHashHopChains = 12;  // chains per problem; the first is asked about
inline constexpr int kHashHopMaxTokens = 32;
inline constexpr int64_t kHashHopDefaultItems = 100;

struct HashHopItem {
  int hops = 1;
  std::string query;     // the chain's first hash
  std::string expected;  // its last hash
  std::string lines;     // every chain's "KEY = VALUE" lines (last level quoted), shuffled
};

// Item `index` of a run seeded with `seed`: hops = 1 + index % 4; Mulberry32(seed * 1000003 +
// index) draws every hash letter (floor(r * 52) over "a..zA..Z") chain by chain, level by level,
// then shuffles the lines (ShuffledIndices with the next draw as seed).
HashHopItem MakeHashHopItem(uint32_t seed, int64_t index);

// The user turn: the instruction, the lines, and the question.
std::string HashHopPrompt(const HashHopItem& item);

// The first match of [A-Za-z]{16} in the text after thinking (the first 16 letters of the first
// run of at least 16); "" when none.
std::string FirstHash(std::string_view completion);

// `n` items (0: kHashHopDefaultItems). Without chat, the same text as a raw prompt ending in
// "Answer:" (the task's Note() says so).
std::unique_ptr<Task> MakeHashHopTask(int64_t n, uint32_t seed, bool chat);

}  // namespace proctor
