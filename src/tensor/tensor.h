// Non-owning matrix views and owning tensor storage.
//
// MatView is what kernels take: a 2-D row-major matrix of any DType with a row stride in bytes
// (so views over mmapped weights, sub-matrices and quantized rows all look the same). Tensor owns
// 64-byte-aligned storage; copies are explicit (Copy()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "tensor/dtype.h"
#include "util/error.h"

namespace proctor {

struct MatView {
  DType type = DType::kF32;
  int64_t rows = 0;
  int64_t cols = 0;       // logical elements per row
  size_t row_stride = 0;  // bytes between consecutive rows
  const uint8_t* data = nullptr;

  const uint8_t* Row(int64_t r) const { return data + static_cast<size_t>(r) * row_stride; }
  template <typename T>
  const T* RowAs(int64_t r) const {
    return reinterpret_cast<const T*>(Row(r));
  }
  // Rows [begin, end) as a view.
  MatView RowRange(int64_t begin, int64_t end) const {
    CHECK(0 <= begin && begin <= end && end <= rows);
    return MatView{type, end - begin, cols, row_stride, Row(begin)};
  }
  size_t RowBytes() const { return BytesFor(type, static_cast<uint64_t>(cols)); }
};

// A writable f32 matrix view (activations, outputs).
struct MutMatF32 {
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t stride = 0;  // floats between rows
  float* data = nullptr;

  float* Row(int64_t r) const { return data + r * stride; }
  MatView View() const {
    return MatView{DType::kF32, rows, cols, static_cast<size_t>(stride) * sizeof(float),
                   reinterpret_cast<const uint8_t*>(data)};
  }
  MutMatF32 RowRange(int64_t begin, int64_t end) const {
    CHECK(0 <= begin && begin <= end && end <= rows);
    return MutMatF32{end - begin, cols, stride, data + begin * stride};
  }
};

// Contiguous, 64-byte-aligned storage of rows x cols elements of one DType.
class Tensor {
 public:
  Tensor() = default;
  Tensor(DType type, int64_t rows, int64_t cols);  // zero-filled
  Tensor(Tensor&&) noexcept = default;
  Tensor& operator=(Tensor&&) noexcept = default;
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;

  static Tensor F32(int64_t rows, int64_t cols) { return Tensor(DType::kF32, rows, cols); }
  Tensor Copy() const;

  DType type() const { return type_; }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  size_t size_bytes() const { return bytes_; }
  uint8_t* bytes() { return data_.get(); }
  const uint8_t* bytes() const { return data_.get(); }

  float* f32() {
    CHECK(type_ == DType::kF32);
    return reinterpret_cast<float*>(data_.get());
  }
  const float* f32() const {
    CHECK(type_ == DType::kF32);
    return reinterpret_cast<const float*>(data_.get());
  }
  float* RowF32(int64_t r) { return f32() + r * cols_; }
  const float* RowF32(int64_t r) const { return f32() + r * cols_; }

  MatView View() const {
    return MatView{type_, rows_, cols_, BytesFor(type_, static_cast<uint64_t>(cols_)), data_.get()};
  }
  MutMatF32 MutF32() { return MutMatF32{rows_, cols_, cols_, f32()}; }

 private:
  struct FreeDeleter {
    void operator()(uint8_t* p) const;
  };
  DType type_ = DType::kF32;
  int64_t rows_ = 0;
  int64_t cols_ = 0;
  size_t bytes_ = 0;
  std::unique_ptr<uint8_t, FreeDeleter> data_;
};

}  // namespace proctor
