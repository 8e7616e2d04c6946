// MLX quantization: parameters, validation, bit packing, element encodings, MLX's CPU quantizers
// and the scalar reference decoders (see mlx_quant.h). The SIMD kernels are in
// mlx_quant_simd.cc.
#include "quant/mlx_quant.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "util/error.h"
#include "util/half.h"

namespace proctor::quant {

std::string_view MlxModeName(MlxMode mode) {
  switch (mode) {
    case MlxMode::kAffine:
      return "affine";
    case MlxMode::kMxfp4:
      return "mxfp4";
    case MlxMode::kMxfp8:
      return "mxfp8";
    case MlxMode::kNvfp4:
      return "nvfp4";
  }
  return "?";
}

std::optional<MlxMode> ParseMlxMode(std::string_view name) {
  for (MlxMode mode : {MlxMode::kAffine, MlxMode::kMxfp4, MlxMode::kMxfp8, MlxMode::kNvfp4}) {
    if (MlxModeName(mode) == name) return mode;
  }
  return std::nullopt;
}

void CheckMlxParams(MlxMode mode, int bits, int group_size, std::string_view what) {
  switch (mode) {
    case MlxMode::kAffine: {
      const bool bits_ok =
          bits == 2 || bits == 3 || bits == 4 || bits == 5 || bits == 6 || bits == 8;
      const bool group_ok = group_size == 32 || group_size == 64 || group_size == 128;
      if (!bits_ok || !group_ok) {
        Fail("quant",
             "{}: affine quantization with bits {} and group size {}; expected bits in "
             "{{2, 3, 4, 5, 6, 8}} and group size in {{32, 64, 128}}",
             what, bits, group_size);
      }
      return;
    }
    case MlxMode::kMxfp4:
    case MlxMode::kMxfp8:
    case MlxMode::kNvfp4: {
      const int want_bits = mode == MlxMode::kMxfp8 ? 8 : 4;
      const int want_group = mode == MlxMode::kNvfp4 ? 16 : 32;
      if (bits != want_bits || group_size != want_group) {
        Fail("quant", "{}: {} quantization with bits {} and group size {}; expected {} and {}",
             what, MlxModeName(mode), bits, group_size, want_bits, want_group);
      }
      return;
    }
  }
  Fail("quant", "{}: unknown quantization mode {}", what, static_cast<int>(mode));
}

void ValidateMlxMatrix(const MlxQuantizedMatrix& m, std::string_view what) {
  CheckMlxParams(m.mode, m.bits, m.group_size, what);
  if (m.packed.type != DType::kU32) {
    Fail("quant", "{}: packed weight has dtype {}; expected u32", what, Name(m.packed.type));
  }
  const int64_t cols = m.cols();
  if (m.packed.cols * 32 % m.bits != 0 || cols % m.group_size != 0) {
    Fail("quant",
         "{}: packed weight has {} u32 words per row ({} bits each): not a whole number of "
         "groups of {}",
         what, m.packed.cols, m.bits, m.group_size);
  }
  const int64_t groups = cols / m.group_size;
  const bool affine = m.mode == MlxMode::kAffine;
  const auto check_side = [&](const MatView& v, const char* name) {
    if (v.rows != m.packed.rows || v.cols != groups) {
      Fail("quant", "{}: {} have shape [{}, {}]; expected [{}, {}] ({} columns / group size {})",
           what, name, v.rows, v.cols, m.packed.rows, groups, cols, m.group_size);
    }
    const bool type_ok =
        affine ? (v.type == DType::kF32 || v.type == DType::kF16 || v.type == DType::kBF16)
               : v.type == DType::kU8;
    if (!type_ok) {
      Fail("quant", "{}: {} have dtype {}; expected {}", what, name, Name(v.type),
           affine ? "f32, f16 or bf16" : "u8");
    }
  };
  check_side(m.scales, "scales");
  if (affine) {
    check_side(m.biases, "biases");
    if (m.biases.type != m.scales.type) {
      Fail("quant", "{}: biases have dtype {} but scales {}; expected the same", what,
           Name(m.biases.type), Name(m.scales.type));
    }
  } else if (m.biases.rows != 0) {
    Fail("quant", "{}: {} quantization has no biases, but a biases tensor was given", what,
         MlxModeName(m.mode));
  }
}

void PackCodes(const uint8_t* codes, int64_t n, int bits, uint8_t* packed) {
  CHECK_MSG(n * bits % 8 == 0, "{} codes of {} bits are not whole bytes", n, bits);
  std::memset(packed, 0, static_cast<size_t>(n * bits / 8));
  for (int64_t i = 0; i < n; ++i) {
    CHECK_MSG(codes[i] < (1u << bits), "code {} does not fit {} bits", codes[i], bits);
    for (int b = 0; b < bits; ++b) {
      const int64_t bit = i * bits + b;
      packed[bit / 8] |= static_cast<uint8_t>(((codes[i] >> b) & 1) << (bit % 8));
    }
  }
}

void UnpackCodes(const uint8_t* packed, int64_t first, int64_t n, int bits, uint8_t* codes) {
  for (int64_t i = 0; i < n; ++i) {
    int code = 0;
    for (int b = 0; b < bits; ++b) {
      const int64_t bit = (first + i) * bits + b;
      code |= ((packed[bit / 8] >> (bit % 8)) & 1) << b;
    }
    codes[i] = static_cast<uint8_t>(code);
  }
}

float DecodeE2M1(uint8_t code) {
  static constexpr float kMagnitudes[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  const float magnitude = kMagnitudes[code & 7];
  return (code & 8) ? -magnitude : magnitude;
}

float DecodeE4M3(uint8_t code) {
  const int exponent = (code >> 3) & 15, mantissa = code & 7;
  float magnitude;
  if (exponent == 15 && mantissa == 7) {
    magnitude = std::numeric_limits<float>::quiet_NaN();
  } else if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), -9);
  } else {
    magnitude = std::ldexp(static_cast<float>(8 + mantissa), exponent - 10);
  }
  return (code & 0x80) ? -magnitude : magnitude;
}

