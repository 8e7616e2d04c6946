// Highway helpers shared by the GGUF block kernels (ggml_legacy_blocks_simd.cc and
// ggml_k_quants_simd.cc): lane types, fp16 scale loads, bytes widened to int32 lanes, the dot
// product that dequantizes one block into a stack buffer, and the per-type dispatch wrappers.
// Codes are unpacked in 32-bit lanes and scaled with the same f32 operations, in the same order,
// as the scalar references, so dequantized values are bit-identical to them.
//
// Like every Highway "-inl.h" file it is compiled once per SIMD target: the guard below flips
// with HWY_TARGET_TOGGLE, so include it after "hwy/foreach_target.h" and "hwy/highway.h".

#ifndef PROCTOR_QUANT_GGML_SIMD_HELPERS_MACROS_
#define PROCTOR_QUANT_GGML_SIMD_HELPERS_MACROS_

// Inside HWY_NAMESPACE: Dot<T>Impl as DotViaDequantize over Dequantize<T>Impl.
#define PROCTOR_DEFINE_DOT_VIA_DEQUANTIZE_IMPL(T, kElems)                                        \
  float Dot##T##Impl(const uint8_t* blocks, int64_t n_blocks, const float* x) {                  \
    return DotViaDequantize<Dequantize##T##Impl, kElems, sizeof(Block##T)>(blocks, n_blocks, x); \
  }

// Under HWY_ONCE: Dequantize<T> and Dot<T> (declared in ggml_blocks.h) dispatch at run time to
// the best target's Dequantize<T>Impl and Dot<T>Impl.
#define PROCTOR_EXPORT_BLOCK_KERNELS(T)                                     \
  HWY_EXPORT(Dequantize##T##Impl);                                          \
  HWY_EXPORT(Dot##T##Impl);                                                 \
  void Dequantize##T(const uint8_t* blocks, int64_t n_blocks, float* out) { \
    HWY_DYNAMIC_DISPATCH(Dequantize##T##Impl)(blocks, n_blocks, out);       \
  }                                                                         \
  float Dot##T(const uint8_t* blocks, int64_t n_blocks, const float* x) {   \
    return HWY_DYNAMIC_DISPATCH(Dot##T##Impl)(blocks, n_blocks, x);         \
  }

#endif  // PROCTOR_QUANT_GGML_SIMD_HELPERS_MACROS_

#if defined(PROCTOR_QUANT_GGML_SIMD_HELPERS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef PROCTOR_QUANT_GGML_SIMD_HELPERS_INL_H_
#undef PROCTOR_QUANT_GGML_SIMD_HELPERS_INL_H_
#else
#define PROCTOR_QUANT_GGML_SIMD_HELPERS_INL_H_
#endif

#include <cstring>

#include "hwy/highway.h"
#include "quant/ggml_blocks.h"
#include "util/half.h"

HWY_BEFORE_NAMESPACE();
namespace proctor::quant {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using DI32 = hn::Rebind<int32_t, DF>;
using DU8 = hn::Rebind<uint8_t, DF>;

// N consecutive bytes widened to int32 lanes.
HWY_INLINE hn::Vec<DI32> LoadBytes(const uint8_t* p) {
  return hn::PromoteTo(DI32(), hn::LoadU(DU8(), p));
}

HWY_INLINE hn::Vec<DF> ToFloat(hn::Vec<DI32> v) { return hn::ConvertTo(DF(), v); }

// sum over blocks of value * x, dequantizing one block at a time.
template <void (*kDequantize)(const uint8_t*, int64_t, float*), int kElems, size_t kBytes>
float DotViaDequantize(const uint8_t* blocks, int64_t n_blocks, const float* x) {
  const DF df;
  const size_t N = hn::Lanes(df);
  HWY_ALIGN float values[kElems];
  auto acc = hn::Zero(df);
  for (int64_t b = 0; b < n_blocks; ++b) {
    kDequantize(blocks + b * kBytes, 1, values);
    const float* xb = x + b * kElems;
    for (size_t i = 0; i < kElems; i += N) {
      acc = hn::MulAdd(hn::Load(df, values + i), hn::LoadU(df, xb + i), acc);
    }
  }
  return hn::GetLane(hn::SumOfLanes(df, acc));
}

}  // namespace HWY_NAMESPACE
}  // namespace proctor::quant
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
