// Highway helpers shared by the kernels that read little-endian bit streams of small codes (MLX
// affine rows, mlx_quant_simd.cc; TurboQuant rows, turbo_quant_simd.cc): up to eight codes at a
// time as int32 lanes. 8-bit codes are bytes; 2-, 3- and 4-bit codes (code i at stream bits [i *
// bits, i * bits + bits), LSB first) are read with one small load and shifted per lane.
//
// Like every Highway "-inl.h" file it is compiled once per SIMD target: the guard below flips
// with HWY_TARGET_TOGGLE, so include it after "hwy/foreach_target.h" and "hwy/highway.h".

#if defined(PROCTOR_QUANT_PACKED_CODES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef PROCTOR_QUANT_PACKED_CODES_INL_H_
#undef PROCTOR_QUANT_PACKED_CODES_INL_H_
#else
#define PROCTOR_QUANT_PACKED_CODES_INL_H_
#endif

#include <cstdint>
#include <cstring>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace proctor::quant {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Eight lanes: one lane per code of a load.
using D8 = hn::CappedTag<float, 8>;
using D8I = hn::Rebind<int32_t, D8>;

// Codes of elements [e0, e0 + 8) of 8-bit codes: bytes, widened.
HWY_INLINE hn::Vec<D8I> LoadCodesWord(const uint8_t* row, int64_t e0) {
  return hn::PromoteTo(D8I(), hn::LoadU(hn::Rebind<uint8_t, D8>(), row + e0));
}

// Codes of elements [e0, e0 + Lanes(D8)) (e0 a multiple of the lane count) of 2-, 3- and 4-bit
// codes: the bytes holding them (4 bytes read where the row has them: bits past the last code are
// masked off), one little-endian word broadcast to the lanes and shifted right by s, s + bits, ...
// where s = (e0 * bits) % 8. With 8 lanes (every x86 target) s is 0 and the eight codes fill
// exactly `bits` bytes; with fewer lanes (EMU128: 4, SCALAR: 1) s + Lanes * bits stays under 32.
HWY_INLINE hn::Vec<D8I> LoadCodesShift(const uint8_t* row, int64_t row_bytes, int64_t e0,
                                       int bits) {
  const hn::Rebind<uint32_t, D8> du;
  uint32_t word = 0;
  const int64_t offset = e0 * bits / 8;
  const auto first = static_cast<uint32_t>(e0 * bits % 8);
  if (offset + 4 <= row_bytes) {
    std::memcpy(&word, row + offset, 4);  // x86: little-endian
  } else {
    std::memcpy(&word, row + offset, static_cast<size_t>(row_bytes - offset));
  }
  const auto shifts = hn::Add(hn::Mul(hn::Iota(du, 0), hn::Set(du, static_cast<uint32_t>(bits))),
                              hn::Set(du, first));
  const auto codes = hn::And(hn::Shr(hn::Set(du, word), shifts), hn::Set(du, (1u << bits) - 1u));
  return hn::BitCast(D8I(), codes);
}

}  // namespace HWY_NAMESPACE
}  // namespace proctor::quant
HWY_AFTER_NAMESPACE();

#endif  // PROCTOR_QUANT_PACKED_CODES_INL_H_
