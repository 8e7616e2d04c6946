// Elementwise ops and embedding lookup (SiLU via the Highway Exp kernel; the rest are simple
// memory-bound loops).
#include "ops/elementwise.h"

#include <cmath>
#include <vector>

#include "ops/convert.h"
#include "ops/matmul_kernels.h"
#include "util/error.h"

namespace proctor::ops {

void SiluMul(MutMatF32 gate, const MatView& up) {
  CHECK(up.type == DType::kF32 && up.rows == gate.rows && up.cols == gate.cols);
  for (int64_t t = 0; t < gate.rows; ++t) {
    float* g = gate.Row(t);
    const float* u = up.RowAs<float>(t);
    internal::SiluMulRow(g, u, gate.cols);
  }
}

void GeluTanhMul(MutMatF32 gate, const MatView& up) {
  CHECK(up.type == DType::kF32 && up.rows == gate.rows && up.cols == gate.cols);
  for (int64_t t = 0; t < gate.rows; ++t) {
    internal::GeluTanhMulRow(gate.Row(t), up.RowAs<float>(t), gate.cols);
  }
}

void GeluTanhMulRef(MutMatF32 gate, const MatView& up) {
  CHECK(up.type == DType::kF32 && up.rows == gate.rows && up.cols == gate.cols);
  const double beta = std::sqrt(2.0 / 3.14159265358979323846);
  for (int64_t t = 0; t < gate.rows; ++t) {
    float* g = gate.Row(t);
    const float* u = up.RowAs<float>(t);
    for (int64_t i = 0; i < gate.cols; ++i) {
      const double x = g[i];
      const double gelu = 0.5 * x * (1.0 + std::tanh(beta * (x + 0.044715 * x * x * x)));
      g[i] = static_cast<float>(gelu * u[i]);
    }
  }
}

void AddInPlace(MutMatF32 acc, const MatView& x) {
  CHECK(x.type == DType::kF32 && x.rows == acc.rows && x.cols == acc.cols);
  for (int64_t t = 0; t < acc.rows; ++t) {
    float* a = acc.Row(t);
    const float* b = x.RowAs<float>(t);
    for (int64_t i = 0; i < acc.cols; ++i) a[i] += b[i];
  }
}

void AddBias(MutMatF32 x, const MatView& bias) {
  CHECK(bias.rows >= 1 && bias.cols == x.cols);
  std::vector<float> b(static_cast<size_t>(x.cols));
  DecodeRowSegment(bias, 0, 0, bias.cols, b.data());
  for (int64_t t = 0; t < x.rows; ++t) {
    float* row = x.Row(t);
    for (int64_t i = 0; i < x.cols; ++i) row[i] += b[i];
  }
}

void GatherRows(const LinearWeight& table, std::span<const int32_t> ids, MutMatF32 out) {
  CHECK(static_cast<int64_t>(ids.size()) == out.rows && out.cols == table.cols());
  for (size_t t = 0; t < ids.size(); ++t) {
    if (ids[t] < 0 || ids[t] >= table.rows()) {
      Fail("ops", "token id {} at position {} is outside the embedding table's {} rows", ids[t], t,
           table.rows());
    }
    DecodeWeightRow(table, ids[t], 0, table.cols(), out.Row(static_cast<int64_t>(t)));
  }
}

}  // namespace proctor::ops
