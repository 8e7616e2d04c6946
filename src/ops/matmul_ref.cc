// Scalar reference for MatMul (see matmul.h).
#include <vector>

#include "ops/activations_q8.h"
#include "ops/convert.h"
#include "ops/matmul.h"
#include "util/error.h"
#include "util/half.h"

namespace proctor::ops {

void MatMulRef(const MatView& x, const LinearWeight& w, MutMatF32 out, ComputeMode mode) {
  CHECK(x.type == DType::kF32);
  CHECK_MSG(x.cols == w.cols() && out.rows == x.rows && out.cols == w.rows(),
            "x [{}, {}] w [{}, {}] out [{}, {}]", x.rows, x.cols, w.rows(), w.cols(), out.rows,
            out.cols);
  std::vector<float> w_row(static_cast<size_t>(w.cols()));  // [K]
  std::vector<float> x_row(static_cast<size_t>(x.cols));    // [K]
  for (int64_t n = 0; n < w.rows(); ++n) {
    DecodeWeightRowRef(w, n, 0, w.cols(), w_row.data());
    for (int64_t t = 0; t < x.rows; ++t) {
      const float* xt = x.RowAs<float>(t);
      if (mode == ComputeMode::kQ8 && TakesQ8Activations(w)) {
        RoundTripQ8Activations(xt, x.cols, Q8BlocksFor(w.dense().type), x_row.data());
      } else {
        for (int64_t k = 0; k < x.cols; ++k) {
          x_row[k] = mode == ComputeMode::kBF16 ? RoundToBF16(xt[k]) : xt[k];
        }
      }
      float sum = 0.0f;
      for (int64_t k = 0; k < x.cols; ++k) sum += x_row[k] * w_row[k];
      out.Row(t)[n] = sum;
    }
  }
}

}  // namespace proctor::ops
