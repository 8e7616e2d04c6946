// Highway helpers shared by the kernels that read little-endian bit streams of small codes (MLX
// affine rows, mlx_quant_simd.cc; TurboQuant rows, turbo_quant_simd.cc; both as attention reads
// them, ops/attention_rows.cc): up to eight codes at a
// time as int32 lanes. 8-bit codes are bytes; 2-, 3- and 4-bit codes (code i at stream bits [i *
// bits, i * bits + bits), LSB first) are read with one small load and shifted per lane. Codes
// that index a table of at most 16 levels (TurboQuant values) are looked up in registers.
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
// codes in one row: the bytes holding them (4 bytes read where the row has them: bits past the
// last code are masked off), one little-endian word broadcast to the lanes and shifted right by s,
// s + bits, ... where s = (e0 * bits) % 8. With 8 lanes (every x86 target) s is 0 and the eight
// codes fill exactly `bits` bytes; with fewer lanes (EMU128: 4, SCALAR: 1) s + Lanes * bits stays
// under 32. Made once per row: the shifts and the mask are the row's constants.
class ShiftedCodes {
 public:
  ShiftedCodes(const uint8_t* row, int64_t row_bytes, int bits)
      : row_(row),
        row_bytes_(static_cast<uint64_t>(row_bytes)),
        bits_(static_cast<uint64_t>(bits)),
        shifts_(hn::Mul(hn::Iota(DU(), 0), hn::Set(DU(), static_cast<uint32_t>(bits)))),
        mask_(hn::Set(DU(), (1u << bits) - 1u)) {}

  HWY_INLINE hn::Vec<D8I> operator()(int64_t e0) const {
    const uint64_t bit = static_cast<uint64_t>(e0) * bits_;
    const uint64_t offset = bit >> 3;
    uint32_t word = 0;
    if (HWY_LIKELY(offset + 4 <= row_bytes_)) {
      std::memcpy(&word, row_ + offset, 4);  // x86: little-endian
    } else {
      std::memcpy(&word, row_ + offset, static_cast<size_t>(row_bytes_ - offset));
    }
    auto shifts = shifts_;
    if constexpr (hn::MaxLanes(D8()) < 8) {
      shifts = hn::Add(shifts, hn::Set(DU(), static_cast<uint32_t>(bit & 7)));
    }
    return hn::BitCast(D8I(), hn::And(hn::Shr(hn::Set(DU(), word), shifts), mask_));
  }

 private:
  using DU = hn::Rebind<uint32_t, D8>;
  const uint8_t* row_;
  uint64_t row_bytes_, bits_;
  hn::Vec<DU> shifts_, mask_;
};

// One load of ShiftedCodes, for a caller that reads a single vector of a row.
HWY_INLINE hn::Vec<D8I> LoadCodesShift(const uint8_t* row, int64_t row_bytes, int64_t e0,
                                       int bits) {
  return ShiftedCodes(row, row_bytes, bits)(e0);
}

// levels[code] for the codes of a load (at most 16 levels): where D8 has 8 lanes (AVX2, AVX-512)
// an in-register permute of the levels (vpermps), two and a select for 4-bit codes, else a gather.
class LevelLookup {
 public:
  LevelLookup(const float* levels, int bits) : levels_(levels), eight_levels_(bits <= 3) {
    if constexpr (hn::MaxLanes(D8()) == 8) {
      HWY_ALIGN float table[16] = {};
      std::memcpy(table, levels, sizeof(float) << bits);
      lo_ = hn::Load(D8(), table);
      hi_ = hn::Load(D8(), table + 8);
    }
  }
  HWY_INLINE hn::Vec<D8> operator()(hn::Vec<D8I> codes) const {
    if constexpr (hn::MaxLanes(D8()) == 8) {
      const D8 d;
      if (eight_levels_) return hn::TableLookupLanes(lo_, hn::IndicesFromVec(d, codes));
      const auto index = hn::IndicesFromVec(d, hn::And(codes, hn::Set(D8I(), 7)));
      const auto high = hn::RebindMask(d, hn::Gt(codes, hn::Set(D8I(), 7)));
      return hn::IfThenElse(high, hn::TableLookupLanes(hi_, index),
                            hn::TableLookupLanes(lo_, index));
    } else {
      return hn::GatherIndex(D8(), levels_, codes);
    }
  }

 private:
  const float* levels_;
  bool eight_levels_;  // codes of at most 3 bits: one permute
  hn::Vec<D8> lo_, hi_;
};

}  // namespace HWY_NAMESPACE
}  // namespace proctor::quant
HWY_AFTER_NAMESPACE();

#endif  // PROCTOR_QUANT_PACKED_CODES_INL_H_
