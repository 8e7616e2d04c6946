// Causal grouped-query attention (see attention.h).
#include "ops/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/convert.h"
#include "ops/matmul_kernels.h"
#include "util/error.h"
#include "util/half.h"

namespace proctor::ops {
namespace {

void CheckAttentionArgs(const MatView& q, const MatView& k, const MatView& v, int64_t pos0,
                        int n_heads, int n_kv_heads, int head_dim, MutMatF32 out) {
  CHECK(q.type == DType::kF32);
  CHECK_MSG(k.type == v.type && (k.type == DType::kF32 || k.type == DType::kBF16), "k {} v {}",
            Name(k.type), Name(v.type));
  CHECK_MSG(n_kv_heads > 0 && n_heads % n_kv_heads == 0, "{} heads, {} kv heads", n_heads,
            n_kv_heads);
  CHECK_MSG(q.cols >= static_cast<int64_t>(n_heads) * head_dim &&
                k.cols >= static_cast<int64_t>(n_kv_heads) * head_dim &&
                v.cols >= static_cast<int64_t>(n_kv_heads) * head_dim,
            "q cols {} k cols {} v cols {} for {}/{} heads of {}", q.cols, k.cols, v.cols, n_heads,
            n_kv_heads, head_dim);
  CHECK_MSG(pos0 >= 0 && k.rows >= pos0 + q.rows && v.rows >= pos0 + q.rows,
            "pos0 {} + {} queries over k rows {} v rows {}", pos0, q.rows, k.rows, v.rows);
  CHECK(out.rows == q.rows && out.cols >= static_cast<int64_t>(n_heads) * head_dim);
}

// KV row s, head kv as f32 (decoded into `buf` when stored as bf16).
const float* KVHead(const MatView& m, int64_t s, int kv, int head_dim, float* buf) {
  if (m.type == DType::kF32) return m.RowAs<float>(s) + static_cast<int64_t>(kv) * head_dim;
  const uint16_t* src = m.RowAs<uint16_t>(s) + static_cast<int64_t>(kv) * head_dim;
  for (int d = 0; d < head_dim; ++d) buf[d] = BF16ToF32(src[d]);
  return buf;
}

}  // namespace

void Attention(const MatView& q, const MatView& k, const MatView& v, int64_t pos0, int n_heads,
               int n_kv_heads, int head_dim, float scale, int sliding_window, MutMatF32 out,
               ThreadPool& pool) {
  CheckAttentionArgs(q, k, v, pos0, n_heads, n_kv_heads, head_dim, out);
  const int group = n_heads / n_kv_heads;
  const int64_t T = q.rows;
  const int64_t D = head_dim;
  const int64_t d_padded = (D + internal::BlockedPanelWidth() - 1) / internal::BlockedPanelWidth() *
                           internal::BlockedPanelWidth();
  // Query block: bound the scores buffer (rows x visible keys) to ~1M floats per thread.
  const int64_t keys_max = pos0 + T;
  const int64_t block = std::clamp<int64_t>((int64_t{1} << 20) / (group * keys_max), 1, 32);
  const int64_t n_blocks = (T + block - 1) / block;
  const size_t elem = k.type == DType::kF32 ? 4 : 2;
  pool.ParallelFor(static_cast<size_t>(n_kv_heads * n_blocks), [&](size_t begin, size_t end, int) {
    thread_local std::vector<float> q_rows, scores, v_rows, out_rows;
    for (size_t item = begin; item < end; ++item) {
      const int kv = static_cast<int>(static_cast<int64_t>(item) / n_blocks);
      const int64_t t0 = static_cast<int64_t>(item) % n_blocks * block;
      const int64_t t1 = std::min(T, t0 + block);
      const int64_t rows = (t1 - t0) * group;  // row (t - t0) * group + g: query head kv*group+g
      // Keys any query of the block sees: [s_lo, s_hi].
      const int64_t s_hi = pos0 + t1 - 1;
      const int64_t s_lo =
          sliding_window > 0 ? std::max<int64_t>(0, pos0 + t0 - sliding_window + 1) : 0;
      const int64_t S = s_hi - s_lo + 1;
      q_rows.resize(static_cast<size_t>(rows * D));           // [rows, D]
      scores.resize(static_cast<size_t>(rows * S));           // [rows, S]
      v_rows.resize(static_cast<size_t>(S * d_padded));       // [S, D padded]
      out_rows.resize(static_cast<size_t>(rows * d_padded));  // [rows, D padded]
      for (int64_t t = t0; t < t1; ++t) {
        for (int g = 0; g < group; ++g) {
          const float* src = q.RowAs<float>(t) + (static_cast<int64_t>(kv) * group + g) * D;
          std::copy(src, src + D, q_rows.data() + ((t - t0) * group + g) * D);
        }
      }
      // scores = q_rows · K[s_lo..s_hi, kv]^T (the blocked MatMul kernel, K in its stored type).
      const MatView k_head{k.type, S, D, k.row_stride, k.Row(s_lo) + kv * D * elem};
      const MatView q_view{DType::kF32, rows, D, static_cast<size_t>(D) * 4,
                           reinterpret_cast<const uint8_t*>(q_rows.data())};
      internal::MatMulBlockedF32(q_view, k_head, MutMatF32{rows, S, S, scores.data()}, 0, S);
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t p = pos0 + t0 + r / group;
        const int64_t first = sliding_window > 0 ? std::max<int64_t>(0, p - sliding_window + 1) : 0;
        internal::MaskedSoftmaxRow(scores.data() + r * S, S, first - s_lo, p - s_lo + 1, scale);
      }
      for (int64_t s = 0; s < S; ++s) {  // V rows as f32, zero-padded to d_padded
        float* dst = v_rows.data() + s * d_padded;
        DecodeRowSegment(v, s_lo + s, static_cast<int64_t>(kv) * D, D, dst);
        std::fill(dst + D, dst + d_padded, 0.0f);
      }
      internal::GemmF32(scores.data(), S, rows, S, v_rows.data(), d_padded, D, out_rows.data(),
                        d_padded);
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t t = t0 + r / group;
        const int h = kv * group + static_cast<int>(r % group);
        std::copy(out_rows.data() + r * d_padded, out_rows.data() + r * d_padded + D,
                  out.Row(t) + static_cast<int64_t>(h) * D);
      }
    }
  });
}

