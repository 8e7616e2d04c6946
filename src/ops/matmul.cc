// MatMul dispatch: validates shapes, prepares activations for the compute mode, picks the kernel
// family (AVX-512 BF16 dot, or Highway f32) and the path (T == 1: matrix-vector, else blocked),
// and splits output columns N statically across the pool.
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

BF16Kernel g_bf16_kernel = BF16Kernel::kAuto;
bool g_f32_amx = true;
bool g_fused_gguf = true;
bool g_amx_quant = true;

BF16Kernel ChooseBF16Kernel(int64_t T) {
  const bool amx = (g_bf16_kernel == BF16Kernel::kAuto || g_bf16_kernel == BF16Kernel::kAmx) &&
                   T >= 2 && internal::HaveAmxBf16();
  if (amx) return BF16Kernel::kAmx;
  const bool dot = (g_bf16_kernel == BF16Kernel::kAuto ||
                    g_bf16_kernel == BF16Kernel::kAvx512Bf16) && internal::HaveAvx512Bf16();
  return dot ? BF16Kernel::kAvx512Bf16 : BF16Kernel::kF32Fallback;
}

// MLX prefill runs on AMX under the same switches as bf16 weights.
bool MlxUsesAmx(const quant::MlxQuantizedMatrix& w, ComputeMode mode, int64_t T) {
  const bool allowed = mode == ComputeMode::kF32 ? g_f32_amx
                                                 : g_bf16_kernel == BF16Kernel::kAuto ||
                                                       g_bf16_kernel == BF16Kernel::kAmx;
  return allowed && T >= 2 && internal::AmxSupportsMlx(w) && internal::HaveAmxBf16();
}

}  // namespace

const char* MlxKernelName(const quant::MlxQuantizedMatrix& w, ComputeMode mode, int64_t T) {
  if (T == 1) return "mlx-matvec";
  if (MlxUsesAmx(w, mode, T)) {
    return mode == ComputeMode::kF32 ? "mlx-amx-exact" : "mlx-amx-bf16-weights";
  }
  return "mlx-f32-blocked";
}

const char* BF16KernelName(int64_t T) {
  switch (ChooseBF16Kernel(T)) {
    case BF16Kernel::kAmx:
      return "amx-bf16";
    case BF16Kernel::kAvx512Bf16:
      return "avx512bf16";
    default:
      return "f32-fallback";
  }
}

void SetBF16KernelForTesting(BF16Kernel kernel) { g_bf16_kernel = kernel; }
void SetF32AmxForTesting(bool enabled) { g_f32_amx = enabled; }
void SetFusedGgufMatVecForTesting(bool enabled) { g_fused_gguf = enabled; }
void SetAmxQuantForTesting(bool enabled) { g_amx_quant = enabled; }
const char* F32KernelName(const LinearWeight& w, int64_t T) {
  if (T >= 2 && g_amx_quant && internal::AmxQuantSupports(w)) return "amx-quant";
  if (w.is_mlx()) return "mlx";
  return F32KernelName(w.dense().type, T);
}
const char* F32KernelName(DType weight_type, int64_t T) {
  if (T == 1 && g_fused_gguf && internal::HasFusedGgufMatVec(weight_type)) return "gguf-matvec";
  if (weight_type == DType::kBF16 && T >= 2 && g_f32_amx && internal::HaveAmxBf16()) {
    return "amx-bf16x3";
  }
  return T == 1 ? "f32-matvec" : "f32-blocked";
}

void MatMul(const MatView& x, const LinearWeight& weight, MutMatF32 out, ComputeMode mode,
            ThreadPool& pool) {
  if (weight.is_mlx()) {  // matmul_mlx.cc
    internal::MatMulMlx(x, weight.mlx(), out, mode, pool, MlxUsesAmx(weight.mlx(), mode, x.rows));
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
  const BF16Kernel bf16_kernel =
      mode == ComputeMode::kBF16 && w.type == DType::kBF16 ? ChooseBF16Kernel(T)
                                                            : BF16Kernel::kF32Fallback;
  // f32 mode, bf16 weights, T >= 2: AMX on x split exactly into three bf16 parts.
  const bool amx_f32 = mode == ComputeMode::kF32 && w.type == DType::kBF16 && T >= 2 &&
                       g_f32_amx && internal::HaveAmxBf16();
  if (bf16_kernel == BF16Kernel::kAmx || amx_f32) {
    const int parts = amx_f32 ? 3 : 1;
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
    pool.ParallelForGrain(static_cast<size_t>(N), internal::kAmxPanelWidth,
                          [&](size_t begin, size_t end, int) {
      internal::MatMulAmxBF16(packed, parts, T, k_padded, w, out,
                              static_cast<int64_t>(begin), static_cast<int64_t>(end));
    });
    return;
  }
  if (bf16_kernel == BF16Kernel::kAvx512Bf16) {
    std::vector<uint16_t> x_bf16;  // [T, stride]
    int64_t stride = 0;
    ToBF16Rows(x, x_bf16, &stride);
    if (T == 1) {
      pool.ParallelForGrain(static_cast<size_t>(N), kMatVecGrain,
                            [&](size_t begin, size_t end, int) {
        internal::MatVecBF16Dot(x_bf16.data(), w, out.Row(0), static_cast<int64_t>(begin),
                                static_cast<int64_t>(end));
      });
    } else {
      pool.ParallelForGrain(static_cast<size_t>(N), internal::kBF16PanelWidth,
                            [&](size_t begin, size_t end, int) {
        internal::MatMulBlockedBF16Dot(x_bf16.data(), T, stride, w, out,
                                       static_cast<int64_t>(begin), static_cast<int64_t>(end));
      });
    }
    return;
  }
  // Block-quantized weights, T >= 2: AMX tiles on their exact integer codes.
  if (T >= 2 && g_amx_quant && internal::AmxQuantSupports(w)) {
    internal::MatMulAmxQuant(x, w, out, mode, pool);
    return;
  }
  MatView xs = x;
  // [T, K]: activations rounded to bf16 (bf16 mode fallback); reused by the calling thread.
  thread_local std::vector<float> rounded;
  if (mode == ComputeMode::kBF16) {
    rounded.resize(static_cast<size_t>(T * K));
    for (int64_t t = 0; t < T; ++t) RoundToBF16Floats(x.RowAs<float>(t), K, &rounded[t * K]);
    xs = MatView{DType::kF32, T, K, static_cast<size_t>(K) * 4,
                 reinterpret_cast<const uint8_t*>(rounded.data())};
  }
  if (T == 1 && g_fused_gguf && internal::HasFusedGgufMatVec(w.type)) {
    pool.ParallelForGrain(static_cast<size_t>(N), kMatVecGrain,
                          [&](size_t begin, size_t end, int) {
      internal::MatVecGguf(xs.RowAs<float>(0), w, out.Row(0), static_cast<int64_t>(begin),
                           static_cast<int64_t>(end));
    });
    return;
  }
  if (T == 1) {
    pool.ParallelForGrain(static_cast<size_t>(N), kMatVecGrain,
                          [&](size_t begin, size_t end, int) {
      internal::MatVecF32(xs.RowAs<float>(0), w, out.Row(0), static_cast<int64_t>(begin),
                          static_cast<int64_t>(end));
    });
    return;
  }
  pool.ParallelForGrain(static_cast<size_t>(N), static_cast<size_t>(internal::BlockedPanelWidth()),
                        [&](size_t begin, size_t end, int) {
    internal::MatMulBlockedF32(xs, w, out, static_cast<int64_t>(begin), static_cast<int64_t>(end));
  });
}

}  // namespace proctor::ops
