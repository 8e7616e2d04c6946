// Causal grouped-query attention (see attention.h).
#include "ops/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/attention_rows.h"
#include "ops/convert.h"
#include "ops/matmul_kernels.h"
#include "util/error.h"
#include "util/half.h"

namespace proctor::ops {
namespace {

void CheckAttentionArgs(const MatView& q, const KvRows& k, const KvRows& v, int64_t pos0,
                        const AttentionShape& shape, MutMatF32 out) {
  const int n_heads = shape.n_heads, n_kv_heads = shape.n_kv_heads, head_dim = shape.head_dim;
  CHECK(q.type == DType::kF32);
  CHECK_MSG(k.quantized.has_value() == v.quantized.has_value() &&
                k.turbo.has_value() == v.turbo.has_value(),
            "keys and values stored alike");
  if (k.turbo) {
    CHECK_MSG(k.turbo->part == quant::TurboPart::kKeys &&
                  v.turbo->part == quant::TurboPart::kValues && v.turbo->head_dim == head_dim &&
                  head_dim % quant::kTurboGroup == 0,
              "turbo keys and values for head_dim {}", head_dim);
  } else if (k.quantized) {
    CHECK_MSG(k.quantized->mode == quant::MlxMode::kAffine &&
                  head_dim % k.quantized->group_size == 0 &&
                  head_dim % v.quantized->group_size == 0,
              "affine groups {} / {} for head_dim {}", k.quantized->group_size,
              v.quantized->group_size, head_dim);
  } else {
    // f32, bf16, f16, or a ggml block type whose 32-element blocks stay within a head.
    const auto readable = [&](DType t) {
      return t == DType::kF32 || t == DType::kBF16 || t == DType::kF16 ||
             (IsSupportedWeightType(t) && FitsBlocks(t, static_cast<uint64_t>(head_dim)));
    };
    CHECK_MSG(readable(k.dense.type) && readable(v.dense.type), "k {} v {} for head_dim {}",
              Name(k.dense.type), Name(v.dense.type), head_dim);
  }
  CHECK_MSG(n_kv_heads > 0 && n_heads % n_kv_heads == 0, "{} heads, {} kv heads", n_heads,
            n_kv_heads);
  CHECK_MSG(q.cols >= static_cast<int64_t>(n_heads) * head_dim &&
                k.cols() >= static_cast<int64_t>(n_kv_heads) * head_dim &&
                v.cols() >= static_cast<int64_t>(n_kv_heads) * head_dim,
            "q cols {} k cols {} v cols {} for {}/{} heads of {}", q.cols, k.cols(), v.cols(),
            n_heads, n_kv_heads, head_dim);
  const int64_t first = shape.kv_first_position;
  CHECK_MSG(pos0 >= 0 && first >= 0 && k.rows() >= pos0 + q.rows - first &&
                v.rows() >= pos0 + q.rows - first,
            "pos0 {} + {} queries over k rows {} v rows {} from position {}", pos0, q.rows,
            k.rows(), v.rows(), first);
  // Every key the first query sees is held.
  CHECK_MSG(first == 0 || (shape.sliding_window > 0 && first <= pos0 - shape.sliding_window + 1),
            "keys from position {} held, the window {} at position {} needs more", first,
            shape.sliding_window, pos0);
  CHECK(out.rows == q.rows && out.cols >= static_cast<int64_t>(n_heads) * head_dim);
}

// Elements [k0, k0 + len) of cache rows s0 .. s0 + n - 1 as f32, row j at out + j * stride: SIMD
// decoders (exact, as the references).
void DecodeKvRows(const KvRows& m, int64_t s0, int64_t n, int64_t k0, int64_t len, float* out,
                  int64_t stride) {
  if (!m.coded()) {
    DecodeRowsSegment(m.dense, s0, n, k0, len, out, stride);
    return;
  }
  if (m.quantized) {
    quant::DecodeMlxRowsSegment(*m.quantized, s0, n, k0, len, out, stride);
  } else {  // TurboQuant values stay rotated
    quant::DecodeTurboRowsSegment(*m.turbo, s0, n, k0, len, out, stride);
  }
}

// A cache attention decodes a tile at a time: anything but f32, which the kernels read in place.
bool DecodedInTiles(const KvRows& m) { return m.coded() || m.dense.type != DType::kF32; }

// KV row s, head kv as f32 (scalar references; decoded into `buf` unless stored as f32).
const float* KVHeadRef(const KvRows& m, int64_t s, int kv, int head_dim, float* buf) {
  const int64_t k0 = static_cast<int64_t>(kv) * head_dim;
  if (m.quantized) {
    quant::DecodeMlxRowSegmentRef(*m.quantized, s, k0, head_dim, buf);
    return buf;
  }
  if (m.turbo) {
    quant::DecodeTurboHead(*m.turbo, s, kv, head_dim, buf);
    return buf;
  }
  if (m.dense.type == DType::kF32) return m.dense.RowAs<float>(s) + k0;
  DecodeRowSegmentRef(m.dense, s, k0, head_dim, buf);
  return buf;
}

// Positions of coded keys and values decoded at a time (a tile of D-wide f32 rows that stays in
// the core's cache while it is used).
constexpr int64_t kQuantizedTile = 128;

}  // namespace

void Attention(const MatView& q, const KvRows& k, const KvRows& v, int64_t pos0,
               const AttentionShape& shape, MutMatF32 out, ThreadPool& pool) {
  CheckAttentionArgs(q, k, v, pos0, shape, out);
  const int n_heads = shape.n_heads, n_kv_heads = shape.n_kv_heads, head_dim = shape.head_dim;
  const int sliding_window = shape.sliding_window;
  const int64_t row0 = shape.kv_first_position;  // cache row of position s: s - row0
  const int group = n_heads / n_kv_heads;
  const int64_t T = q.rows;
  const int64_t D = head_dim;
  const int64_t d_padded = (D + internal::BlockedPanelWidth() - 1) / internal::BlockedPanelWidth() *
                           internal::BlockedPanelWidth();
  // Query block: bound the scores buffer (rows x visible keys) to ~1M floats per thread.
  const int64_t keys_max = pos0 + T - row0;
  const int64_t block = std::clamp<int64_t>((int64_t{1} << 20) / (group * keys_max), 1, 32);
  const int64_t n_blocks = (T + block - 1) / block;
  const bool k_tiles = DecodedInTiles(k), v_tiles = DecodedInTiles(v);
  pool.ParallelFor(static_cast<size_t>(n_kv_heads * n_blocks), [&](size_t begin, size_t end, int) {
    thread_local std::vector<float> q_rows, scores, v_rows, out_rows, kv_tile, tile_out;
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
      out_rows.resize(static_cast<size_t>(rows * d_padded));  // [rows, D padded]
      for (int64_t t = t0; t < t1; ++t) {
        for (int g = 0; g < group; ++g) {
          const float* src = q.RowAs<float>(t) + (static_cast<int64_t>(kv) * group + g) * D;
          std::copy(src, src + D, q_rows.data() + ((t - t0) * group + g) * D);
        }
      }
      const MatView q_view{DType::kF32, rows, D, static_cast<size_t>(D) * 4,
                           reinterpret_cast<const uint8_t*>(q_rows.data())};
      // Rows [j0, j0 + n) of K or V [s_lo..s_hi, kv] as f32 rows `stride` floats apart: the
      // cache's own rows when f32, else decoded into `tile`; `readable` rows exist from `first`
      // on (the kernels prefetch ahead within them).
      struct HeadRows {
        const float* first;
        int64_t stride, readable;
      };
      const auto head_rows = [&](const KvRows& m, int64_t j0, int64_t n,
                                 std::vector<float>& tile) -> HeadRows {
        if (!DecodedInTiles(m)) {
          return {m.dense.RowAs<float>(s_lo - row0 + j0) + static_cast<int64_t>(kv) * D,
                  static_cast<int64_t>(m.dense.row_stride / sizeof(float)), S - j0};
        }
        tile.resize(static_cast<size_t>(n * D));
        DecodeKvRows(m, s_lo - row0 + j0, n, static_cast<int64_t>(kv) * D, D, tile.data(), D);
        return {tile.data(), D, n};
      };
      const bool few_rows = rows <= internal::kFewQueryRows && internal::FewRowsKernelsFit(D);
      if (few_rows && k.quantized && internal::AffineKeysScoredInPlace(*k.quantized, D)) {
        // scores = q_rows · K^T, affine keys made in registers from their codes.
        internal::ScoreFewRowsAffine(q_rows.data(), rows, D, *k.quantized, s_lo - row0, S,
                                     static_cast<int64_t>(kv) * D, scores.data(), S);
      } else if (few_rows && k.turbo && internal::TurboKeysScoredInPlace(*k.turbo, D)) {
        // The same, TurboQuant keys made in registers from their codes.
        internal::ScoreFewRowsTurbo(q_rows.data(), rows, D, *k.turbo, s_lo - row0, S,
                                    static_cast<int64_t>(kv) * D, scores.data(), S);
      } else if (few_rows) {
        // scores = q_rows · K^T, a tile of keys at a time, read where they are.
        for (int64_t j0 = 0; j0 < S; j0 += kQuantizedTile) {
          const int64_t n = std::min(kQuantizedTile, S - j0);
          const HeadRows keys = head_rows(k, j0, n, kv_tile);
          internal::ScoreFewRows(q_rows.data(), rows, D, keys.first, keys.stride, n, keys.readable,
                                 scores.data() + j0, S);
        }
      } else if (!k_tiles) {
        // scores = q_rows · K[s_lo..s_hi, kv]^T (the blocked MatMul kernel reads f32 K in place).
        const MatView k_head{k.dense.type, S, D, k.dense.row_stride,
                             k.dense.Row(s_lo - row0) + BytesFor(k.dense.type, kv * D)};
        internal::MatMulBlockedF32(q_view, k_head, MutMatF32{rows, S, S, scores.data()}, 0, S);
      } else {
        // The same, a tile of keys decoded at a time.
        kv_tile.resize(static_cast<size_t>(kQuantizedTile * D));
        for (int64_t j0 = 0; j0 < S; j0 += kQuantizedTile) {
          const int64_t n = std::min(kQuantizedTile, S - j0);
          DecodeKvRows(k, s_lo - row0 + j0, n, static_cast<int64_t>(kv) * D, D, kv_tile.data(), D);
          const MatView k_tile{DType::kF32, n, D, static_cast<size_t>(D) * 4,
                               reinterpret_cast<const uint8_t*>(kv_tile.data())};
          internal::MatMulBlockedF32(q_view, k_tile, MutMatF32{rows, n, S, scores.data() + j0}, 0,
                                     n);
        }
      }
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t p = pos0 + t0 + r / group;
        const int64_t first = sliding_window > 0 ? std::max<int64_t>(0, p - sliding_window + 1) : 0;
        float* row = scores.data() + r * S;
        if (shape.logit_softcap > 0.0f) {
          internal::SoftCapRow(row + (first - s_lo), p - first + 1, shape.scale,
                               shape.logit_softcap);
          internal::MaskedSoftmaxRow(row, S, first - s_lo, p - s_lo + 1, 1.0f);
        } else {
          internal::MaskedSoftmaxRow(row, S, first - s_lo, p - s_lo + 1, shape.scale);
        }
      }
      // out_rows = softmax(scores) · V[s_lo..s_hi, kv]. Few rows: one FMA chain per output over
      // the tiles, values read where they are, or made in registers from their codes.
      const int64_t v0 = static_cast<int64_t>(kv) * D;
      const bool v_from_codes =
          few_rows && ((v.quantized && internal::AffineValuesWeightedInPlace(*v.quantized, D)) ||
                       (v.turbo && internal::TurboValuesWeightedInPlace(*v.turbo, D)));
      if (v_from_codes && v.quantized) {
        internal::WeightFewRowsAffine(scores.data(), S, rows, *v.quantized, s_lo - row0, S, v0, D,
                                      out_rows.data(), d_padded, false);
      } else if (v_from_codes) {
        internal::WeightFewRowsTurbo(scores.data(), S, rows, *v.turbo, s_lo - row0, S, v0, D,
                                     out_rows.data(), d_padded, false);
      }
      for (int64_t j0 = 0; few_rows && !v_from_codes && j0 < S; j0 += kQuantizedTile) {
        const int64_t n = std::min(kQuantizedTile, S - j0);
        const HeadRows values = head_rows(v, j0, n, v_rows);
        internal::WeightFewRows(scores.data() + j0, S, rows, values.first, values.stride, n,
                                values.readable, D, out_rows.data(), d_padded, j0 > 0);
      }
      // Otherwise V rows as f32, zero-padded to d_padded; all S rows at once when f32, a tile at
      // a time (summed) when decoded.
      const int64_t v_tile = v_tiles ? kQuantizedTile : S;
      if (!few_rows) v_rows.resize(static_cast<size_t>(v_tile * d_padded));
      for (int64_t j0 = 0; !few_rows && j0 < S; j0 += v_tile) {
        const int64_t n = std::min(v_tile, S - j0);
        DecodeKvRows(v, s_lo - row0 + j0, n, static_cast<int64_t>(kv) * D, D, v_rows.data(),
                     d_padded);
        if (d_padded > D) {
          for (int64_t j = 0; j < n; ++j) {
            std::fill(v_rows.data() + j * d_padded + D, v_rows.data() + (j + 1) * d_padded, 0.0f);
          }
        }
        if (j0 > 0) tile_out.resize(static_cast<size_t>(rows * d_padded));
        float* target = j0 == 0 ? out_rows.data() : tile_out.data();
        internal::GemmF32(scores.data() + j0, S, rows, n, v_rows.data(), d_padded, D, target,
                          d_padded);
        if (j0 > 0) {
          for (int64_t r = 0; r < rows; ++r) {
            for (int64_t d = 0; d < D; ++d)
              out_rows[r * d_padded + d] += tile_out[r * d_padded + d];
          }
        }
      }
      if (v.turbo) {  // the weighted sum of rotated values, rotated back
        for (int64_t r = 0; r < rows; ++r) {
          quant::RotateBackTurboValues(out_rows.data() + r * d_padded, head_dim);
        }
      }
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t t = t0 + r / group;
        const int h = kv * group + static_cast<int>(r % group);
        std::copy(out_rows.data() + r * d_padded, out_rows.data() + r * d_padded + D,
                  out.Row(t) + static_cast<int64_t>(h) * D);
      }
    }
  });
}