void AttentionRef(const MatView& q, const MatView& k, const MatView& v, int64_t pos0, int n_heads,
                  int n_kv_heads, int head_dim, float scale, int sliding_window, MutMatF32 out) {
  CheckAttentionArgs(q, k, v, pos0, n_heads, n_kv_heads, head_dim, out);
  const int group = n_heads / n_kv_heads;
  std::vector<float> kbuf(static_cast<size_t>(head_dim)), vbuf(static_cast<size_t>(head_dim));
  for (int64_t t = 0; t < q.rows; ++t) {
    const int64_t p = pos0 + t;
    const int64_t first = sliding_window > 0 ? std::max<int64_t>(0, p - sliding_window + 1) : 0;
    for (int h = 0; h < n_heads; ++h) {
      const float* qh = q.RowAs<float>(t) + static_cast<int64_t>(h) * head_dim;
      std::vector<double> scores;
      double max_score = -INFINITY;
      for (int64_t s = first; s <= p; ++s) {
        const float* kh = KVHead(k, s, h / group, head_dim, kbuf.data());
        double dot = 0.0;
        for (int d = 0; d < head_dim; ++d) dot += static_cast<double>(qh[d]) * kh[d];
        scores.push_back(dot * scale);
        max_score = std::max(max_score, scores.back());
      }
      double sum = 0.0;
      for (double& sc : scores) sum += (sc = std::exp(sc - max_score));
      std::vector<double> acc(static_cast<size_t>(head_dim), 0.0);
      for (int64_t s = first; s <= p; ++s) {
        const float* vh = KVHead(v, s, h / group, head_dim, vbuf.data());
        for (int d = 0; d < head_dim; ++d) acc[d] += scores[s - first] / sum * vh[d];
      }
      float* o = out.Row(t) + static_cast<int64_t>(h) * head_dim;
      for (int d = 0; d < head_dim; ++d) o[d] = static_cast<float>(acc[d]);
    }
  }
}

}  // namespace proctor::ops
