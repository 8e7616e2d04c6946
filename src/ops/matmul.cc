// MatMul dispatch: validates shapes, rounds activations for bf16 mode, splits N across threads.
#include "ops/matmul.h"

#include <vector>

#include "ops/convert.h"
#include "util/error.h"

namespace proctor::ops {
namespace {

float DotF32(const float* a, const float* b, int64_t n) {
  constexpr int kLanes = 16;
  float partial[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) partial[l] += a[i + l] * b[i + l];
  }
  for (; i < n; ++i) partial[i % kLanes] += a[i] * b[i];
  float sum = 0.0f;
  for (int l = 0; l < kLanes; ++l) sum += partial[l];
  return sum;
}

}  // namespace

const char* BF16KernelName() { return "f32-fallback"; }

void MatMul(const MatView& x, const MatView& w, MutMatF32 out, ComputeMode mode,
            ThreadPool& pool) {
  CHECK(x.type == DType::kF32);
  CHECK_MSG(IsSupportedWeightType(w.type), "unsupported weight type {}", Name(w.type));
  CHECK_MSG(x.cols == w.cols && out.rows == x.rows && out.cols == w.rows,
            "x [{}, {}] w [{}, {}] out [{}, {}]", x.rows, x.cols, w.rows, w.cols, out.rows,
            out.cols);
  const int64_t T = x.rows, K = x.cols, N = w.rows;
  if (T == 0 || N == 0) return;
  MatView xs = x;
  std::vector<float> rounded;  // [T, K] when activations are rounded to bf16
  if (mode == ComputeMode::kBF16) {
    rounded.resize(static_cast<size_t>(T * K));
    for (int64_t t = 0; t < T; ++t) RoundToBF16Floats(x.RowAs<float>(t), K, &rounded[t * K]);
    xs = MatView{DType::kF32, T, K, static_cast<size_t>(K) * 4,
                 reinterpret_cast<const uint8_t*>(rounded.data())};
  }
  pool.ParallelForGrain(static_cast<size_t>(N), 16, [&](size_t begin, size_t end, int) {
    std::vector<float> w_row(static_cast<size_t>(K));  // [K]
    for (size_t n = begin; n < end; ++n) {
      DecodeRowSegment(w, static_cast<int64_t>(n), 0, K, w_row.data());
      for (int64_t t = 0; t < T; ++t) out.Row(t)[n] = DotF32(xs.RowAs<float>(t), w_row.data(), K);
    }
  });
}

}  // namespace proctor::ops