float DecodeE8M0(uint8_t code) {
  if (code == 255) return std::numeric_limits<float>::infinity();
  return std::ldexp(1.0f, code - 127);  // code 0: 2^-127 (an f32 subnormal), as MLX decodes it
}

uint8_t EncodeE2M1(float x) {
  if (std::isnan(x)) return 0x7;
  const uint8_t sign = std::signbit(x) ? 0x8 : 0x0;
  const float a = std::fabs(x);
  uint8_t bits;
  if (a > 5.0f) {
    bits = 7;
  } else if (a >= 3.5f) {
    bits = 6;
  } else if (a > 2.5f) {
    bits = 5;
  } else if (a >= 1.75f) {
    bits = 4;
  } else if (a > 1.25f) {
    bits = 3;
  } else if (a >= 0.75f) {
    bits = 2;
  } else if (a > 0.25f) {
    bits = 1;
  } else {
    bits = 0;
  }
  return bits | sign;
}

uint8_t EncodeE4M3(float x) {
  const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  const float a = std::fabs(x);
  if (!(a < 448.0f)) return sign | 0x7E;  // saturate (NaN too, as MLX does)
  if (a < 0x1p-6f) {                      // subnormal: multiples of 2^-9, nearest even
    return sign | static_cast<uint8_t>(std::nearbyint(a * 0x1p9f));
  }
  int exponent;
  const float mantissa = std::frexp(a, &exponent);  // a = mantissa * 2^exponent, [0.5, 1)
  int scaled = static_cast<int>(std::nearbyint(mantissa * 16.0f));  // 8..16, nearest even
  int biased = exponent - 1 + 7;
  if (scaled == 16) {
    scaled = 8;
    ++biased;
  }
  return sign | static_cast<uint8_t>((biased << 3) | (scaled - 8));
}

uint8_t EncodeE8M0(float x) {
  if (!std::isfinite(x)) return 0xFF;
  if (!(x > 0.0f)) return 0x00;
  const int n = std::clamp(static_cast<int>(std::round(std::log2(x))), -127, 127);
  return static_cast<uint8_t>(n + 127);
}

MlxQuantizedMatrix MlxQuantizedTensor::View() const {
  const auto view = [](const Tensor& t) {
    return t.rows() == 0
               ? MatView{t.type(), 0, 0, 0, nullptr}
               : MatView{t.type(), t.rows(), t.cols(), BytesFor(t.type(), t.cols()), t.bytes()};
  };
  return MlxQuantizedMatrix{mode, bits, group_size, view(packed), view(scales), view(biases)};
}

