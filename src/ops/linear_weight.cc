// LinearWeight helpers: sizes, type names and row decoding for both representations.
#include "ops/linear_weight.h"

#include <fmt/format.h>

#include "ops/convert.h"

namespace proctor::ops {
namespace {

size_t ViewBytes(const MatView& v) {
  return v.rows == 0 ? 0 : static_cast<size_t>(v.rows) * v.RowBytes();
}

}  // namespace

LinearWeight LinearWeight::RowRange(int64_t begin, int64_t end) const {
  if (!is_mlx_) return dense_.RowRange(begin, end);
  quant::MlxQuantizedMatrix rows = mlx_;
  rows.packed = mlx_.packed.RowRange(begin, end);
  rows.scales = mlx_.scales.RowRange(begin, end);
  if (mlx_.biases.rows != 0) rows.biases = mlx_.biases.RowRange(begin, end);
  return rows;
}

size_t LinearWeight::StoredBytes() const {
  if (!is_mlx_) return ViewBytes(dense_);
  return ViewBytes(mlx_.packed) + ViewBytes(mlx_.scales) + ViewBytes(mlx_.biases);
}

std::string MlxTypeName(quant::MlxMode mode, int bits, int group_size) {
  if (mode == quant::MlxMode::kAffine) return fmt::format("affine {}-bit g{}", bits, group_size);
  return std::string(quant::MlxModeName(mode));
}

std::string LinearWeight::TypeName() const {
  if (is_mlx_) return MlxTypeName(mlx_.mode, mlx_.bits, mlx_.group_size);
  return std::string(Name(dense_.type));
}

void DecodeWeightRow(const LinearWeight& w, int64_t row, int64_t k0, int64_t len, float* out) {
  if (w.is_mlx()) {
    quant::DecodeMlxRowSegment(w.mlx(), row, k0, len, out);
  } else {
    DecodeRowSegment(w.dense(), row, k0, len, out);
  }
}

void DecodeWeightRowRef(const LinearWeight& w, int64_t row, int64_t k0, int64_t len, float* out) {
  if (w.is_mlx()) {
    quant::DecodeMlxRowSegmentRef(w.mlx(), row, k0, len, out);
  } else {
    DecodeRowSegmentRef(w.dense(), row, k0, len, out);
  }
}

}  // namespace proctor::ops
