// Per-layer state the forward pass carries from one ForwardHidden call to the next.
//
// A model's cache is one LayerCache per layer, and layers may differ (ARCHITECTURE.md):
//  - FullAttentionKvCache: keys and values of every past position, stored as the KvScheme says:
//    dense (f32 by default, bf16 or f16), or quantized with MLX's affine format as mlx-lm's
//    QuantizedKVCache does (full precision until the cache holds `start` positions, then
//    converted in place; docs/kv-cache.md).
//  - sliding-window layers: a FullAttentionKvCache created with the window keeps only the rows
//    the window can still reach (at most twice the window plus one step's rows), so its memory is
//    bounded by the window, not the context.
//  - RecurrentState: the linear-attention layers of hybrid models (gated DeltaNet): the last
//    conv_kernel - 1 inputs of the causal conv and a per-head state matrix, advanced in place by
//    ForwardHidden (model/gated_deltanet.cc).
// ModelCache owns the layers and the number of positions already consumed.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ops/attention.h"
#include "quant/mlx_quant.h"
#include "quant/turbo_quant.h"
#include "tensor/tensor.h"

namespace proctor {

// mlx-lm's default quantized_kv_start: its cache stays full precision below this many positions.
inline constexpr int64_t kDefaultKvStart = 5000;

// Bits per layer of a per-layer affine scheme, held inline (a KvScheme stays a plain value,
// copied into every option struct).
class KvLayerBits {
 public:
  static constexpr size_t kMaxLayers = 256;
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  int operator[](size_t i) const { return bits_[i]; }
  const uint8_t* begin() const { return bits_.data(); }
  const uint8_t* end() const { return bits_.data() + size_; }
  // Error naming `what` when full or bits do not fit a byte.
  void push_back(int bits, std::string_view what);
  void clear() { size_ = 0; }

 private:
  std::array<uint8_t, kMaxLayers> bits_{};
  size_t size_ = 0;
};

// How a KV cache stores keys and values.
//   dense:  keys and values each f32, bf16 or f16 (rounded to nearest even on append), or a
//           ggml block type as llama.cpp's --cache-type-k / -v (q8_0, q4_0, q4_1, q5_0, q5_1,
//           iq4_nl: each row quantized on append with ggml's reference quantizer, byte for
//           byte; iq4_nl with ggml's row quantizer, QuantizeIQ4_NLRowRef);
//   affine: MLX affine codes of `bits` (2, 3, 4, 6, 8) per element with an f32 scale and bias per
//           `group_size` (32, 64, 128) elements of a head, quantized exactly as mx.quantize does
//           (quant/mlx_quant.h). Full precision (f32) until a forward step ends with the cache
//           holding at least `start` positions (mlx-lm's maybe_quantize_kv_cache: offset >=
//           quantized_kv_start after each model call), then converted in place, every layer at
//           once; from then on new keys and values are quantized as they arrive (before attention
//           reads them, as mlx-lm's QuantizedKVCache.update_and_fetch does). Per layer
//           (`layer_bits`, from a kv_config.json): layer i's bits are layer_bits[i], one group
//           size; ForLayer(i) is that layer's uniform scheme.
//   turbo:  TurboQuant (quant/turbo_quant.h): keys affine codes of `turbo_key_bits` per group of
//           32 with fp16 scale and offset; values rotated per head (a fixed-sign Walsh-Hadamard
//           transform), fp16 RMS scale per group of 32 and Lloyd-Max codes of `turbo_value_bits`.
//           Converted by the same rule as affine, from `start` on (ParseKvScheme's default for
//           turbo is 0: the first step's end).
struct KvScheme {
  DType key_storage = DType::kF32;    // dense storage; affine, turbo: before the conversion (f32)
  DType value_storage = DType::kF32;  // likewise for values
  int bits = 0;                       // > 0: affine
  int group_size = 0;
  KvLayerBits layer_bits{};  // non-empty: affine, bits per layer (bits is 0)
  int turbo_key_bits = 0;    // > 0: turbo
  int turbo_value_bits = 0;  // turbo
  int64_t start = kDefaultKvStart;

