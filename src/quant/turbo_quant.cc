// TurboQuant KV cache codes (see turbo_quant.h).
#include "quant/turbo_quant.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <numbers>

#include "quant/mlx_quant.h"
#include "util/error.h"
#include "util/half.h"

namespace proctor::quant {
namespace {

double NormalPdf(double x) { return std::exp(-0.5 * x * x) / std::sqrt(2.0 * std::numbers::pi); }
double NormalCdf(double x) { return 0.5 * std::erfc(-x / std::numbers::sqrt2); }

double NormalQuantile(double p) {  // bisection: exact enough for a starting point
  double lo = -40.0, hi = 40.0;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    (NormalCdf(mid) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

// Lloyd-Max levels of N(0, 1): a Panter-Dite start (levels spaced as the density^(1/3), a normal
// of variance 3), a few Lloyd steps, then Newton's method on c - centroid(c) = 0, whose Jacobian
// is tridiagonal (a cell's centroid moves with its two boundaries only).
std::vector<double> DeriveLloydMax(int levels) {
  std::vector<double> c(static_cast<size_t>(levels));
  for (int i = 0; i < levels; ++i) {
    c[i] = std::sqrt(3.0) * NormalQuantile((i + 0.5) / levels);
  }
  constexpr double kInfinity = std::numeric_limits<double>::infinity();
  const auto boundary = [&](int i) {  // lower boundary of cell i
    if (i == 0) return -kInfinity;
    if (i == levels) return kInfinity;
    return 0.5 * (c[i - 1] + c[i]);
  };
  const auto centroid = [&](double a, double b) {
    return (NormalPdf(a) - NormalPdf(b)) / (NormalCdf(b) - NormalCdf(a));
  };
  for (int step = 0; step < 20; ++step) {
    std::vector<double> next(c.size());
    for (int i = 0; i < levels; ++i) next[i] = centroid(boundary(i), boundary(i + 1));
    c = next;
  }
  const auto n = static_cast<size_t>(levels);
  std::vector<double> lower(n), diag(n), upper(n), rhs(n);
  for (int step = 0; step < 100; ++step) {
    double worst = 0.0;
    for (int i = 0; i < levels; ++i) {
      const double a = boundary(i), b = boundary(i + 1);
      const double p = NormalCdf(b) - NormalCdf(a);
      const double m = centroid(a, b);
      // d m / d a and d m / d b; a boundary at infinity does not move.
      const double dm_da = std::isfinite(a) ? NormalPdf(a) * (m - a) / p : 0.0;
      const double dm_db = std::isfinite(b) ? NormalPdf(b) * (b - m) / p : 0.0;
      lower[i] = -0.5 * dm_da;
      diag[i] = 1.0 - 0.5 * (dm_da + dm_db);
      upper[i] = -0.5 * dm_db;
      rhs[i] = m - c[i];
      worst = std::max(worst, std::abs(rhs[i]));
    }
    if (worst < 1e-15) break;
    for (size_t i = 1; i < n; ++i) {  // Thomas algorithm
      const double f = lower[i] / diag[i - 1];
      diag[i] -= f * upper[i - 1];
      rhs[i] -= f * rhs[i - 1];
    }
    rhs[n - 1] /= diag[n - 1];
    for (size_t i = n - 1; i-- > 0;) rhs[i] = (rhs[i] - upper[i] * rhs[i + 1]) / diag[i];
    for (size_t i = 0; i < n; ++i) c[i] += rhs[i];
  }
  return c;
}

struct FloatTable {
  std::vector<float> centroids;   // f32 levels
  std::vector<float> boundaries;  // f32 midpoints, levels - 1
};

const FloatTable& Table(int bits) {
  static std::array<FloatTable, 9> tables;
  static std::array<std::once_flag, 9> once;
  std::call_once(once[static_cast<size_t>(bits)], [&] {
    const std::vector<double>& c = LloydMaxGaussian(bits);
    FloatTable& t = tables[static_cast<size_t>(bits)];
    for (size_t i = 0; i < c.size(); ++i) {
      t.centroids.push_back(static_cast<float>(c[i]));
      if (i + 1 < c.size()) t.boundaries.push_back(static_cast<float>(0.5 * (c[i] + c[i + 1])));
    }
  });
  return tables[static_cast<size_t>(bits)];
}

uint64_t SplitMix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

float InverseSqrt(int n) { return static_cast<float>(1.0 / std::sqrt(static_cast<double>(n))); }

uint16_t ToF16Checked(float value, std::string_view name, std::string_view what) {
  const uint16_t h = F32ToF16(value);
  if (!std::isfinite(F16ToF32(h))) {
    Fail("quant", "{}: a TurboQuant {} of {} is beyond fp16's range (65504)", what, name, value);
  }
  return h;
}

void CheckFinite(const float* x, int64_t n, std::string_view what) {
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) {
      Fail("quant", "{}: TurboQuant codes finite values only (element {} is {})", what, i, x[i]);
    }
  }
}

// Codes [first, first + n) of a packed stream; eight codes (`bits` bytes, little-endian) at a
// time when the range starts and ends on such a boundary (a 32-element group always does).
void Unpack(const uint8_t* packed, int64_t first, int64_t n, int bits, uint8_t* codes) {
  if (bits == 8) {
    std::copy(packed + first, packed + first + n, codes);
    return;
  }
  if (first % 8 != 0 || n % 8 != 0) {
    UnpackCodes(packed, first, n, bits, codes);
    return;
  }
  const uint64_t mask = (uint64_t{1} << bits) - 1;
  const uint8_t* p = packed + first / 8 * bits;
  for (int64_t i = 0; i < n; i += 8, p += bits) {
    uint64_t eight = 0;
    std::memcpy(&eight, p, static_cast<size_t>(bits));
    for (int j = 0; j < 8; ++j) codes[i + j] = static_cast<uint8_t>((eight >> (bits * j)) & mask);
  }
}

}  // namespace

void CheckTurboKeyBits(int bits, std::string_view what) {
  if (bits != 2 && bits != 4 && bits != 5 && bits != 8) {
    Fail("quant", "{}: TurboQuant keys take 2, 4, 5 or 8 bits (seen {})", what, bits);
  }
}

void CheckTurboValueBits(int bits, std::string_view what) {
  if (bits != 2 && bits != 3 && bits != 4 && bits != 8) {
    Fail("quant", "{}: TurboQuant values take 2, 3, 4 or 8 bits (seen {})", what, bits);
  }
}

const std::vector<double>& LloydMaxGaussian(int bits) {
  CHECK_MSG(bits >= 1 && bits <= 8, "{} bits", bits);
  static std::array<std::vector<double>, 9> tables;
  static std::array<std::once_flag, 9> once;
  std::call_once(once[static_cast<size_t>(bits)],
                 [&] { tables[static_cast<size_t>(bits)] = DeriveLloydMax(1 << bits); });
  return tables[static_cast<size_t>(bits)];
}

float TurboSign(int64_t i) {
  return (SplitMix64(kTurboSignSeed + static_cast<uint64_t>(i)) >> 63) != 0 ? -1.0f : 1.0f;
}

void FastWalshHadamard(float* x, int64_t n) {
  CHECK_MSG(n > 0 && (n & (n - 1)) == 0, "FWHT of {} elements", n);
  for (int64_t h = 1; h < n; h *= 2) {
    for (int64_t i = 0; i < n; i += 2 * h) {
      for (int64_t j = i; j < i + h; ++j) {
        const float a = x[j], b = x[j + h];
        x[j] = a + b;
        x[j + h] = a - b;
      }
    }
  }
}

void EncodeTurboKeys(const float* x, int64_t n, int bits, uint8_t* packed, uint16_t* scales,
                     uint16_t* offsets, std::string_view what) {
  CHECK(n % kTurboGroup == 0);
  CheckFinite(x, n, what);
  const float max_code = static_cast<float>((1 << bits) - 1);
  std::array<uint8_t, kTurboGroup> codes{};
  for (int64_t g = 0; g < n / kTurboGroup; ++g) {
    const float* v = x + g * kTurboGroup;
    const auto [lo, hi] = std::minmax_element(v, v + kTurboGroup);
    scales[g] = ToF16Checked((*hi - *lo) / max_code, "key scale", what);
    offsets[g] = ToF16Checked(*lo, "key offset", what);
    const float scale = F16ToF32(scales[g]), offset = F16ToF32(offsets[g]);
    for (int j = 0; j < kTurboGroup; ++j) {
      const float q = scale > 0.0f ? std::nearbyint((v[j] - offset) / scale) : 0.0f;
      codes[static_cast<size_t>(j)] = static_cast<uint8_t>(std::clamp(q, 0.0f, max_code));
    }
    PackCodes(codes.data(), kTurboGroup, bits, packed + g * kTurboGroup * bits / 8);
  }
}

void EncodeTurboValues(const float* x, int64_t n, int head_dim, int bits, uint8_t* packed,
                       uint16_t* scales, std::string_view what) {
  CHECK(head_dim >= kTurboGroup && (head_dim & (head_dim - 1)) == 0 && n % head_dim == 0);
  CheckFinite(x, n, what);
  const FloatTable& table = Table(bits);
  const float inverse_sqrt = InverseSqrt(head_dim);
  std::vector<float> y(static_cast<size_t>(head_dim));
  std::array<uint8_t, kTurboGroup> codes{};
  for (int64_t h0 = 0; h0 < n; h0 += head_dim) {
    for (int i = 0; i < head_dim; ++i) y[i] = x[h0 + i] * TurboSign(i);
    FastWalshHadamard(y.data(), head_dim);
    for (float& e : y) e *= inverse_sqrt;
    for (int g0 = 0; g0 < head_dim; g0 += kTurboGroup) {
      const float* v = y.data() + g0;
      double sum_squares = 0.0;
      for (int j = 0; j < kTurboGroup; ++j) sum_squares += static_cast<double>(v[j]) * v[j];
      const auto rms = static_cast<float>(std::sqrt(sum_squares / kTurboGroup));
      const int64_t g = (h0 + g0) / kTurboGroup;
      scales[g] = ToF16Checked(rms, "value scale", what);
      const float scale = F16ToF32(scales[g]);
      for (int j = 0; j < kTurboGroup; ++j) {
        const float z = scale > 0.0f ? v[j] / scale : 0.0f;
        codes[static_cast<size_t>(j)] = static_cast<uint8_t>(
            std::lower_bound(table.boundaries.begin(), table.boundaries.end(), z) -
            table.boundaries.begin());
      }
      PackCodes(codes.data(), kTurboGroup, bits, packed + g * kTurboGroup * bits / 8);
    }
  }
}

void DecodeTurboRowSegment(const TurboRows& m, int64_t row, int64_t k0, int64_t len, float* out) {
  CHECK_MSG(k0 % kTurboGroup == 0 && len % kTurboGroup == 0 && k0 + len <= m.cols(),
            "segment {}+{} of {}", k0, len, m.cols());
  const uint8_t* packed = m.packed.Row(row);
  const auto* scales = reinterpret_cast<const uint16_t*>(m.scales.Row(row));
  const float* centroids = m.part == TurboPart::kValues ? Table(m.bits).centroids.data() : nullptr;
  const auto* offsets =
      m.part == TurboPart::kKeys ? reinterpret_cast<const uint16_t*>(m.offsets.Row(row)) : nullptr;
  std::array<uint8_t, kTurboGroup> codes{};
  for (int64_t g = k0 / kTurboGroup; g < (k0 + len) / kTurboGroup; ++g) {
    Unpack(packed, g * kTurboGroup, kTurboGroup, m.bits, codes.data());
    float* o = out + (g * kTurboGroup - k0);
    const float scale = F16ToF32(scales[g]);
    if (offsets != nullptr) {
      const float offset = F16ToF32(offsets[g]);
      for (int j = 0; j < kTurboGroup; ++j) o[j] = scale * static_cast<float>(codes[j]) + offset;
    } else {
      for (int j = 0; j < kTurboGroup; ++j) o[j] = scale * centroids[codes[j]];
    }
  }
}

namespace internal {
const float* TurboValueLevels(int bits) {
  CheckTurboValueBits(bits, "TurboQuant values");
  return Table(bits).centroids.data();
}
}  // namespace internal

void RotateBackTurboValues(float* y, int head_dim) {
  FastWalshHadamard(y, head_dim);
  const float inverse_sqrt = InverseSqrt(head_dim);
  for (int i = 0; i < head_dim; ++i) y[i] = y[i] * inverse_sqrt * TurboSign(i);
}

void DecodeTurboHead(const TurboRows& m, int64_t row, int head, int head_dim, float* out) {
  DecodeTurboRowSegment(m, row, static_cast<int64_t>(head) * head_dim, head_dim, out);
  if (m.part == TurboPart::kValues) RotateBackTurboValues(out, head_dim);
}

}  // namespace proctor::quant
