// Layer caches: storage and growth (see kv_cache.h).
#include "model/kv_cache.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cstring>

#include "quant/ggml_blocks.h"
#include "util/error.h"
#include "util/file.h"
#include "util/half.h"

namespace proctor {

namespace {

// ggml's reference quantizer of a cache block type (quant/ggml_blocks.h); null for the others.
// IQ4_NL takes the row quantizer of ggml's CPU backend (its from_float, which llama.cpp's cache
// writes with), not llama-quantize's searching one.
using QuantizeBlocksFn = void (*)(const float* x, int64_t n_blocks, uint8_t* blocks);
QuantizeBlocksFn BlockQuantizer(DType t) {
  switch (t) {
    case DType::kQ8_0:
      return quant::QuantizeQ8_0Ref;
    case DType::kQ4_0:
      return quant::QuantizeQ4_0Ref;
    case DType::kQ4_1:
      return quant::QuantizeQ4_1Ref;
    case DType::kQ5_0:
      return quant::QuantizeQ5_0Ref;
    case DType::kQ5_1:
      return quant::QuantizeQ5_1Ref;
    case DType::kIQ4_NL:
      return quant::QuantizeIQ4_NLRowRef;
    default:
      return nullptr;
  }
}

// The ggml block types a cache stores: those with a quantizer.
bool IsBlockType(DType t) { return BlockQuantizer(t) != nullptr; }

double BitsPerElement(DType t) { return 8.0 * static_cast<double>(BytesFor(t, 32)) / 32.0; }

}  // namespace

void KvLayerBits::push_back(int bits, std::string_view what) {
  if (size_ == kMaxLayers) Fail("model", "{}: more than {} layers", what, kMaxLayers);
  CHECK(bits > 0 && bits < 256);
  bits_[size_++] = static_cast<uint8_t>(bits);
}

std::string KvScheme::Name() const {
  if (!layer_bits.empty()) {
    return fmt::format("affine:{}:g{}", fmt::join(layer_bits.begin(), layer_bits.end(), "-"),
                       group_size);
  }
  if (affine()) return fmt::format("affine:{}:g{}", bits, group_size);
  if (turbo()) return fmt::format("turbo:k{}v{}", turbo_key_bits, turbo_value_bits);
  if (key_storage == value_storage && !IsBlockType(key_storage)) {
    return std::string(proctor::Name(key_storage));
  }
  if (key_storage == value_storage) return fmt::format("ggml:{}", proctor::Name(key_storage));
  return fmt::format("ggml:{}/{}", proctor::Name(key_storage), proctor::Name(value_storage));
}

KvScheme KvScheme::ForLayer(int layer) const {
  if (layer_bits.empty()) return *this;
  KvScheme one = *this;
  CHECK(layer >= 0 && static_cast<size_t>(layer) < layer_bits.size());
  one.bits = layer_bits[static_cast<size_t>(layer)];
  one.layer_bits.clear();
  return one;
}

double KvScheme::EffectiveBits() const {
  if (!layer_bits.empty()) {
    double sum = 0.0;
    for (size_t i = 0; i < layer_bits.size(); ++i) {
      sum += ForLayer(static_cast<int>(i)).EffectiveBits();
    }
    return sum / static_cast<double>(layer_bits.size());
  }
  if (affine()) return bits + 64.0 / group_size;
  if (turbo()) return (turbo_key_bits + 1.0 + turbo_value_bits + 0.5) / 2;
  return (BitsPerElement(key_storage) + BitsPerElement(value_storage)) / 2;
}

int64_t KvScheme::BytesPerToken(int64_t kv_dim, int layer) const {
  if (!layer_bits.empty()) return ForLayer(layer).BytesPerToken(kv_dim);
  if (affine()) return 2 * (kv_dim * bits / 8 + 2 * 4 * (kv_dim / group_size));
  if (turbo()) {
    const int64_t groups = kv_dim / quant::kTurboGroup;
    return kv_dim * turbo_key_bits / 8 + 2 * 2 * groups + kv_dim * turbo_value_bits / 8 +
           2 * groups;
  }
  const auto n = static_cast<uint64_t>(kv_dim);
  return static_cast<int64_t>(BytesFor(key_storage, n) + BytesFor(value_storage, n));
}

int64_t KvBytesPerToken(const KvScheme& scheme, int64_t kv_dim, int num_layers,
                        const std::vector<bool>& linear_attention) {
  int64_t total = 0;
  for (int i = 0; i < num_layers; ++i) {
    const bool holds_kv = static_cast<size_t>(i) >= linear_attention.size() || !linear_attention[i];
    if (holds_kv) total += scheme.BytesPerToken(kv_dim, i);
  }
  return total;
}

DType ParseKvStorage(std::string_view name, std::string_view flag) {
  const auto type = ParseDType(name);
  if (!type || (*type != DType::kF32 && *type != DType::kBF16 && *type != DType::kF16 &&
                !IsBlockType(*type))) {
    Fail("model",
         "{}: unknown KV cache type '{}' (expected f32, f16, bf16, q8_0, q4_0, q4_1, "
         "q5_0, q5_1 or iq4_nl)",
         flag, name);
  }
  return *type;
}

KvScheme ParseKvScheme(std::string_view name) {
  constexpr const char* kAllowed =
      "f32, bf16, f16, ggml:TYPE or ggml:KTYPE/VTYPE (q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, f16, "
      "...), "
      "affine:BITS or affine:BITS:gGROUP (bits 2, 3, 4, 5, 6, 8; group 32, 64, 128), turbo or "
      "turbo:kKvV (keys 2, 4, 5, 8 bits; values 2, 3, 4, 8)";
  const auto number = [&](std::string_view text) {
    int value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || text.empty()) {
      Fail("model", "--kv {}: '{}' is not a number (expected {})", name, text, kAllowed);
    }
    return value;
  };
  if (name == "turbo" || name.starts_with("turbo:")) {
    const std::string_view bits = name == "turbo" ? "k8v3" : name.substr(6);
    const size_t v = bits.find('v');
    if (!bits.starts_with("k") || v == std::string_view::npos) {
      Fail("model", "--kv {}: TurboQuant is written turbo:kKvV, e.g. turbo:k8v3 (seen '{}')", name,
           bits);
    }
    KvScheme scheme{.turbo_key_bits = number(bits.substr(1, v - 1)),
                    .turbo_value_bits = number(bits.substr(v + 1)),
                    .start = 0};
    const std::string what = fmt::format("--kv {}", name);
    quant::CheckTurboKeyBits(scheme.turbo_key_bits, what);
    quant::CheckTurboValueBits(scheme.turbo_value_bits, what);
    return scheme;
  }
  if (name.starts_with("ggml:")) {
    const std::string_view types = name.substr(5);
    const size_t slash = types.find('/');
    const std::string flag = fmt::format("--kv {}", name);
    const DType k = ParseKvStorage(types.substr(0, slash), flag);
    const DType v =
        slash == std::string_view::npos ? k : ParseKvStorage(types.substr(slash + 1), flag);
    return KvScheme{.key_storage = k, .value_storage = v};
  }
  if (name.starts_with("affine:")) {
    const std::string_view rest = name.substr(7);
    const size_t colon = rest.find(':');
    const std::string_view bits_text = rest.substr(0, colon);
    std::string_view group_text = "g64";
    if (colon != std::string_view::npos) group_text = rest.substr(colon + 1);
    if (!group_text.starts_with("g")) {
      Fail("model", "--kv {}: the group is written g32, g64 or g128 (seen '{}')", name, group_text);
    }
    KvScheme scheme{.group_size = number(group_text.substr(1))};
    const std::string what = fmt::format("--kv {}", name);
    if (bits_text.find('-') == std::string_view::npos) {
      scheme.bits = number(bits_text);
      quant::CheckMlxParams(quant::MlxMode::kAffine, scheme.bits, scheme.group_size, what);
      return scheme;
    }
    for (size_t from = 0; from <= bits_text.size();) {  // per layer: B0-B1-...
      const size_t dash = std::min(bits_text.find('-', from), bits_text.size());
      const int bits = number(bits_text.substr(from, dash - from));
      quant::CheckMlxParams(quant::MlxMode::kAffine, bits, scheme.group_size, what);
      scheme.layer_bits.push_back(bits, what);
      from = dash + 1;
    }
    scheme.start = 0;
    return scheme;
  }
  if (name.starts_with("config:")) return ReadKvConfig(std::string(name.substr(7)));
  const auto type = ParseDType(name);
  if (!type || (*type != DType::kF32 && *type != DType::kBF16 && *type != DType::kF16)) {
    Fail("model", "unknown KV cache scheme '{}' (expected {})", name, kAllowed);
  }
  return KvScheme::Dense(*type);
}

