// Layer caches: storage and growth (see kv_cache.h).
#include "model/kv_cache.h"

#include <algorithm>
#include <cstring>

#include "util/error.h"
#include "util/half.h"

namespace proctor {

std::string KvScheme::Name() const { return std::string(proctor::Name(storage)); }

KvScheme ParseKvScheme(std::string_view name) {
  const auto type = ParseDType(name);
  if (!type || (*type != DType::kF32 && *type != DType::kBF16)) {
    Fail("model", "unknown KV cache storage '{}' (expected f32 or bf16)", name);
  }
  return KvScheme{*type};
}

FullAttentionKvCache::FullAttentionKvCache(int64_t kv_dim, KvScheme scheme,
                                           int64_t reserve_positions)
    : kv_dim_(kv_dim), scheme_(scheme) {
  CHECK(kv_dim > 0);
  CHECK(scheme.storage == DType::kF32 || scheme.storage == DType::kBF16);
  Reserve(std::max<int64_t>(reserve_positions, 16));
}

void FullAttentionKvCache::Reserve(int64_t positions) {
  if (keys_.rows() >= positions) return;
  Tensor keys(scheme_.storage, positions, kv_dim_);
  Tensor values(scheme_.storage, positions, kv_dim_);
  if (length_ > 0) {
    const size_t used = static_cast<size_t>(length_) * BytesFor(scheme_.storage, kv_dim_);
    std::memcpy(keys.bytes(), keys_.bytes(), used);
    std::memcpy(values.bytes(), values_.bytes(), used);
  }
  keys_ = std::move(keys);
  values_ = std::move(values);
}

void FullAttentionKvCache::Append(const MatView& keys, const MatView& values) {
  CHECK(keys.type == DType::kF32 && values.type == DType::kF32);
  CHECK(keys.cols == kv_dim_ && values.cols == kv_dim_ && keys.rows == values.rows);
  const int64_t t = keys.rows;
  if (length_ + t > keys_.rows()) Reserve(std::max(length_ + t, 2 * keys_.rows()));
  for (int64_t r = 0; r < t; ++r) {
    const float* k = keys.RowAs<float>(r);
    const float* v = values.RowAs<float>(r);
    const int64_t row = length_ + r;
    if (scheme_.storage == DType::kF32) {
      std::memcpy(keys_.RowF32(row), k, sizeof(float) * kv_dim_);
      std::memcpy(values_.RowF32(row), v, sizeof(float) * kv_dim_);
    } else {
      auto* kout = reinterpret_cast<uint16_t*>(keys_.bytes()) + row * kv_dim_;
      auto* vout = reinterpret_cast<uint16_t*>(values_.bytes()) + row * kv_dim_;
      for (int64_t i = 0; i < kv_dim_; ++i) {
        kout[i] = F32ToBF16(k[i]);
        vout[i] = F32ToBF16(v[i]);
      }
    }
  }
  length_ += t;
}

MatView FullAttentionKvCache::Keys() const { return keys_.View().RowRange(0, length_); }
MatView FullAttentionKvCache::Values() const { return values_.View().RowRange(0, length_); }

size_t FullAttentionKvCache::MemoryBytes() const {
  return keys_.size_bytes() + values_.size_bytes();
}

RecurrentState::RecurrentState(int64_t conv_channels, int64_t conv_kernel, int64_t heads,
                               int64_t key_dim, int64_t value_dim)
    : conv_state_(Tensor::F32(std::max<int64_t>(conv_kernel - 1, 1), conv_channels)),
      ssm_state_(Tensor::F32(heads * key_dim, value_dim)) {}

size_t RecurrentState::MemoryBytes() const {
  return conv_state_.size_bytes() + ssm_state_.size_bytes();
}

FullAttentionKvCache& ModelCache::Attention(int i) {
  LayerCache& l = layer(i);
  CHECK(l.kind() == LayerCacheKind::kFullAttention);
  return static_cast<FullAttentionKvCache&>(l);
}

size_t ModelCache::MemoryBytes() const {
  size_t total = 0;
  for (const auto& l : layers_) total += l->MemoryBytes();
  return total;
}

}  // namespace proctor
