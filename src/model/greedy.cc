// Chunked prefill and greedy decoding (see greedy.h).
#include "model/greedy.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"

namespace proctor {

int32_t ArgmaxLowestIndex(std::span<const float> values) {
  CHECK(!values.empty());
  int32_t best = -1;
  float best_value = 0.0f;
  for (size_t i = 0; i < values.size(); ++i) {
    const float v = values[i];
    if (v != v) continue;  // NaN
    if (best < 0 || v > best_value) {
      best = static_cast<int32_t>(i);
      best_value = v;
    }
  }
  return best < 0 ? 0 : best;
}

Tensor PrefillLastHidden(const RuntimeModel& model, std::span<const int32_t> tokens, int64_t chunk,
                         ModelCache& cache) {
  if (chunk <= 0) Fail("model", "chunk size must be positive (seen {})", chunk);
  CHECK(!tokens.empty());
  Tensor last = Tensor::F32(1, model.hidden_size());  // [1, hidden]
  for (size_t begin = 0; begin < tokens.size(); begin += static_cast<size_t>(chunk)) {
    const size_t end = std::min(tokens.size(), begin + static_cast<size_t>(chunk));
    Tensor hidden = model.ForwardHidden(tokens.subspan(begin, end - begin), cache);
    if (end == tokens.size()) {
      std::copy_n(hidden.RowF32(hidden.rows() - 1), model.hidden_size(), last.RowF32(0));
    }
  }
  return last;
}

std::vector<int32_t> GreedyGenerate(const RuntimeModel& model, std::span<const int32_t> prompt,
                                    const GreedyOptions& options) {
  if (prompt.empty()) Fail("model", "greedy decoding needs at least one prompt token");
  const auto prompt_size = static_cast<int64_t>(prompt.size());
  const int64_t context = model.config().max_position_embeddings;
  if (context > 0 && prompt_size > context) {
    Fail("model", "a prompt of {} tokens exceeds the model's context of {} positions", prompt_size,
         context);
  }
  if (options.reached_context) *options.reached_context = false;
  std::vector<int32_t> out;
  int64_t max_new_tokens = options.max_new_tokens;
  if (context > 0 && prompt_size + max_new_tokens > context) {
    max_new_tokens = context - prompt_size;
    if (options.reached_context) *options.reached_context = true;
  }
  if (max_new_tokens <= 0) return out;
  ModelCache cache = model.MakeCache(prompt_size + max_new_tokens);
  Tensor hidden = PrefillLastHidden(model, prompt, options.chunk, cache);  // [1, hidden]
  Tensor logits = Tensor::F32(1, model.vocab_size());                      // [1, vocab]
  for (int step = 0; step < max_new_tokens; ++step) {
    model.LogitsFromHidden(hidden.View(), logits.MutF32());
    const std::span<const float> row(logits.RowF32(0), static_cast<size_t>(model.vocab_size()));
    if (options.on_step) options.on_step(step, row);
    const auto bad = std::find_if(row.begin(), row.end(),
                                  [](float v) { return std::isnan(v) || v == INFINITY; });
    if (bad != row.end()) {
      Fail("model",
           "the logits of generation step {} hold {} (token {}): the model's weights or "
           "activations are not finite",
           step, *bad, bad - row.begin());
    }
    const int32_t next = ArgmaxLowestIndex(row);
    if (std::find(options.stop_ids.begin(), options.stop_ids.end(), next) !=
        options.stop_ids.end()) {
      break;
    }
    out.push_back(next);
    if (step + 1 == max_new_tokens) break;
    if (options.stop_after && options.stop_after(out)) break;
    hidden = model.ForwardHidden(std::span<const int32_t>(&out.back(), 1), cache);
  }
  return out;
}

}  // namespace proctor
