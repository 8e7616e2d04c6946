// Prefetching a column segment of the rows a decoder reads next. A KV cache tile reads one head's
// segment of many rows, a fraction of each row: the hardware prefetcher does not follow that
// stride, so the row decoders (mlx_quant_simd.cc, turbo_quant_simd.cc) prefetch by hand.
#pragma once

#include <array>
#include <cstdint>

#include "tensor/tensor.h"

namespace proctor::quant {

// Elements [k0, k0 + len) of `cols`-element rows, as byte ranges in each view of a coded matrix
// (codes, scales, biases or offsets; a view without rows is skipped), prefetched kAhead rows
// ahead of the row being decoded.
class SegmentPrefetcher {
 public:
  static constexpr int64_t kAhead = 8;

  SegmentPrefetcher(const MatView& codes, const MatView& scales, const MatView& extra, int64_t cols,
                    int64_t k0, int64_t len) {
    for (const MatView* view : {&codes, &scales, &extra}) {
      if (view->rows == 0) continue;
      const auto row_bytes = static_cast<int64_t>(view->RowBytes());
      ranges_[count_++] = {view, k0 * row_bytes / cols, (k0 + len) * row_bytes / cols};
    }
  }

  // Called before decoding row s0 + j of the rows s0 .. s0 + n - 1.
  void Ahead(int64_t s0, int64_t j, int64_t n) const {
    if (j + kAhead >= n) return;
    for (size_t v = 0; v < count_; ++v) {
      const uint8_t* base = ranges_[v].view->Row(s0 + j + kAhead);
      for (int64_t b = ranges_[v].begin; b < ranges_[v].end; b += 64) __builtin_prefetch(base + b);
    }
  }

 private:
  struct Range {
    const MatView* view;
    int64_t begin, end;
  };
  std::array<Range, 3> ranges_{};
  size_t count_ = 0;
};

}  // namespace proctor::quant
