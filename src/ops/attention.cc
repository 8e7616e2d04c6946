// Causal grouped-query attention (see attention.h).
#include "ops/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "util/error.h"
#include "util/half.h"

namespace proctor::ops {
namespace {

void CheckAttentionArgs(const MatView& q, const MatView& k, const MatView& v, int64_t pos0,
                        int n_heads, int n_kv_heads, int head_dim, MutMatF32 out) {
  CHECK(q.type == DType::kF32);
  CHECK_MSG(k.type == v.type && (k.type == DType::kF32 || k.type == DType::kBF16),
            "k {} v {}", Name(k.type), Name(v.type));
  CHECK_MSG(n_kv_heads > 0 && n_heads % n_kv_heads == 0, "{} heads, {} kv heads", n_heads,
            n_kv_heads);
  CHECK_MSG(q.cols >= static_cast<int64_t>(n_heads) * head_dim &&
                k.cols >= static_cast<int64_t>(n_kv_heads) * head_dim &&
                v.cols >= static_cast<int64_t>(n_kv_heads) * head_dim,
            "q cols {} k cols {} v cols {} for {}/{} heads of {}", q.cols, k.cols, v.cols,
            n_heads, n_kv_heads, head_dim);
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

float Dot(const float* a, const float* b, int n) {
  constexpr int kLanes = 8;
  float partial[kLanes] = {};
  int i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) partial[l] += a[i + l] * b[i + l];
  }
  for (; i < n; ++i) partial[i % kLanes] += a[i] * b[i];
  float sum = 0.0f;
  for (int l = 0; l < kLanes; ++l) sum += partial[l];
  return sum;
}

}  // namespace

void Attention(const MatView& q, const MatView& k, const MatView& v, int64_t pos0, int n_heads,
               int n_kv_heads, int head_dim, float scale, int sliding_window, MutMatF32 out,
               ThreadPool& pool) {
  CheckAttentionArgs(q, k, v, pos0, n_heads, n_kv_heads, head_dim, out);
  const int group = n_heads / n_kv_heads;
  const int64_t T = q.rows;
  pool.ParallelFor(static_cast<size_t>(T * n_heads), [&](size_t begin, size_t end, int) {
    std::vector<float> scores(static_cast<size_t>(pos0 + T));  // [S]
    std::vector<float> buf(static_cast<size_t>(head_dim));     // [D]
    std::vector<float> acc(static_cast<size_t>(head_dim));     // [D]
    for (size_t item = begin; item < end; ++item) {
      const int64_t t = static_cast<int64_t>(item) / n_heads;
      const int h = static_cast<int>(static_cast<int64_t>(item) % n_heads);
      const int kv = h / group;
      const int64_t p = pos0 + t;
      const int64_t first = sliding_window > 0 ? std::max<int64_t>(0, p - sliding_window + 1) : 0;
      const float* qh = q.RowAs<float>(t) + static_cast<int64_t>(h) * head_dim;
      float max_score = -INFINITY;
      for (int64_t s = first; s <= p; ++s) {
        const float score = Dot(qh, KVHead(k, s, kv, head_dim, buf.data()), head_dim) * scale;
        scores[s] = score;
        max_score = std::max(max_score, score);
      }
      float sum = 0.0f;
      for (int64_t s = first; s <= p; ++s) {
        scores[s] = std::exp(scores[s] - max_score);
        sum += scores[s];
      }
      const float inv_sum = 1.0f / sum;
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t s = first; s <= p; ++s) {
        const float weight = scores[s] * inv_sum;
        const float* vh = KVHead(v, s, kv, head_dim, buf.data());
        for (int d = 0; d < head_dim; ++d) acc[d] += weight * vh[d];
      }
      std::copy(acc.begin(), acc.end(), out.Row(t) + static_cast<int64_t>(h) * head_dim);
    }
  });
}

void AttentionRef(const MatView& q, const MatView& k, const MatView& v, int64_t pos0,
                  int n_heads, int n_kv_heads, int head_dim, float scale, int sliding_window,
                  MutMatF32 out) {
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