KvScheme ReadKvConfig(const std::filesystem::path& path) {
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(ReadFileToString(path));
  } catch (const nlohmann::json::exception& e) {
    Fail("model", "KV config {}: not JSON ({})", path.string(), e.what());
  }
  KvScheme scheme{.group_size = 64, .start = 0};
  nlohmann::json bits = config;
  if (config.is_object()) {
    for (const auto& [key, value] : config.items()) {
      if (key != "bits" && key != "group_size") {
        Fail("model", "KV config {}: unknown key '{}' (expected \"bits\" and \"group_size\")",
             path.string(), key);
      }
    }
    if (!config.contains("bits")) Fail("model", "KV config {}: no \"bits\" list", path.string());
    bits = config["bits"];
    if (config.contains("group_size")) {
      if (!config["group_size"].is_number_integer()) {
        Fail("model", "KV config {}: group_size {} is not an integer", path.string(),
             config["group_size"].dump());
      }
      scheme.group_size = config["group_size"].get<int>();
    }
  }
  if (!bits.is_array() || bits.empty()) {
    Fail("model", "KV config {}: expected a non-empty list of bits, one per layer (seen {})",
         path.string(), bits.dump().substr(0, 80));
  }
  for (size_t i = 0; i < bits.size(); ++i) {
    if (!bits[i].is_number_integer()) {
      Fail("model", "KV config {}: layer {}'s bits {} are not an integer", path.string(), i,
           bits[i].dump());
    }
    const std::string what = fmt::format("KV config {}, layer {}", path.string(), i);
    quant::CheckMlxParams(quant::MlxMode::kAffine, bits[i].get<int>(), scheme.group_size, what);
    scheme.layer_bits.push_back(bits[i].get<int>(), what);
  }
  return scheme;
}

