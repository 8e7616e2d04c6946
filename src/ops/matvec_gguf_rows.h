// What the fused GGUF matrix-vector kernels (matvec_gguf.cc for AVX-512, matvec_gguf_avx2.cc for
// AVX2) share: their inputs, the software prefetch of the next rows, and the walk over the
// output rows in passes of a few rows that share the loads of x. Internal to src/ops.
#pragma once

#include <emmintrin.h>
#include <xmmintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "tensor/tensor.h"
#include "util/error.h"
#include "util/f16_table.h"

namespace proctor::ops::internal {

inline float HalfAt(const float* f16, const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16[h];
}

// Software prefetch of the next pass's rows while this pass runs. Rows are short (a 2048-wide
// Q4_0 row is 1152 bytes) and several are read at once, too many short streams for the hardware
// prefetcher alone; the next pass's rows are one contiguous range, prefetched line by line in
// step with the blocks consumed, so it is in cache when the next pass starts.
struct Prefetcher {
  const char* next = nullptr;  // next line to prefetch (nullptr: off)
  const char* end = nullptr;   // end of the next pass's rows
  const char* base = nullptr;  // start of the next pass's rows
  int64_t step = 0;            // bytes of the next pass per block of this pass

  void Advance(int64_t blocks_done) {
    if (next == nullptr) return;
    const char* target = std::min(end, base + blocks_done * step);
    for (; next < target; next += 64) _mm_prefetch(next, _MM_HINT_T0);
  }
};

// The 8 six-bit (scale, min) pairs of a Q4_K / Q5_K super-block, unpacked with word operations
// into bytes (byte j of *scales / *mins: sub-block j), as ggml's get_scale_min_k4 defines them:
// j < 4: scale = q[j] & 63, min = q[j + 4] & 63; j >= 4: scale = (q[j + 4] & 15) | (q[j - 4] >> 6)
// << 4, min = (q[j + 4] >> 4) | (q[j] >> 6) << 4.
inline void UnpackK4(const uint8_t* packed, __m128i* scales, __m128i* mins) {
  uint32_t w[3];
  std::memcpy(w, packed, 12);
  const uint32_t sc_lo = w[0] & 0x3F3F3F3Fu, m_lo = w[1] & 0x3F3F3F3Fu;
  const uint32_t sc_hi = (w[2] & 0x0F0F0F0Fu) | (((w[0] >> 6) & 0x03030303u) << 4);
  const uint32_t m_hi = ((w[2] >> 4) & 0x0F0F0F0Fu) | (((w[1] >> 6) & 0x03030303u) << 4);
  *scales = _mm_setr_epi32(static_cast<int>(sc_lo), static_cast<int>(sc_hi), 0, 0);
  *mins = _mm_setr_epi32(static_cast<int>(m_lo), static_cast<int>(m_hi), 0, 0);
}

struct GgufRowInputs {
  const float* x;       // [K]
  const float* xsum;    // [K / 16]: sums of x over each group of 16
  const float* xsum32;  // [K / 32]: sums of x over each group of 32
  int64_t n_blocks;     // blocks per row
  const float* f16;     // F16ToF32Table()
  mutable Prefetcher prefetch;
};

// Weight rows per pass of the fused kernels (they share the loads of x).
inline constexpr int kRowsPerPass = 4;

// Rows [n_begin, n_end) of w in passes of up to kRowsPerPass rows: `pass.template
// operator()<R>(in, row_ptrs, out)` computes R outputs from the inputs `in` (any struct with the
// members `n_blocks` and `prefetch`; the prefetch is set here for each pass). Every output is one
// fixed chain over its row, so results do not depend on how the rows are partitioned.
template <class In, class Pass>
void WalkRowPasses(const MatView& w, float* out, int64_t n_begin, int64_t n_end, In& in,
                   Pass pass) {
  constexpr int kRows = kRowsPerPass;
  const int64_t row_bytes = static_cast<int64_t>(w.RowBytes());
  const bool contiguous = static_cast<int64_t>(w.row_stride) == row_bytes;
  for (int64_t n = n_begin; n < n_end; n += kRows) {
    const int rows = static_cast<int>(std::min<int64_t>(kRows, n_end - n));
    const int64_t next_rows = std::min<int64_t>(kRows, n_end - n - rows);
    in.prefetch = Prefetcher{};
    if (contiguous && next_rows > 0) {
      const char* next = reinterpret_cast<const char*>(w.Row(n + rows));
      in.prefetch =
          Prefetcher{next, next + next_rows * row_bytes, next, next_rows * row_bytes / in.n_blocks};
    }
    const uint8_t* row_ptrs[kRows];
    for (int r = 0; r < rows; ++r) row_ptrs[r] = w.Row(n + r);
    switch (rows) {
      case 4:
        pass.template operator()<4>(in, row_ptrs, out + n);
        break;
      case 3:
        pass.template operator()<3>(in, row_ptrs, out + n);
        break;
      case 2:
        pass.template operator()<2>(in, row_ptrs, out + n);
        break;
      default:
        pass.template operator()<1>(in, row_ptrs, out + n);
        break;
    }
  }
}

// WalkRowPasses over f32 activations x[K]: `sum16(x, K, sums)` writes the sums of x over each 16
// values (the kernel's own fixed order), from which the inputs' group sums are made.
template <class Sum16, class Pass>
void ForEachRowPass(const float* x, const MatView& w, float* out, int64_t n_begin, int64_t n_end,
                    Sum16 sum16, Pass pass) {
  const int64_t block_elems = static_cast<int64_t>(Info(w.type).block_elems);
  CHECK_MSG(w.cols % block_elems == 0, "{} rows of {} values", Name(w.type), w.cols);
  thread_local std::vector<float> xsum, xsum32;  // [K / 16], [K / 32]
  xsum.resize(static_cast<size_t>(w.cols / 16));
  xsum32.resize(static_cast<size_t>(w.cols / 32));
  sum16(x, w.cols, xsum.data());
  for (size_t g = 0; g < xsum32.size(); ++g) xsum32[g] = xsum[2 * g] + xsum[2 * g + 1];
  GgufRowInputs in{x, xsum.data(), xsum32.data(), w.cols / block_elems, F16ToF32Table(), {}};
  WalkRowPasses(w, out, n_begin, n_end, in, pass);
}

}  // namespace proctor::ops::internal
