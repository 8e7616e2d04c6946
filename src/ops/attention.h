// Causal grouped-query attention over a KV cache.
#pragma once

#include <cstdint>

#include "tensor/tensor.h"
#include "util/thread_pool.h"

namespace proctor::ops {

// T new queries at absolute positions pos0..pos0+T-1 over a KV cache holding keys/values for
// positions 0..pos0+T-1 (rows = positions, at least pos0+T rows). q: [T, Hq*D] f32; k, v:
// [S, Hkv*D] in kF32 or kBF16; out: [T, Hq*D]. Query head h uses KV head h / (Hq/Hkv).
// sliding_window > 0: the query at position p sees keys p-window+1..p only. scale = 1/sqrt(D)
// normally. Softmax in f32 with max subtraction. Threaded over (query row, head).
void Attention(const MatView& q, const MatView& k, const MatView& v, int64_t pos0, int n_heads,
               int n_kv_heads, int head_dim, float scale, int sliding_window, MutMatF32 out,
               ThreadPool& pool);

// Scalar reference (double accumulation), single-threaded.
void AttentionRef(const MatView& q, const MatView& k, const MatView& v, int64_t pos0, int n_heads,
                  int n_kv_heads, int head_dim, float scale, int sliding_window, MutMatF32 out);

}  // namespace proctor::ops
