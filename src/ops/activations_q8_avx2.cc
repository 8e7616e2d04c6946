// ActivationsQ8::Quantize with AVX2 (activations_q8.h): the codes of 32 values at a time, the
// same bytes and sums as the scalar reference ActivationsQ8::QuantizeRef.
//  - Q8_0 (per 32 values): absmax by vmaxps, codes x * (127 / absmax) rounded ties to even by
//    vcvtps2dq and saturated to int8 by the packs, as ggml's x86 quantize_row_q8_0 makes them
//    (QuantizeQ8_0X86 spells out the same arithmetic in scalar code, non-finite products
//    included: they become -128); d = absmax / 127 as f16.
//  - Q8_K (per 256 values): the first value of largest magnitude, iscale = -127 / it, codes
//    iscale * x rounded ties to even (ggml's nearest_int, which vcvtps2dq equals for the
//    products of a regular block: |iscale * x| <= 127), d = 1 / iscale.
// A Q8_K block with a value that is not finite, or whose inverse scale overflows (a largest
// magnitude below 127 / FLT_MAX), goes through the scalar quantizer: there nearest_int and
// vcvtps2dq part ways.
#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "ops/activations_q8.h"
#include "ops/matvec_gguf_avx2_codes.h"
#include "quant/ggml_blocks.h"
#include "util/half.h"

namespace proctor::ops::internal {
namespace {

PROCTOR_AVX2_TARGET inline __m256 Abs(__m256 v) {
  return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v);
}

// The largest of v's lanes (exact).
PROCTOR_AVX2_TARGET inline float MaxLane(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

// Largest magnitude of x[0, n) (n a multiple of 8; vmaxps skips NaN lanes of its first operand,
// as the scalar max skips them), and whether any value is not finite.
struct Magnitude {
  float amax;
  bool irregular;
};
PROCTOR_AVX2_TARGET inline Magnitude LargestMagnitude(const float* x, int n) {
  __m256 amax = _mm256_setzero_ps(), bad = _mm256_setzero_ps();
  const __m256 inf = _mm256_set1_ps(std::numeric_limits<float>::infinity());
  for (int i = 0; i < n; i += 8) {
    const __m256 a = Abs(_mm256_loadu_ps(x + i));
    amax = _mm256_max_ps(a, amax);
    bad = _mm256_or_ps(bad, _mm256_cmp_ps(a, inf, _CMP_NLT_UQ));  // NaN or inf
  }
  return {MaxLane(amax), _mm256_movemask_ps(bad) != 0};
}

// The sums of the halves of 32 stored codes (codes 0-15 and 16-31).
struct Halves {
  int first, second;
};
PROCTOR_AVX2_TARGET inline Halves SumHalves(const int8_t* stored) {
  const __m256i codes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(stored));
  const __m256i pairs = _mm256_maddubs_epi16(_mm256_set1_epi8(1), codes);
  const __m256i quads = _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
  const __m256i octets = _mm256_hadd_epi32(quads, quads);
  const __m256i sums = _mm256_hadd_epi32(octets, octets);  // lane 0 of each 128-bit half
  return {_mm256_cvtsi256_si32(sums), _mm256_extract_epi32(sums, 4)};
}

// The 32 codes of x[0, 32) * s: rounded ties to even (vcvtps2dq), saturated to int8 (vpackssdw,
// vpacksswb), in order (the packs interleave 128-bit lanes; vpermd undoes it).
PROCTOR_AVX2_TARGET inline void StoreCodes32(const float* x, __m256 s, int8_t* out) {
  const __m256i a = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x), s));
  const __m256i b = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 8), s));
  const __m256i c = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 16), s));
  const __m256i d = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 24), s));
  const __m256i packed = _mm256_packs_epi16(_mm256_packs_epi32(a, b), _mm256_packs_epi32(c, d));
  const __m256i ordered =
      _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), ordered);
}

// One Q8_K block through the scalar quantizer, its codes stored at `codes`; returns its d.
float QuantizeQ8_KBlockRef(const float* x, int8_t* codes) {
  uint8_t bytes[sizeof(quant::BlockQ8_K)];
  quant::QuantizeQ8_KRef(x, 1, bytes);
  quant::BlockQ8_K block;
  std::memcpy(&block, bytes, sizeof(block));
  std::memcpy(codes, block.q, sizeof(block.q));
  return block.d;
}

PROCTOR_AVX2_TARGET void QuantizeQ8_0(const float* x, int64_t K, ActivationsQ8& out) {
  for (int64_t s = 0; s < K / 32; ++s) {
    const float* xs = x + 32 * s;
    int8_t* codes = out.codes.data() + 32 * s;
    const Magnitude m = LargestMagnitude(xs, 32);
    const float inv_d = m.amax != 0.0f ? 127.0f / m.amax : 0.0f;
    StoreCodes32(xs, _mm256_set1_ps(inv_d), codes);
    const Halves h = SumHalves(codes);
    out.SetSlice(s, F16ToF32(F32ToF16(m.amax / 127.0f)), h.first, h.second);
  }
}

PROCTOR_AVX2_TARGET void QuantizeQ8_K(const float* x, int64_t K, ActivationsQ8& out) {
  constexpr int kSlices = quant::kQK_K / 32;
  for (int64_t b = 0; b < K / quant::kQK_K; ++b) {
    const float* xb = x + b * quant::kQK_K;
    int8_t* codes = out.codes.data() + b * quant::kQK_K;
    const Magnitude m = LargestMagnitude(xb, quant::kQK_K);
    float d = 0.0f;
    if (m.irregular) {
      d = QuantizeQ8_KBlockRef(xb, codes);
    } else if (m.amax == 0.0f) {
      std::memset(codes, 0, quant::kQK_K);
    } else {
      // The first value of that magnitude, with its sign.
      const __m256 amax = _mm256_set1_ps(m.amax);
      int first = 0;
      for (int i = 0; i < quant::kQK_K; i += 8) {
        const int hits =
            _mm256_movemask_ps(_mm256_cmp_ps(Abs(_mm256_loadu_ps(xb + i)), amax, _CMP_EQ_OQ));
        if (hits != 0) {
          first = i + __builtin_ctz(static_cast<unsigned>(hits));
          break;
        }
      }
      const float iscale = -127.0f / xb[first];
      if (!std::isfinite(iscale)) {
        d = QuantizeQ8_KBlockRef(xb, codes);
      } else {
        for (int s = 0; s < kSlices; ++s) {
          StoreCodes32(xb + 32 * s, _mm256_set1_ps(iscale), codes + 32 * s);
        }
        d = 1.0f / iscale;
      }
    }
    for (int s = 0; s < kSlices; ++s) {
      const Halves h = SumHalves(codes + 32 * s);
      out.SetSlice(b * kSlices + s, d, h.first, h.second);
    }
  }
}

}  // namespace

void QuantizeActivationsQ8Avx2(const float* x, int64_t K, Q8Blocks blocks, ActivationsQ8& out) {
  out.Resize(K, blocks);
  if (blocks == Q8Blocks::kQ8_K) {
    QuantizeQ8_K(x, K, out);
  } else {
    QuantizeQ8_0(x, K, out);
  }
}

}  // namespace proctor::ops::internal