void CheckKvSchemeFits(const KvScheme& scheme, int head_dim, int num_layers) {
  if (!scheme.layer_bits.empty() && scheme.layer_bits.size() != static_cast<size_t>(num_layers)) {
    Fail("model",
         "--kv {}: a per-layer KV config has {} entries, but the model has {} layers (one entry "
         "per layer)",
         scheme.Name(), scheme.layer_bits.size(), num_layers);
  }
  if ((IsBlockType(scheme.key_storage) || IsBlockType(scheme.value_storage)) &&
      head_dim % 32 != 0) {
    Fail("model",
         "--kv {}: ggml blocks hold 32 elements, which must not straddle two heads, but the "
         "model's head_dim is {}",
         scheme.Name(), head_dim);
  }
  if (scheme.turbo() && (head_dim < quant::kTurboGroup || (head_dim & (head_dim - 1)) != 0)) {
    Fail("model",
         "--kv {}: TurboQuant rotates each head with a Walsh-Hadamard transform and scales groups "
         "of 32, so head_dim must be a power of two of at least 32; the model's head_dim is {}",
         scheme.Name(), head_dim);
  }
  if (scheme.affine() && head_dim % scheme.group_size != 0) {
    Fail("model",
         "--kv {}: the group size {} does not divide the model's head_dim {} (mlx-lm quantizes "
         "each head's keys and values in groups along head_dim; choose a group that divides it)",
         scheme.Name(), scheme.group_size, head_dim);
  }
}

