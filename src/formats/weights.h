// The weight table: tensors by Hugging Face name, whatever file format they came from.
//
// Entries point into memory-mapped files (the store keeps the mappings alive) or into tensors the
// store owns (synthetic models, repacked weights). Shapes are in HF order, outermost first:
// a Linear weight is [out, in]. A GGUF store exposes its tensors under the HF names with the
// dims reversed (GGUF lists the contiguous dimension first); see gguf_names.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/dtype.h"
#include "tensor/tensor.h"

namespace proctor {

struct TensorInfo {
  std::string name;  // HF name, e.g. "model.layers.0.self_attn.q_proj.weight"
  DType type = DType::kF32;
  std::vector<int64_t> shape;     // outermost first ([out, in] for a Linear)
  const uint8_t* data = nullptr;  // may be unaligned (MLX writes unaligned safetensors)
  size_t bytes = 0;
  std::string file;         // where it came from (file path, or "<memory>")
  std::string source_name;  // the name in the file (differs from `name` for GGUF)

  int64_t NumElements() const;
};

class WeightStore {
 public:
  WeightStore() = default;
  explicit WeightStore(std::string origin) : origin_(std::move(origin)) {}
  WeightStore(WeightStore&&) noexcept = default;
  WeightStore& operator=(WeightStore&&) noexcept = default;
  WeightStore(const WeightStore&) = delete;
  WeightStore& operator=(const WeightStore&) = delete;

  // Names the model in error messages (its path or id).
  const std::string& origin() const { return origin_; }
  void set_origin(std::string origin) { origin_ = std::move(origin); }

  const TensorInfo* Find(std::string_view name) const;  // nullptr if absent
  const TensorInfo& Get(std::string_view name) const;   // Error naming the model and the tensor
  bool Has(std::string_view name) const { return Find(name) != nullptr; }
  // A 2-D view [rows = out, cols = in] (1-D tensors: [1, n]); Error for other ranks or when
  // the row length is not whole blocks of a block type.
  MatView Matrix(std::string_view name) const;
  // Checks the tensor has exactly this shape (Error naming model, tensor, seen and expected).
  const TensorInfo& Expect(std::string_view name, const std::vector<int64_t>& shape) const;

  // Adds (or replaces) an entry viewing memory kept alive elsewhere (the mapped files below).
  void AddView(TensorInfo info);
  // Adds (or replaces) an in-memory tensor; `shape` defaults to {rows, cols}. Replacing an entry
  // keeps its old owned storage alive, so views handed out earlier stay valid.
  void AddOwned(std::string name, Tensor tensor, std::vector<int64_t> shape = {});
  // Drops an entry (the memory it viewed stays alive with the store); no-op when absent.
  void Remove(std::string_view name);
  // Keeps a resource (a mapped file) alive as long as the store.
  void KeepAlive(std::shared_ptr<const void> resource) {
    keep_alive_.push_back(std::move(resource));
  }

  std::vector<std::string> Names() const;  // sorted
  size_t size() const { return tensors_.size(); }
  size_t TotalBytes() const;

 private:
  std::string origin_;
  std::map<std::string, TensorInfo, std::less<>> tensors_;
  std::vector<std::unique_ptr<Tensor>> owned_;
  std::vector<std::shared_ptr<const void>> keep_alive_;
};

// The outermost slices of a tensor of 2 or more dimensions whose bytes divide evenly among them
// (stacked experts: [experts, out, in]): one view each, the shape without its first dimension,
// slice i's bytes the i-th contiguous part, source_name "<source>[expert i]"; `name` is left for
// the caller. Empty when the tensor cannot be sliced so.
std::vector<TensorInfo> OuterSlices(const TensorInfo& stacked);

// "[2, 3]"-style formatting of a shape for messages.
std::string ShapeString(const std::vector<int64_t>& shape);

}  // namespace proctor
