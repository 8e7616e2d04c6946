// MatMul dispatch: validates shapes, runs the kernel ChooseMatMulKernel names
// (matmul_kernel_choice.h) on activations prepared for the compute mode, and splits output
// columns N statically across the pool.
#include "ops/matmul.h"

#include <algorithm>
#include <vector>

#include "ops/convert.h"
#include "ops/matmul_kernels.h"
#include "util/error.h"

namespace proctor::ops {
namespace {

constexpr int64_t kMatVecGrain = 64;  // rows per partition unit for T == 1

// Rounds x to bf16 bits into a zero-padded [T, stride] buffer (stride: multiple of 32).
void ToBF16Rows(const MatView& x, std::vector<uint16_t>& buf, int64_t* stride) {
  const int64_t K = x.cols;
  *stride = (K + internal::kBF16RowAlign - 1) / internal::kBF16RowAlign * internal::kBF16RowAlign;
  buf.assign(static_cast<size_t>(x.rows * *stride), 0);
  for (int64_t t = 0; t < x.rows; ++t) {
    RoundToBF16Bits(x.RowAs<float>(t), K, buf.data() + t * *stride);
  }
}

// bf16 weights, T >= 2, on AMX tiles: x packed once per call (as `parts` bf16 parts), then the
// weight panels split across the pool.
void MatMulBf16Amx(const MatView& x, const MatView& w, MutMatF32 out, int parts, ThreadPool& pool) {
  const int64_t T = x.rows, K = x.cols, N = w.rows;
  const int64_t k_padded = (K + 31) / 32 * 32;
  const int64_t t_padded = (T + 15) / 16 * 16;
  // Reused across calls by the calling thread; workers use it through `packed` only.
  thread_local std::vector<uint32_t> x_packed_storage;  // [parts][T/16][k_padded/2][16]
  x_packed_storage.resize(static_cast<size_t>(parts * t_padded * k_padded / 2));
  uint32_t* const packed = x_packed_storage.data();
  pool.ParallelFor(static_cast<size_t>(t_padded / 16), [&](size_t begin, size_t end, int) {
    internal::PackTokensVnni(x, k_padded, t_padded, parts, static_cast<int64_t>(begin),
                             static_cast<int64_t>(end), packed);
  });
  pool.ParallelForGrain(
      static_cast<size_t>(N), internal::kAmxPanelWidth, [&](size_t begin, size_t end, int) {
        internal::MatMulAmxBF16(packed, parts, T, k_padded, w, out, static_cast<int64_t>(begin),
                                static_cast<int64_t>(end));
      });
}

// bf16 weights on vdpbf16ps: x rounded to bf16 once, then matrix-vector (T == 1) or blocked.
void MatMulBf16Dot(const MatView& x, const MatView& w, MutMatF32 out, ThreadPool& pool) {
  const int64_t T = x.rows, N = w.rows;
  std::vector<uint16_t> x_bf16;  // [T, stride]
  int64_t stride = 0;
  ToBF16Rows(x, x_bf16, &stride);
  if (T == 1) {
    pool.ParallelForGrain(static_cast<size_t>(N), kMatVecGrain, [&](size_t begin, size_t end, int) {
      internal::MatVecBF16Dot(x_bf16.data(), w, out.Row(0), static_cast<int64_t>(begin),
                              static_cast<int64_t>(end));
    });
    return;
  }
  pool.ParallelForGrain(
      static_cast<size_t>(N), internal::kBF16PanelWidth, [&](size_t begin, size_t end, int) {
        internal::MatMulBlockedBF16Dot(x_bf16.data(), T, stride, w, out,
                                       static_cast<int64_t>(begin), static_cast<int64_t>(end));
      });
}

}  // namespace

void MatMul(const MatView& x, const LinearWeight& weight, MutMatF32 out, ComputeMode mode,
            ThreadPool& pool) {
  if (mode == ComputeMode::kQ8 && !TakesQ8Activations(weight)) mode = ComputeMode::kF32;
  if (weight.is_mlx()) {  // matmul_mlx.cc
    internal::MatMulMlx(x, weight.mlx(), out, mode, pool, ChooseMatMulKernel(weight, mode, x.rows));
    return;
  }
  const MatView& w = weight.dense();
  CHECK(x.type == DType::kF32 && x.row_stride % sizeof(float) == 0);
  CHECK_MSG(IsSupportedWeightType(w.type), "unsupported weight type {}", Name(w.type));
  CHECK_MSG(x.cols == w.cols && out.rows == x.rows && out.cols == w.rows,
            "x [{}, {}] w [{}, {}] out [{}, {}]", x.rows, x.cols, w.rows, w.cols, out.rows,
            out.cols);
  const int64_t T = x.rows, K = x.cols, N = w.rows;
  if (T == 0 || N == 0) return;
  if (K == 0) {
    for (int64_t t = 0; t < T; ++t) std::fill(out.Row(t), out.Row(t) + N, 0.0f);
    return;
  }
  const MatMulKernel kernel = ChooseMatMulKernel(weight, mode, T);
  if (kernel == MatMulKernel::kGgufQ8Avx2) {  // x quantized once, then the rows split
    thread_local ActivationsQ8 x_q8_storage;  // the caller's; workers see it through x_q8
    const ActivationsQ8& x_q8 = x_q8_storage;
    x_q8_storage.Quantize(x.RowAs<float>(0), K, Q8BlocksFor(w.type));
    pool.ParallelForGrain(static_cast<size_t>(N), kMatVecGrain, [&](size_t begin, size_t end, int) {
      internal::MatVecGgufQ8Avx2(x_q8, w, out.Row(0), static_cast<int64_t>(begin),
                                 static_cast<int64_t>(end));
    });
    return;
  }
  if (kernel == MatMulKernel::kAmxQ8) {  // matmul_amx_q8.cc quantizes the tokens itself
    internal::MatMulAmxQ8(x, w, out, pool);
    return;
  }
  if (kernel == MatMulKernel::kGgufQ8GemmAvx2) {  // tokens quantized and interleaved once
    // The caller's buffers (a worker naming them would get its own): workers use the pointers.
    thread_local std::vector<ActivationsQ8> tokens_storage;
    thread_local std::vector<int8_t> tile_codes_storage;
    const int64_t n_tiles = (T + internal::kQ8GemmTokenTile - 1) / internal::kQ8GemmTokenTile;
    if (tokens_storage.size() < static_cast<size_t>(T)) {
      tokens_storage.resize(static_cast<size_t>(T));
    }
    tile_codes_storage.resize(static_cast<size_t>(n_tiles * internal::kQ8GemmTokenTile * K));
    ActivationsQ8* const tokens = tokens_storage.data();
    int8_t* const tile_codes = tile_codes_storage.data();
    pool.ParallelFor(static_cast<size_t>(n_tiles), [&](size_t begin, size_t end, int) {
      const int64_t t_end =
          std::min<int64_t>(T, static_cast<int64_t>(end) * internal::kQ8GemmTokenTile);
      for (int64_t t = static_cast<int64_t>(begin) * internal::kQ8GemmTokenTile; t < t_end; ++t) {
        tokens[t].Quantize(x.RowAs<float>(t), K, Q8BlocksFor(w.type));
      }
      internal::InterleaveQ8Tiles(tokens, T, K, internal::kQ8GemmTokenTile,
                                  static_cast<int64_t>(begin), static_cast<int64_t>(end),
                                  tile_codes);
    });
    const internal::Q8TokenTiles tiles{tokens, T, tile_codes};
    pool.ParallelForGrain(static_cast<size_t>(N), internal::kQ8GemmPanelRows,
                          [&](size_t begin, size_t end, int) {
                            internal::MatMulGgufQ8Avx2(tiles, w, out, static_cast<int64_t>(begin),
                                                       static_cast<int64_t>(end));
                          });
    return;
  }
  MatView xs = x;
  // [T, K]: the activations the f32 kernels see when they are not x itself (bf16 mode: rounded
  // to bf16; q8 mode without the integer kernel: round-tripped through 8 bits, then f32 mode);
  // reused by the calling thread.
  thread_local std::vector<float> rounded;
  if (mode == ComputeMode::kQ8) {
    rounded.resize(static_cast<size_t>(T * K));
    for (int64_t t = 0; t < T; ++t) {
      RoundTripQ8Activations(x.RowAs<float>(t), K, Q8BlocksFor(w.type), &rounded[t * K]);
    }
    xs = MatView{DType::kF32, T, K, static_cast<size_t>(K) * 4,
                 reinterpret_cast<const uint8_t*>(rounded.data())};
    mode = ComputeMode::kF32;
  }
  switch (kernel) {
    case MatMulKernel::kAmxBf16:
      MatMulBf16Amx(x, w, out, /*parts=*/1, pool);
      return;
    case MatMulKernel::kAmxBf16x3:
      MatMulBf16Amx(x, w, out, /*parts=*/3, pool);
      return;
    case MatMulKernel::kAvx512Bf16:
      MatMulBf16Dot(x, w, out, pool);
      return;
    case MatMulKernel::kAmxQuant:
      internal::MatMulAmxQuant(xs, w, out, mode, pool);
      return;
    default:  // the f32 kernels below, on activations rounded for the mode
      break;
  }
  if (mode == ComputeMode::kBF16) {
    rounded.resize(static_cast<size_t>(T * K));
    for (int64_t t = 0; t < T; ++t) RoundToBF16Floats(x.RowAs<float>(t), K, &rounded[t * K]);
    xs = MatView{DType::kF32, T, K, static_cast<size_t>(K) * 4,
                 reinterpret_cast<const uint8_t*>(rounded.data())};
  }
  if (kernel == MatMulKernel::kGgufMatVec || kernel == MatMulKernel::kGgufMatVecAvx2) {
    const auto matvec =
        kernel == MatMulKernel::kGgufMatVec ? internal::MatVecGguf : internal::MatVecGgufAvx2;
    pool.ParallelForGrain(static_cast<size_t>(N), kMatVecGrain, [&](size_t begin, size_t end, int) {
      matvec(xs.RowAs<float>(0), w, out.Row(0), static_cast<int64_t>(begin),
             static_cast<int64_t>(end));
    });
    return;
  }
  if (kernel == MatMulKernel::kF32MatVec) {
    pool.ParallelForGrain(static_cast<size_t>(N), kMatVecGrain, [&](size_t begin, size_t end, int) {
      internal::MatVecF32(xs.RowAs<float>(0), w, out.Row(0), static_cast<int64_t>(begin),
                          static_cast<int64_t>(end));
    });
    return;
  }
  CHECK(kernel == MatMulKernel::kF32Blocked);
  pool.ParallelForGrain(static_cast<size_t>(N), static_cast<size_t>(internal::BlockedPanelWidth()),
                        [&](size_t begin, size_t end, int) {
                          internal::MatMulBlockedF32(xs, w, out, static_cast<int64_t>(begin),
                                                     static_cast<int64_t>(end));
                        });
}

}  // namespace proctor::ops