FullAttentionKvCache::FullAttentionKvCache(int64_t kv_dim, int head_dim, KvScheme scheme,
                                           int64_t reserve_positions, int window)
    : kv_dim_(kv_dim), head_dim_(head_dim), scheme_(scheme), window_(window) {
  CHECK(window >= 0);
  CHECK(kv_dim > 0);
  for (const DType t : {scheme.key_storage, scheme.value_storage}) {
    CHECK_MSG(t == DType::kF32 || t == DType::kBF16 || t == DType::kF16 || IsBlockType(t), "{}",
              proctor::Name(t));
    CHECK(!IsBlockType(t) || kv_dim % 32 == 0);
  }
  CHECK(head_dim > 0 && kv_dim % head_dim == 0);
  CHECK(!scheme.quantized() ||
        (scheme.key_storage == DType::kF32 && scheme.value_storage == DType::kF32));
  CHECK(scheme.layer_bits.empty());  // a layer's cache has one scheme (KvScheme::ForLayer)
  CHECK(!scheme.affine() || kv_dim % scheme.group_size == 0);
  CHECK(!scheme.turbo() ||
        (head_dim % quant::kTurboGroup == 0 && (head_dim & (head_dim - 1)) == 0));
  // A window-bounded cache never holds much more than twice the window (see DropOutsideWindow).
  if (window > 0) reserve_positions = std::min<int64_t>(reserve_positions, 2 * int64_t{window});
  Reserve(std::max<int64_t>(reserve_positions, 16));
}

FullAttentionKvCache::QuantizedRows FullAttentionKvCache::NewQuantizedRows(
    int64_t capacity, quant::TurboPart part) const {
  if (scheme_.turbo()) {
    const bool keys = part == quant::TurboPart::kKeys;
    const int bits = keys ? scheme_.turbo_key_bits : scheme_.turbo_value_bits;
    const int64_t groups = kv_dim_ / quant::kTurboGroup;
    return {part, Tensor(DType::kU8, capacity, kv_dim_ * bits / 8),
            Tensor(DType::kF16, capacity, groups),
            keys ? Tensor(DType::kF16, capacity, groups) : Tensor()};
  }
  const int64_t groups = kv_dim_ / scheme_.group_size;
  return {part, Tensor(DType::kU32, capacity, kv_dim_ * scheme_.bits / 32),
          Tensor::F32(capacity, groups), Tensor::F32(capacity, groups)};
}

ops::KvRows FullAttentionKvCache::View(const QuantizedRows& store) const {
  const int64_t rows = held();
  if (scheme_.turbo()) {
    const bool keys = store.part == quant::TurboPart::kKeys;
    return ops::KvRows(
        quant::TurboRows{.part = store.part,
                         .bits = keys ? scheme_.turbo_key_bits : scheme_.turbo_value_bits,
                         .head_dim = head_dim_,
                         .packed = store.packed.View().RowRange(0, rows),
                         .scales = store.scales.View().RowRange(0, rows),
                         .offsets = keys ? store.biases.View().RowRange(0, rows) : MatView{}});
  }
  return ops::KvRows(quant::MlxQuantizedMatrix{.mode = quant::MlxMode::kAffine,
                                               .bits = scheme_.bits,
                                               .group_size = scheme_.group_size,
                                               .packed = store.packed.View().RowRange(0, rows),
                                               .scales = store.scales.View().RowRange(0, rows),
                                               .biases = store.biases.View().RowRange(0, rows)});
}

void FullAttentionKvCache::Reserve(int64_t positions) {
  const auto grown = [&](const Tensor& old, Tensor fresh) {
    if (held() > 0)
      std::memcpy(fresh.bytes(), old.bytes(), static_cast<size_t>(held()) * old.View().row_stride);
    return fresh;
  };
  if (converted()) {
    if (quantized_keys_.packed.rows() >= positions) return;
    for (QuantizedRows* store : {&quantized_keys_, &quantized_values_}) {
      QuantizedRows fresh = NewQuantizedRows(positions, store->part);
      fresh.packed = grown(store->packed, std::move(fresh.packed));
      fresh.scales = grown(store->scales, std::move(fresh.scales));
      if (store->biases.rows() > 0) fresh.biases = grown(store->biases, std::move(fresh.biases));
      *store = std::move(fresh);
    }
    return;
  }
  if (keys_.rows() >= positions) return;
  keys_ = grown(keys_, Tensor(scheme_.key_storage, positions, kv_dim_));
  values_ = grown(values_, Tensor(scheme_.value_storage, positions, kv_dim_));
}