void AttentionRef(const MatView& q, const KvRows& k, const KvRows& v, int64_t pos0,
                  const AttentionShape& shape, MutMatF32 out) {
  CheckAttentionArgs(q, k, v, pos0, shape, out);
  const int n_heads = shape.n_heads, n_kv_heads = shape.n_kv_heads, head_dim = shape.head_dim;
  const int sliding_window = shape.sliding_window;
  const int64_t row0 = shape.kv_first_position;
  const double cap = shape.logit_softcap;
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
        const float* kh = KVHeadRef(k, s - row0, h / group, head_dim, kbuf.data());
        double dot = 0.0;
        for (int d = 0; d < head_dim; ++d) dot += static_cast<double>(qh[d]) * kh[d];
        const double score = dot * shape.scale;
        scores.push_back(cap > 0.0 ? std::tanh(score / cap) * cap : score);
        max_score = std::max(max_score, scores.back());
      }
      double sum = 0.0;
      for (double& sc : scores) sum += (sc = std::exp(sc - max_score));
      std::vector<double> acc(static_cast<size_t>(head_dim), 0.0);
      for (int64_t s = first; s <= p; ++s) {
        const float* vh = KVHeadRef(v, s - row0, h / group, head_dim, vbuf.data());
        for (int d = 0; d < head_dim; ++d) acc[d] += scores[s - first] / sum * vh[d];
      }
      float* o = out.Row(t) + static_cast<int64_t>(h) * head_dim;
      for (int d = 0; d < head_dim; ++d) o[d] = static_cast<float>(acc[d]);
    }
  }
}

}  // namespace proctor::ops
