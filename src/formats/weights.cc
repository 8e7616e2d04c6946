#include "formats/weights.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "util/error.h"

namespace proctor {

int64_t TensorInfo::NumElements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

const TensorInfo* WeightStore::Find(std::string_view name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

const TensorInfo& WeightStore::Get(std::string_view name) const {
  const TensorInfo* info = Find(name);
  if (info == nullptr) {
    Fail("model", "{}: tensor \"{}\" is missing ({} tensors in the model)", origin_, name,
         tensors_.size());
  }
  return *info;
}

MatView WeightStore::Matrix(std::string_view name) const {
  const TensorInfo& info = Get(name);
  int64_t rows = 0;
  int64_t cols = 0;
  if (info.shape.size() == 1) {
    rows = 1;
    cols = info.shape[0];
  } else if (info.shape.size() == 2) {
    rows = info.shape[0];
    cols = info.shape[1];
  } else {
    Fail("model", "{}: tensor \"{}\" has shape {}, expected a matrix or a vector", origin_, name,
         ShapeString(info.shape));
  }
  if (!FitsBlocks(info.type, static_cast<uint64_t>(cols))) {
    Fail("model", "{}: tensor \"{}\" rows of {} values are not whole {} blocks", origin_, name,
         cols, Name(info.type));
  }
  const size_t row_bytes = BytesFor(info.type, static_cast<uint64_t>(cols));
  CHECK_MSG(row_bytes * static_cast<size_t>(rows) == info.bytes, "{}: {} bytes for shape {}", name,
            info.bytes, ShapeString(info.shape));
  return MatView{info.type, rows, cols, row_bytes, info.data};
}

const TensorInfo& WeightStore::Expect(std::string_view name,
                                      const std::vector<int64_t>& shape) const {
  const TensorInfo& info = Get(name);
  if (info.shape != shape) {
    Fail("model", "{}: tensor \"{}\" has shape {}, expected {}", origin_, name,
         ShapeString(info.shape), ShapeString(shape));
  }
  return info;
}

void WeightStore::AddView(TensorInfo info) {
  std::string key = info.name;
  tensors_.insert_or_assign(std::move(key), std::move(info));
}

std::vector<TensorInfo> OuterSlices(const TensorInfo& stacked) {
  std::vector<TensorInfo> slices;
  if (stacked.shape.size() < 2 || stacked.shape[0] <= 0) return slices;
  const auto count = static_cast<size_t>(stacked.shape[0]);
  if (stacked.bytes % count != 0) return slices;
  const size_t bytes = stacked.bytes / count;
  slices.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    TensorInfo slice = stacked;
    slice.shape.erase(slice.shape.begin());
    slice.source_name = fmt::format("{}[expert {}]", stacked.source_name, i);
    slice.data = stacked.data + i * bytes;
    slice.bytes = bytes;
    slices.push_back(std::move(slice));
  }
  return slices;
}

void WeightStore::Remove(std::string_view name) {
  const auto it = tensors_.find(name);
  if (it != tensors_.end()) tensors_.erase(it);
}

void WeightStore::AddOwned(std::string name, Tensor tensor, std::vector<int64_t> shape) {
  if (shape.empty()) shape = {tensor.rows(), tensor.cols()};
  int64_t elements = 1;
  for (int64_t d : shape) elements *= d;
  CHECK_MSG(elements == tensor.rows() * tensor.cols(), "{}: shape {} for a {}x{} tensor", name,
            ShapeString(shape), tensor.rows(), tensor.cols());
  auto owned = std::make_unique<Tensor>(std::move(tensor));
  TensorInfo info;
  info.name = name;
  info.source_name = name;
  info.type = owned->type();
  info.shape = std::move(shape);
  info.data = owned->bytes();
  info.bytes = owned->size_bytes();
  info.file = "<memory>";
  owned_.push_back(std::move(owned));
  AddView(std::move(info));
}

std::vector<std::string> WeightStore::Names() const {
  std::vector<std::string> names;
  names.reserve(tensors_.size());
  for (const auto& [name, info] : tensors_) names.push_back(name);
  return names;
}

size_t WeightStore::TotalBytes() const {
  size_t total = 0;
  for (const auto& [name, info] : tensors_) total += info.bytes;
  return total;
}

}  // namespace proctor