namespace {

uint16_t StoreHalf(DType type, float v) { return type == DType::kF16 ? F32ToF16(v) : F32ToBF16(v); }

// x rounded to nearest-even in `type` (f16 or bf16; f32 and anything else: x itself): MLX
// evaluates every op of its mx/nv quantizer in the weights' dtype, rounding each result.
float RoundTo(DType type, float x) {
  if (type == DType::kF16) return F16ToF32(F32ToF16(x));
  if (type == DType::kBF16) return BF16ToF32(F32ToBF16(x));
  return x;
}

// MLX's ToFP8 of an f32 value (what its E4M3 encodings are): EncodeE4M3.
// The E2M1 code of x as MLX picks it: the first index k of minimal |x - E2M1(k)| over the codes
// in order 0..15 (+0, 0.5, ..., 6, -0, -0.5, ..., -6), the difference computed in `type`. So ties
// go to the smaller magnitude and small negatives to +0; all-NaN differences give 0.
uint8_t ArgminE2M1(float x, DType type) {
  const float* table = internal::E2M1Table();
  uint8_t best = 0;
  float best_diff = RoundTo(type, std::fabs(RoundTo(type, x - table[0])));
  for (uint8_t k = 1; k < 16; ++k) {
    const float diff = RoundTo(type, std::fabs(RoundTo(type, x - table[k])));
    if (diff < best_diff) {
      best = k;
      best_diff = diff;
    }
  }
  return best;
}

// One mx/nv group of `n` weights as MLX's CPU quantizer (mlx 0.32.4 `fp_quantize`) computes it
// in the weights' dtype `type`: s = max|w| / (6 or 448), rounded to `type`. mxfp4/mxfp8: the
// E8M0 exponent e is the exponent of s rounded up (0 when s == 0), q = w / 2^e in `type`, coded
// by ArgminE2M1 (differences in `type`) or E4M3. nvfp4: the E4M3 code of s, q = w / E4M3(code)
// in `type`, coded by ArgminE2M1 with f32 differences. Writes the codes, returns the scale code.
uint8_t QuantizeFpGroup(const float* w, int n, MlxMode mode, DType type, uint8_t* codes) {
  const int bits = mode == MlxMode::kMxfp8 ? 8 : 4;
  float amax = 0.0f;
  for (int j = 0; j < n; ++j) amax = std::max(amax, std::fabs(w[j]));
  const float s = RoundTo(type, amax / (bits == 4 ? 6.0f : 448.0f));
  float divisor;
  uint8_t scale_code;
  if (mode == MlxMode::kNvfp4) {
    scale_code = EncodeE4M3(s);
    divisor = RoundTo(type, DecodeE4M3(scale_code));
  } else {
    uint32_t s_bits;
    std::memcpy(&s_bits, &s, 4);
    const int e = s == 0.0f ? 0 : static_cast<int>((s_bits + 0x7FFFFFu) >> 23) - 127;
    scale_code = static_cast<uint8_t>(e + 127);
    divisor = RoundTo(type, std::ldexp(1.0f, e));
  }
  const DType diff_type = mode == MlxMode::kNvfp4 ? DType::kF32 : type;
  for (int j = 0; j < n; ++j) {
    const float q = RoundTo(type, w[j] / divisor);
    codes[j] = bits == 4 ? ArgminE2M1(q, diff_type) : EncodeE4M3(q);
  }
  return scale_code;
}

void StoreScale(Tensor& t, int64_t index, float v) {
  if (t.type() == DType::kF32) {
    std::memcpy(t.bytes() + index * 4, &v, 4);
  } else {
    const uint16_t h = StoreHalf(t.type(), v);
    std::memcpy(t.bytes() + index * 2, &h, 2);
  }
}

}  // namespace

MlxQuantizedTensor QuantizeMlx(const float* w, int64_t rows, int64_t cols, MlxMode mode, int bits,
                               int group_size, DType dtype) {
  CheckMlxParams(mode, bits, group_size, "QuantizeMlx");
  if (cols <= 0 || cols % group_size != 0 || cols * bits % 32 != 0) {
    Fail("quant", "QuantizeMlx: {} columns are not a whole number of groups of {} ({} bits)", cols,
         group_size, bits);
  }
  const bool affine = mode == MlxMode::kAffine;
  if (dtype != DType::kF32 && dtype != DType::kF16 && dtype != DType::kBF16) {
    Fail("quant", "QuantizeMlx: weights dtype {}; expected f32, f16 or bf16", Name(dtype));
  }
  const int64_t groups = cols / group_size;
  MlxQuantizedTensor out;
  out.mode = mode;
  out.bits = bits;
  out.group_size = group_size;
  out.packed = Tensor(DType::kU32, rows, cols * bits / 32);
  out.scales = Tensor(affine ? dtype : DType::kU8, rows, groups);
  if (affine) out.biases = Tensor(dtype, rows, groups);
  std::vector<uint8_t> codes(static_cast<size_t>(cols));
  const float n_bins = static_cast<float>((1 << bits) - 1);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t g = 0; g < groups; ++g) {
      const float* wg = w + r * cols + g * group_size;
      uint8_t* cg = codes.data() + g * group_size;
      if (affine) {
        float lo = std::numeric_limits<float>::infinity(), hi = -lo;
        for (int j = 0; j < group_size; ++j) {
          lo = std::min(lo, wg[j]);
          hi = std::max(hi, wg[j]);
        }
        const bool low_is_edge = std::fabs(lo) > std::fabs(hi);
        float scale = std::max((hi - lo) / n_bins, 1e-7f);
        scale = low_is_edge ? scale : -scale;
        const float edge = low_is_edge ? lo : hi;
        const float q0 = std::rint(edge / scale);
        float bias = 0.0f;
        if (q0 != 0.0f) {
          scale = edge / q0;
          bias = edge;
        }
        for (int j = 0; j < group_size; ++j) {
          const float q = std::min(std::max(std::rint((wg[j] - bias) / scale), 0.0f), n_bins);
          cg[j] = static_cast<uint8_t>(q);
        }
        StoreScale(out.scales, r * groups + g, scale);
        StoreScale(out.biases, r * groups + g, bias);
      } else {
        out.scales.bytes()[r * groups + g] = QuantizeFpGroup(wg, group_size, mode, dtype, cg);
      }
    }
    PackCodes(codes.data(), cols, bits, out.packed.bytes() + r * (cols * bits / 8));
  }
  return out;
}

