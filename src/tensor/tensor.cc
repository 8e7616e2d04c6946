#include "tensor/tensor.h"

#include <cstdlib>
#include <cstring>

namespace proctor {

void Tensor::FreeDeleter::operator()(uint8_t* p) const { std::free(p); }

Tensor::Tensor(DType type, int64_t rows, int64_t cols) : type_(type), rows_(rows), cols_(cols) {
  CHECK(rows >= 0 && cols >= 0);
  bytes_ = BytesFor(type, static_cast<uint64_t>(cols)) * static_cast<size_t>(rows);
  const size_t alloc = (bytes_ + 63) / 64 * 64;
  if (alloc > 0) {
    void* p = std::aligned_alloc(64, alloc);
    CHECK_MSG(p != nullptr, "out of memory allocating {} bytes", alloc);
    std::memset(p, 0, alloc);
    data_.reset(static_cast<uint8_t*>(p));
  }
}

Tensor Tensor::Copy() const {
  Tensor out(type_, rows_, cols_);
  if (bytes_ > 0) std::memcpy(out.data_.get(), data_.get(), bytes_);
  return out;
}

}  // namespace proctor
