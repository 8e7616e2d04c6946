// Test helpers (header-only) for the runners' tests: fake forwards through the scoring seam.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "eval/runners/teacher_forced.h"
#include "tensor/tensor.h"

namespace proctor::testing {

// A fake forward for the scoring seam (eval/runners/teacher_forced.h): sequence s (in the order
// they are started) hands out rows(s, start, tokens), a view of the logits rows for the chunk's
// tokens at positions [start, start + tokens.size()). What `rows` returns is passed on unchecked,
// so tests can make it misbehave.
using FakeRowsFn =
    std::function<MatView(int64_t seq, int64_t start, std::span<const int32_t> tokens)>;
inline TeacherForcedLogits FakeForward(FakeRowsFn rows) {
  class Stepper final : public LogitsStepper {
   public:
    Stepper(const FakeRowsFn* rows, int64_t seq) : rows_(rows), seq_(seq) {}
    MatView Step(std::span<const int32_t> tokens) override {
      const MatView v = (*rows_)(seq_, next_, tokens);
      next_ += static_cast<int64_t>(tokens.size());
      return v;
    }

   private:
    const FakeRowsFn* rows_;
    int64_t seq_, next_ = 0;
  };
  auto shared = std::make_shared<FakeRowsFn>(std::move(rows));
  auto started = std::make_shared<int64_t>(0);
  return [shared, started](int64_t) -> std::unique_ptr<LogitsStepper> {
    return std::make_unique<Stepper>(shared.get(), (*started)++);
  };
}

// Rows of `logits` ([n_seqs, ctx, stride] f32): `vocab` columns of each row, row stride `stride`.
inline MatView LogitsRows(const std::vector<float>& logits, int64_t ctx, int64_t stride,
                          int64_t vocab, int64_t seq, int64_t start, int64_t n) {
  return MatView{DType::kF32, n, vocab, static_cast<size_t>(stride) * 4,
                 reinterpret_cast<const uint8_t*>(logits.data() + (seq * ctx + start) * stride)};
}

}  // namespace proctor::testing
