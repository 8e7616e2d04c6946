// Causal grouped-query attention over a KV cache.
#pragma once

#include <cstdint>
#include <optional>

#include "quant/mlx_quant.h"
#include "quant/turbo_quant.h"
#include "tensor/tensor.h"
#include "util/thread_pool.h"

namespace proctor::ops {

// Keys or values of a KV cache as attention reads them, rows = positions: a dense matrix (f32,
// bf16, f16, a ggml block type), MLX affine codes quantized along the row in groups that never
// straddle a head, or TurboQuant codes (model/kv_cache.h). Attention decodes quantized rows a
// tile of positions at a time into a thread-local buffer, never the whole cache, or for a decode
// step's few query rows makes them in registers from their codes; TurboQuant values stay rotated
// either way, and each head's weighted sum is rotated back once.
struct KvRows {
  KvRows(const MatView& rows) : dense(rows) {}  // a dense cache (implicit: plain views pass)
  explicit KvRows(const quant::MlxQuantizedMatrix& codes) : quantized(codes) {}
  explicit KvRows(const quant::TurboRows& codes) : turbo(codes) {}

  MatView dense{};
  std::optional<quant::MlxQuantizedMatrix> quantized;
  std::optional<quant::TurboRows> turbo;

  bool coded() const { return quantized || turbo; }  // decoded a tile at a time
  int64_t rows() const {
    return quantized ? quantized->rows() : turbo ? turbo->rows() : dense.rows;
  }
  int64_t cols() const {
    return quantized ? quantized->cols() : turbo ? turbo->cols() : dense.cols;
  }
};

// The attention of one layer: head counts and size, and how scores become weights.
struct AttentionShape {
  int n_heads = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  float scale = 0.0f;       // multiplies q.k; 1/sqrt(D) normally
  int sliding_window = 0;   // > 0: the query at position p sees keys p-window+1..p only
  float logit_softcap = 0;  // > 0: a score s becomes tanh(s * scale / cap) * cap (Gemma 2)
  // The absolute position of k and v's row 0: a cache that dropped rows older than the window
  // (they are never read again) starts later than position 0.
  int64_t kv_first_position = 0;
};

// T new queries at absolute positions pos0..pos0+T-1 over a KV cache holding keys/values for
// positions kv_first_position..pos0+T-1 (rows = positions from kv_first_position on, at least
// pos0+T-kv_first_position rows; every key a query sees must be held). q: [T, Hq*D] f32; k, v:
// [S, Hkv*D] dense (f32, bf16, f16, or ggml blocks within a head; keys and values may differ)
// or affine codes whose groups divide D, or TurboQuant keys and values (D a power of two); out: [T,
// Hq*D]. Query head h uses KV head h / (Hq/Hkv). Softmax in f32 with max subtraction. Threaded over
// (query row, head).
void Attention(const MatView& q, const KvRows& k, const KvRows& v, int64_t pos0,
               const AttentionShape& shape, MutMatF32 out, ThreadPool& pool);

// Scalar reference (double accumulation), single-threaded.
void AttentionRef(const MatView& q, const KvRows& k, const KvRows& v, int64_t pos0,
                  const AttentionShape& shape, MutMatF32 out);

}  // namespace proctor::ops