  // Keys and values both stored as `type` (f32, bf16, f16 or a ggml block type).
  static KvScheme Dense(DType type) { return {.key_storage = type, .value_storage = type}; }
  bool affine() const { return bits > 0 || !layer_bits.empty(); }
  bool turbo() const { return turbo_key_bits > 0; }
  // Stored full precision first and converted in place by EndStep (affine or turbo).
  bool quantized() const { return affine() || turbo(); }
  // "f32", "bf16", "f16", "ggml:q8_0", "ggml:q8_0/q4_0" (keys/values apart), "affine:4:g64",
  // "affine:8-8-4-4:g64" (per layer), "turbo:k8v3" (without `start`, a separate setting).
  // ParseKvScheme reads every name back.
  std::string Name() const;
  // Layer `layer`'s scheme: itself unless per layer, then affine with that layer's bits.
  KvScheme ForLayer(int layer) const;
  // Stored bits per key or value element (the mean of the two) once converted: 32 or 16 dense;
  // ggml blocks their block bytes x 8 / 32 (q8_0 8.5, q4_0 4.5); affine bits + 64 / group_size
  // (f32 scale and bias per group). mlx-lm on a bf16 or f16 model keeps 16-bit scales and biases
  // (bits + 32 / group_size): proctor's activations, and so its scales, are f32. turbo: keys
  // bits + 1 (fp16 scale and offset per 32), values bits + 0.5 (fp16 scale per 32). Per layer:
  // the mean over the layers.
  double EffectiveBits() const;
  // Bytes of one position's keys and values in one layer once converted (kv_dim elements each);
  // per layer: in layer `layer`.
  int64_t BytesPerToken(int64_t kv_dim, int layer = 0) const;
};

// Bytes of one position's keys and values over num_layers layers once converted; the layers
// `linear_attention` marks (a hybrid's DeltaNet layers, ModelConfig::layer_uses_linear_attention)
// hold none.
int64_t KvBytesPerToken(const KvScheme& scheme, int64_t kv_dim, int num_layers,
                        const std::vector<bool>& linear_attention = {});

// Parses --kv: "f32", "bf16", "f16", "ggml:TYPE" or "ggml:KTYPE/VTYPE" (TYPE one of f32, f16,
// bf16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl), "affine:BITS" or "affine:BITS:gGROUP" (group 64 by
// default), "turbo" (k8v3) or "turbo:kKvV" (keys 2, 4, 5, 8; values 2, 3, 4, 8 bits); `start`
// is the scheme's default: kDefaultKvStart, 0 for turbo (quantized from the first step's end).
// "affine:B0-B1-...:gGROUP" gives each layer its bits; "config:FILE" reads them from a JSON file
// (ReadKvConfig). Error naming the value and what is allowed otherwise.
KvScheme ParseKvScheme(std::string_view name);
// A kv_config.json: a list of bits, one per layer ([8, 8, 4, ...], group 64), or
// {"bits": [...], "group_size": G}. Bits and group as affine allows; start 0 (quantized from the
// first step's end). Error naming the file and the entry otherwise.
KvScheme ReadKvConfig(const std::filesystem::path& path);
// One cache element type of --kv-k / --kv-v / ggml:...: f32, f16, bf16, q8_0, q4_0, q4_1,
// q5_0, q5_1, iq4_nl (llama.cpp's cache types that proctor stores). Error naming `flag` otherwise.
DType ParseKvStorage(std::string_view name, std::string_view flag);

// Error unless `scheme` fits a model whose heads are head_dim wide (affine groups and ggml blocks
// must not straddle heads: group_size, or 32, divides head_dim; turbo rotates a head: head_dim a
// power of two, at least 32), and a per-layer scheme names every one of num_layers layers.
void CheckKvSchemeFits(const KvScheme& scheme, int head_dim, int num_layers);

enum class LayerCacheKind { kFullAttention, kSlidingWindow, kRecurrent };

class LayerCache {
 public:
  virtual ~LayerCache() = default;
  virtual LayerCacheKind kind() const = 0;
  virtual size_t MemoryBytes() const = 0;  // bytes of storage allocated now
  // An independent copy of the state (a shared prefix evaluated once, continued many ways).
  virtual std::unique_ptr<LayerCache> Clone() const = 0;
};

// Keys and values for positions first_position()..length()-1, row r = position
// first_position() + r: K [held, kv_dim] and V [held, kv_dim] as the scheme stores them (see
// KvScheme). Grows by doubling; Reserve avoids regrowth. With window > 0 (a sliding-window
// layer), rows no query can see any more (older than length() - window + 1) are dropped, a
// window's worth at a time; first_position() is 0 otherwise.
class FullAttentionKvCache final : public LayerCache {
 public:
  // kv_dim = KV heads x head_dim (head_dim: the width turbo values are rotated over).
  FullAttentionKvCache(int64_t kv_dim, int head_dim, KvScheme scheme, int64_t reserve_positions = 0,
                       int window = 0);

