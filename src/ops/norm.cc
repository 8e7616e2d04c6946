// RMS normalisation.
#include "ops/norm.h"

#include <cmath>
#include <vector>

#include "ops/convert.h"
#include "util/error.h"

namespace proctor::ops {
namespace {

void CheckNormArgs(const MatView& x, const MatView& weight, MutMatF32 out) {
  CHECK(x.type == DType::kF32);
  CHECK_MSG(weight.rows >= 1 && weight.cols == x.cols && out.rows == x.rows && out.cols == x.cols,
            "x [{}, {}] weight [{}, {}] out [{}, {}]", x.rows, x.cols, weight.rows, weight.cols,
            out.rows, out.cols);
}

}  // namespace

void RmsNorm(const MatView& x, const MatView& weight, float eps, bool add_one, MutMatF32 out,
             RmsNormSum sum_order) {
  CheckNormArgs(x, weight, out);
  const int64_t K = x.cols;
  std::vector<float> w(static_cast<size_t>(K));  // [K]
  DecodeRowSegment(weight, 0, 0, K, w.data());
  if (add_one) {
    for (float& v : w) v += 1.0f;
  }
  for (int64_t t = 0; t < x.rows; ++t) {
    const float* xt = x.RowAs<float>(t);
    float mean;
    if (sum_order == RmsNormSum::kGgml) {
      double sum = 0.0;
      for (int64_t i = 0; i < K; ++i) sum += static_cast<double>(xt[i] * xt[i]);
      mean = static_cast<float>(sum / static_cast<double>(K));
    } else {
      constexpr int kLanes = 16;  // fixed partial sums: deterministic, vectorizable
      float partial[kLanes] = {};
      int64_t i = 0;
      for (; i + kLanes <= K; i += kLanes) {
        for (int l = 0; l < kLanes; ++l) partial[l] += xt[i + l] * xt[i + l];
      }
      for (; i < K; ++i) partial[i % kLanes] += xt[i] * xt[i];
      float sum = 0.0f;
      for (int l = 0; l < kLanes; ++l) sum += partial[l];
      mean = sum / static_cast<float>(K);
    }
    const float inv_rms = 1.0f / std::sqrt(mean + eps);
    float* o = out.Row(t);
    for (int64_t j = 0; j < K; ++j) o[j] = w[j] * (xt[j] * inv_rms);
  }
}

void RmsNormRef(const MatView& x, const MatView& weight, float eps, bool add_one, MutMatF32 out) {
  CheckNormArgs(x, weight, out);
  const int64_t K = x.cols;
  std::vector<float> w(static_cast<size_t>(K));
  DecodeRowSegmentRef(weight, 0, 0, K, w.data());
  for (int64_t t = 0; t < x.rows; ++t) {
    const float* xt = x.RowAs<float>(t);
    double sum = 0.0;
    for (int64_t i = 0; i < K; ++i) sum += static_cast<double>(xt[i]) * xt[i];
    const double inv_rms = 1.0 / std::sqrt(sum / static_cast<double>(K) + eps);
    float* o = out.Row(t);
    for (int64_t j = 0; j < K; ++j) {
      o[j] = static_cast<float>((w[j] + (add_one ? 1.0 : 0.0)) * (xt[j] * inv_rms));
    }
  }
}

}  // namespace proctor::ops