void FullAttentionKvCache::AppendDense(const MatView& rows, Tensor& store) const {
  const DType type = store.type();
  const QuantizeBlocksFn quantize = BlockQuantizer(type);
  for (int64_t r = 0; r < rows.rows; ++r) {
    const float* x = rows.RowAs<float>(r);
    const int64_t row = held() + r;
    uint8_t* out = store.bytes() + static_cast<size_t>(row) * store.View().row_stride;
    if (type == DType::kF32) {
      std::memcpy(out, x, sizeof(float) * kv_dim_);
    } else if (type == DType::kBF16) {
      auto* half = reinterpret_cast<uint16_t*>(out);
      for (int64_t i = 0; i < kv_dim_; ++i) half[i] = F32ToBF16(x[i]);
    } else if (type == DType::kF16) {
      auto* half = reinterpret_cast<uint16_t*>(out);
      for (int64_t i = 0; i < kv_dim_; ++i) half[i] = F32ToF16(x[i]);
    } else {
      quantize(x, kv_dim_ / 32, out);
    }
  }
}

void FullAttentionKvCache::AppendQuantized(const MatView& rows, int64_t first_row,
                                           QuantizedRows& store) const {
  // mx.quantize of the new rows (each row's groups are independent of the others); strided rows
  // are gathered first, contiguous ones quantized where they are.
  std::vector<float> gathered;
  const float* x = rows.RowAs<float>(0);
  if (rows.row_stride != sizeof(float) * static_cast<size_t>(kv_dim_)) {
    gathered.resize(static_cast<size_t>(rows.rows * kv_dim_));
    for (int64_t r = 0; r < rows.rows; ++r) {
      std::memcpy(gathered.data() + r * kv_dim_, rows.RowAs<float>(r), sizeof(float) * kv_dim_);
    }
    x = gathered.data();
  }
  if (scheme_.turbo()) {
    const auto at = [&](Tensor& t) {
      return t.bytes() + static_cast<size_t>(first_row) * t.View().row_stride;
    };
    const int64_t n = rows.rows * kv_dim_;
    if (store.part == quant::TurboPart::kKeys) {
      quant::EncodeTurboKeys(x, n, scheme_.turbo_key_bits, at(store.packed),
                             reinterpret_cast<uint16_t*>(at(store.scales)),
                             reinterpret_cast<uint16_t*>(at(store.biases)), "KV cache keys");
    } else {
      quant::EncodeTurboValues(x, n, head_dim_, scheme_.turbo_value_bits, at(store.packed),
                               reinterpret_cast<uint16_t*>(at(store.scales)), "KV cache values");
    }
    return;
  }
  const quant::MlxQuantizedTensor q =
      quant::QuantizeMlx(x, rows.rows, kv_dim_, quant::MlxMode::kAffine, scheme_.bits,
                         scheme_.group_size, DType::kF32);
  const auto place = [&](const Tensor& from, Tensor& to) {
    const size_t row_bytes = from.View().row_stride;
    std::memcpy(to.bytes() + static_cast<size_t>(first_row) * to.View().row_stride, from.bytes(),
                row_bytes * static_cast<size_t>(rows.rows));
  };
  place(q.packed, store.packed);
  place(q.scales, store.scales);
  place(q.biases, store.biases);
}

void FullAttentionKvCache::Append(const MatView& keys, const MatView& values) {
  CHECK(keys.type == DType::kF32 && values.type == DType::kF32);
  CHECK(keys.cols == kv_dim_ && values.cols == kv_dim_ && keys.rows == values.rows);
  const int64_t t = keys.rows;
  DropOutsideWindow();
  const int64_t capacity = converted() ? quantized_keys_.packed.rows() : keys_.rows();
  if (held() + t > capacity) Reserve(std::max(held() + t, 2 * capacity));
  if (converted()) {
    AppendQuantized(keys, held(), quantized_keys_);
    AppendQuantized(values, held(), quantized_values_);
  } else {
    AppendDense(keys, keys_);
    AppendDense(values, values_);
  }
  length_ += t;
}

bool FullAttentionKvCache::EndStep() {
  if (!scheme_.quantized() || converted() || length_ == 0 || length_ < scheme_.start) return false;
  const int64_t capacity = keys_.rows();
  QuantizedRows keys = NewQuantizedRows(capacity, quant::TurboPart::kKeys);
  QuantizedRows values = NewQuantizedRows(capacity, quant::TurboPart::kValues);
  AppendQuantized(keys_.View().RowRange(0, held()), 0, keys);
  AppendQuantized(values_.View().RowRange(0, held()), 0, values);
  quantized_keys_ = std::move(keys);
  quantized_values_ = std::move(values);
  keys_ = Tensor();
  values_ = Tensor();
  return true;
}

