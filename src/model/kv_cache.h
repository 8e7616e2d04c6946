// Per-layer state the forward pass carries from one ForwardHidden call to the next.
//
// A model's cache is one LayerCache per layer, and layers may differ (ARCHITECTURE.md):
//  - FullAttentionKvCache: keys and values of every past position, stored as the KvScheme says
//    (f32 by default, bf16 as an option; quantized schemes slot in here later).
//  - sliding-window layers: today a FullAttentionKvCache read through the attention window (the
//    kernel masks keys older than the window); a ring buffer that keeps only `window` rows is the
//    planned memory saving, behind the same kind tag.
//  - RecurrentState: the linear-attention layers of hybrid models (gated DeltaNet): a short conv
//    state and a per-head state matrix, advanced in place by ForwardHidden. Declared so the
//    interface covers it; no architecture fills it yet.
// ModelCache owns the layers and the number of positions already consumed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace proctor {

// How a KV cache stores keys and values.
struct KvScheme {
  DType storage = DType::kF32;  // kF32 or kBF16 (rounded to nearest even on append)
  std::string Name() const;     // "f32", "bf16"
};

// Parses "f32" / "bf16"; Error naming the flag value otherwise.
KvScheme ParseKvScheme(std::string_view name);

enum class LayerCacheKind { kFullAttention, kSlidingWindow, kRecurrent };

class LayerCache {
 public:
  virtual ~LayerCache() = default;
  virtual LayerCacheKind kind() const = 0;
  virtual size_t MemoryBytes() const = 0;  // bytes of storage allocated now
};

// Keys and values for positions 0..length()-1, rows = positions: K [length, kv_dim] and
// V [length, kv_dim] in the scheme's dtype. Grows by doubling; Reserve avoids regrowth.
class FullAttentionKvCache final : public LayerCache {
 public:
  FullAttentionKvCache(int64_t kv_dim, KvScheme scheme, int64_t reserve_positions = 0);

  LayerCacheKind kind() const override { return LayerCacheKind::kFullAttention; }
  size_t MemoryBytes() const override;

  // Appends T rows of keys and values (f32 [T, kv_dim] each) at positions length()..+T-1.
  void Append(const MatView& keys, const MatView& values);
  void Reserve(int64_t positions);

  int64_t length() const { return length_; }
  int64_t kv_dim() const { return kv_dim_; }
  const KvScheme& scheme() const { return scheme_; }
  MatView Keys() const;    // [length, kv_dim]
  MatView Values() const;  // [length, kv_dim]

 private:
  int64_t kv_dim_;
  KvScheme scheme_;
  int64_t length_ = 0;
  Tensor keys_;    // [capacity, kv_dim]
  Tensor values_;  // [capacity, kv_dim]
};

// The recurrent state of one linear-attention layer (gated DeltaNet). Shapes are fixed at
// creation; ForwardHidden of a hybrid family advances them in place.
class RecurrentState final : public LayerCache {
 public:
  RecurrentState(int64_t conv_channels, int64_t conv_kernel, int64_t heads, int64_t key_dim,
                 int64_t value_dim);
  LayerCacheKind kind() const override { return LayerCacheKind::kRecurrent; }
  size_t MemoryBytes() const override;

  Tensor& conv_state() { return conv_state_; }  // [conv_kernel - 1, conv_channels]
  Tensor& ssm_state() { return ssm_state_; }    // [heads * key_dim, value_dim]

 private:
  Tensor conv_state_;
  Tensor ssm_state_;
};

// One sequence's cache: a LayerCache per layer and the count of positions consumed.
class ModelCache {
 public:
  ModelCache() = default;
  ModelCache(ModelCache&&) noexcept = default;
  ModelCache& operator=(ModelCache&&) noexcept = default;

  void AddLayer(std::unique_ptr<LayerCache> layer) { layers_.push_back(std::move(layer)); }
  int num_layers() const { return static_cast<int>(layers_.size()); }
  LayerCache& layer(int i) { return *layers_.at(static_cast<size_t>(i)); }
  // The full-attention cache of layer i (CHECKs the kind).
  FullAttentionKvCache& Attention(int i);

  int64_t position() const { return position_; }  // positions consumed so far
  void Advance(int64_t tokens) { position_ += tokens; }
  size_t MemoryBytes() const;

 private:
  std::vector<std::unique_ptr<LayerCache>> layers_;
  int64_t position_ = 0;
};

}  // namespace proctor