  LayerCacheKind kind() const override { return LayerCacheKind::kFullAttention; }
  size_t MemoryBytes() const override;
  std::unique_ptr<LayerCache> Clone() const override;

  // Appends T rows of keys and values (f32 [T, kv_dim] each) at positions length()..+T-1.
  void Append(const MatView& keys, const MatView& values);
  void Reserve(int64_t positions);
  // The end of a forward step: an affine cache not yet converted that holds at least
  // scheme().start positions (and at least one) is quantized now. Returns whether it converted.
  bool EndStep();

  int64_t length() const { return length_; }                  // positions appended so far
  int64_t first_position() const { return first_position_; }  // the position of row 0
  int64_t held() const { return length_ - first_position_; }  // rows stored
  int64_t kv_dim() const { return kv_dim_; }
  const KvScheme& scheme() const { return scheme_; }
  bool converted() const { return quantized_keys_.packed.rows() > 0; }
  ops::KvRows Keys() const;    // [held, kv_dim]
  ops::KvRows Values() const;  // [held, kv_dim]

 private:
  // Quantized storage of [capacity, kv_dim], keys or values (`part`):
  //  affine: MLX codes U32 [capacity, kv_dim * bits / 32], scales and biases F32
  //          [capacity, kv_dim / group_size];
  //  turbo:  quant::TurboRows' packed U8, scales F16 and (keys) offsets F16 in `biases`.
  struct QuantizedRows {
    quant::TurboPart part = quant::TurboPart::kKeys;
    Tensor packed, scales, biases;
  };
  ops::KvRows View(const QuantizedRows& store) const;
  void AppendDense(const MatView& rows, Tensor& store) const;
  // Quantizes `rows` into store rows first_row...
  void AppendQuantized(const MatView& rows, int64_t first_row, QuantizedRows& store) const;
  void DropOutsideWindow();
  QuantizedRows NewQuantizedRows(int64_t capacity, quant::TurboPart part) const;

  int64_t kv_dim_;
  int head_dim_;
  KvScheme scheme_;
  int window_ = 0;
  int64_t length_ = 0;
  int64_t first_position_ = 0;
  Tensor keys_;    // dense: [capacity, kv_dim] (empty once converted)
  Tensor values_;  // dense: [capacity, kv_dim]
  QuantizedRows quantized_keys_, quantized_values_;  // affine or turbo, once converted
};

// The recurrent state of one linear-attention layer (gated DeltaNet). Shapes are fixed at
// creation; ForwardHidden of a hybrid family advances them in place.
class RecurrentState final : public LayerCache {
 public:
  RecurrentState(int64_t conv_channels, int64_t conv_kernel, int64_t heads, int64_t key_dim,
                 int64_t value_dim);
  LayerCacheKind kind() const override { return LayerCacheKind::kRecurrent; }
  std::unique_ptr<LayerCache> Clone() const override;
  size_t MemoryBytes() const override;

  Tensor& conv_state() { return conv_state_; }  // [conv_kernel - 1, conv_channels]
  Tensor& ssm_state() { return ssm_state_; }    // [heads * key_dim, value_dim]

 private:
  RecurrentState(Tensor conv_state, Tensor ssm_state)
      : conv_state_(std::move(conv_state)), ssm_state_(std::move(ssm_state)) {}

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
  // The recurrent state of linear-attention layer i (CHECKs the kind).
  RecurrentState& Recurrent(int i);

  int64_t position() const { return position_; }  // positions consumed so far
  // The end of a forward step of `tokens` positions: advances position() and lets every
  // attention layer apply its scheme's conversion rule (FullAttentionKvCache::EndStep).
  void EndStep(int64_t tokens);
  size_t MemoryBytes() const;
  // An independent copy: every layer's state and the position.
  ModelCache Clone() const;

 private:
  std::vector<std::unique_ptr<LayerCache>> layers_;
  int64_t position_ = 0;
};

}  // namespace proctor