void FullAttentionKvCache::DropOutsideWindow() {
  if (window_ <= 0) return;
  // The next query (at position length_) sees keys from length_ - window + 1 on; rows before are
  // never read again. Moving the held rows down once at least a window of them is dead keeps the
  // copying at one row per appended row and the storage under twice the window plus a step.
  const int64_t dead = length_ - window_ + 1 - first_position_;
  if (dead < window_) return;
  const int64_t keep = held() - dead;
  const auto shift = [&](Tensor& store) {
    if (store.rows() == 0) return;
    const size_t stride = store.View().row_stride;
    std::memmove(store.bytes(), store.bytes() + static_cast<size_t>(dead) * stride,
                 static_cast<size_t>(keep) * stride);
  };
  for (Tensor* store :
       {&keys_, &values_, &quantized_keys_.packed, &quantized_keys_.scales, &quantized_keys_.biases,
        &quantized_values_.packed, &quantized_values_.scales, &quantized_values_.biases}) {
    shift(*store);
  }
  first_position_ += dead;
}

ops::KvRows FullAttentionKvCache::Keys() const {
  if (converted()) return View(quantized_keys_);
  return ops::KvRows(keys_.View().RowRange(0, held()));
}

ops::KvRows FullAttentionKvCache::Values() const {
  if (converted()) return View(quantized_values_);
  return ops::KvRows(values_.View().RowRange(0, held()));
}

size_t FullAttentionKvCache::MemoryBytes() const {
  size_t total = keys_.size_bytes() + values_.size_bytes();
  for (const QuantizedRows* q : {&quantized_keys_, &quantized_values_}) {
    total += q->packed.size_bytes() + q->scales.size_bytes() + q->biases.size_bytes();
  }
  return total;
}

std::unique_ptr<LayerCache> FullAttentionKvCache::Clone() const {
  auto copy = std::make_unique<FullAttentionKvCache>(kv_dim_, head_dim_, scheme_, 0, window_);
  copy->length_ = length_;
  copy->first_position_ = first_position_;
  copy->keys_ = keys_.Copy();
  copy->values_ = values_.Copy();
  for (const auto& [from, to] : {std::pair{&quantized_keys_, &copy->quantized_keys_},
                                 std::pair{&quantized_values_, &copy->quantized_values_}}) {
    to->part = from->part;
    to->packed = from->packed.Copy();
    to->scales = from->scales.Copy();
    to->biases = from->biases.Copy();
  }
  return copy;
}

RecurrentState::RecurrentState(int64_t conv_channels, int64_t conv_kernel, int64_t heads,
                               int64_t key_dim, int64_t value_dim)
    : conv_state_(Tensor::F32(std::max<int64_t>(conv_kernel - 1, 1), conv_channels)),
      ssm_state_(Tensor::F32(heads * key_dim, value_dim)) {}

std::unique_ptr<LayerCache> RecurrentState::Clone() const {
  return std::unique_ptr<LayerCache>(new RecurrentState(conv_state_.Copy(), ssm_state_.Copy()));
}

size_t RecurrentState::MemoryBytes() const {
  return conv_state_.size_bytes() + ssm_state_.size_bytes();
}

FullAttentionKvCache& ModelCache::Attention(int i) {
  LayerCache& l = layer(i);
  CHECK(l.kind() == LayerCacheKind::kFullAttention);
  return static_cast<FullAttentionKvCache&>(l);
}

RecurrentState& ModelCache::Recurrent(int i) {
  LayerCache& l = layer(i);
  CHECK(l.kind() == LayerCacheKind::kRecurrent);
  return static_cast<RecurrentState&>(l);
}

void ModelCache::EndStep(int64_t tokens) {
  position_ += tokens;
  for (auto& l : layers_) {
    if (l->kind() == LayerCacheKind::kFullAttention) {
      static_cast<FullAttentionKvCache&>(*l).EndStep();
    }
  }
}

ModelCache ModelCache::Clone() const {
  ModelCache copy;
  for (const auto& l : layers_) copy.AddLayer(l->Clone());
  copy.position_ = position_;
  return copy;
}

size_t ModelCache::MemoryBytes() const {
  size_t total = 0;
  for (const auto& l : layers_) total += l->MemoryBytes();
  return total;
}

}  // namespace proctor
