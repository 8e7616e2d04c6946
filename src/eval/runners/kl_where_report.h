// `proctor kl --where`: where the KL lives (eval/scoring/kl_where.h) as tables for people, the
// worst positions with their tokens as text in context when a tokenizer is at hand.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "eval/scoring/kl_where.h"
#include "text/tokenizer/tokenizer.h"

namespace proctor {

struct KlWhereContext {
  // Sequence s's tokens (ctx_len of them); empty: no context is shown.
  std::function<std::vector<int32_t>(int64_t seq)> tokens{};
  const text::Tokenizer* tokenizer = nullptr;  // null: token ids instead of text
  // The sequence index of the token that scored position 0 predicts (1 teacher-forced;
  // ctx_len - S on the decode path of S steps).
  int64_t first_predicted = 1;
  int context_tokens = 8;  // tokens of context before each worst position
};

std::string FormatKlWhere(const KlWhere& where, const KlWhereContext& context);

}  // namespace proctor