namespace {

float ScaleAt(const MatView& v, int64_t row, int64_t g) {  // affine scales / biases
  return FloatElement(v.type, v.Row(row), g);
}

}  // namespace

namespace internal {

void CheckMlxSegment(const MlxQuantizedMatrix& m, int64_t row, int64_t k0, int64_t len) {
  CHECK_MSG(0 <= row && row < m.rows(), "row {} of {}", row, m.rows());
  CHECK_MSG(0 <= k0 && 0 <= len && k0 + len <= m.cols(), "segment [{}, {}) of {} columns", k0,
            k0 + len, m.cols());
  CHECK_MSG(k0 % m.group_size == 0 && len % m.group_size == 0,
            "segment [{}, {}) is not whole groups of {}", k0, k0 + len, m.group_size);
}

float MlxGroupScale(const MlxQuantizedMatrix& m, int64_t row, int64_t g) {
  if (m.mode == MlxMode::kAffine) return ScaleAt(m.scales, row, g);
  const uint8_t code = m.scales.Row(row)[g];
  return m.mode == MlxMode::kNvfp4 ? DecodeE4M3(code) : DecodeE8M0(code);
}

float MlxGroupBias(const MlxQuantizedMatrix& m, int64_t row, int64_t g) {
  return m.mode == MlxMode::kAffine ? ScaleAt(m.biases, row, g) : 0.0f;
}

const float* E2M1Table() {
  static const auto table = [] {
    std::array<float, 16> t;
    for (int c = 0; c < 16; ++c) t[c] = DecodeE2M1(static_cast<uint8_t>(c));
    return t;
  }();
  return table.data();
}

const float* E4M3Table() {
  static const auto table = [] {
    std::array<float, 256> t;
    for (int c = 0; c < 256; ++c) t[c] = DecodeE4M3(static_cast<uint8_t>(c));
    return t;
  }();
  return table.data();
}

}  // namespace internal

void DecodeMlxRowSegmentRef(const MlxQuantizedMatrix& m, int64_t row, int64_t k0, int64_t len,
                            float* out) {
  internal::CheckMlxSegment(m, row, k0, len);
  std::vector<uint8_t> codes(static_cast<size_t>(m.group_size));
  for (int64_t g = k0 / m.group_size; g < (k0 + len) / m.group_size; ++g) {
    UnpackCodes(m.packed.Row(row), g * m.group_size, m.group_size, m.bits, codes.data());
    float* o = out + (g * m.group_size - k0);
    switch (m.mode) {
      case MlxMode::kAffine: {
        const float scale = ScaleAt(m.scales, row, g), bias = ScaleAt(m.biases, row, g);
        for (int j = 0; j < m.group_size; ++j) o[j] = scale * static_cast<float>(codes[j]) + bias;
        break;
      }
      case MlxMode::kMxfp4:
      case MlxMode::kMxfp8:
      case MlxMode::kNvfp4: {
        const uint8_t code = m.scales.Row(row)[g];
        const float scale = m.mode == MlxMode::kNvfp4 ? DecodeE4M3(code) : DecodeE8M0(code);
        for (int j = 0; j < m.group_size; ++j) {
          o[j] = scale * (m.bits == 4 ? DecodeE2M1(codes[j]) : DecodeE4M3(codes[j]));
        }
        break;
      }
    }
  }
}

float DotMlxRowRef(const MlxQuantizedMatrix& m, int64_t row, const float* x) {
  std::vector<float> values(static_cast<size_t>(m.cols()));
  DecodeMlxRowSegmentRef(m, row, 0, m.cols(), values.data());
  float sum = 0.0f;
  for (size_t k = 0; k < values.size(); ++k) sum += values[k] * x[k];
  return sum;
}

}  // namespace proctor::quant
