// IEEE binary16 (fp16) and bfloat16 <-> float32 conversions, scalar and exact.
//
// Encoding rounds to nearest, ties to even, keeps NaN a NaN (quiet), and handles subnormals and
// infinities. SIMD bulk versions live in ops/; these are the reference.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <span>

namespace proctor {

inline float F16ToF32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu;
  uint32_t mantissa = h & 0x3FFu;
  uint32_t bits;
  if (exponent == 0x1F) {  // inf or NaN: keep the payload, force quiet
    bits = sign | 0x7F800000u | (mantissa << 13) | (mantissa ? 0x00400000u : 0u);
  } else if (exponent != 0) {  // normal
    bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {  // signed zero
    bits = sign;
  } else {  // subnormal: normalise
    uint32_t e = 113;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --e;
    }
    bits = sign | (e << 23) | ((mantissa & 0x3FFu) << 13);
  }
  return std::bit_cast<float>(bits);
}

// The fp16 value stored (little-endian, unaligned) at p, as float.
inline float F16At(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return F16ToF32(h);
}

inline uint16_t F32ToF16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t abs = bits & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) {  // NaN: quiet, keep the top payload bits
    return static_cast<uint16_t>(sign | 0x7E00u | ((abs >> 13) & 0x3FFu));
  }
  if (abs >= 0x477FF000u) {  // rounds to >= 65520: infinity
    return static_cast<uint16_t>(sign | 0x7C00u);
  }
  if (abs < 0x38800000u) {  // below the smallest normal fp16 (2^-14): subnormal or zero
    // Scale into units of 2^-24 using float arithmetic, which rounds to nearest even exactly.
    const float scaled = std::bit_cast<float>(abs) * 16777216.0f;  // * 2^24
    // For abs < 2^-14, scaled < 1024, so an integer conversion after rint is exact.
    const float rounded = __builtin_rintf(scaled);
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(rounded));
  }
  // Normal: rebias the exponent and round the 13 dropped mantissa bits to nearest even.
  const uint32_t rebiased = abs - 0x38000000u;  // exponent bias 127 -> 15
  const uint32_t lsb = (rebiased >> 13) & 1u;
  const uint32_t rounded = rebiased + 0xFFFu + lsb;
  return static_cast<uint16_t>(sign | (rounded >> 13));
}

inline float BF16ToF32(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

inline uint16_t F32ToBF16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) {  // NaN stays NaN (quiet)
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  }
  const uint32_t lsb = (bits >> 16) & 1u;
  return static_cast<uint16_t>((bits + 0x7FFFu + lsb) >> 16);
}

// Rounds a float to the nearest fp16 value (as a float).
inline float RoundToF16(float f) { return F16ToF32(F32ToF16(f)); }
inline float RoundToBF16(float f) { return BF16ToF32(F32ToBF16(f)); }

}  // namespace proctor
