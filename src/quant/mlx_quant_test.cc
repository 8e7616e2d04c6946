// MLX quantization: FORMATS.md's packing examples, hand-worked groups, element encodings against
// brute-force nearest-value searches, quantize -> pack -> unpack -> dequantize round trips with
// their error bounds for every bits / group size / scale dtype, SIMD against the scalar
// references, and validation errors.
#include "quant/mlx_quant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "quant/test_blocks.h"
#include "util/error.h"
#include "util/half.h"

namespace proctor::quant {
namespace {

std::vector<uint8_t> Pack(const std::vector<uint8_t>& codes, int bits) {
  std::vector<uint8_t> packed(codes.size() * bits / 8);
  PackCodes(codes.data(), static_cast<int64_t>(codes.size()), bits, packed.data());
  return packed;
}

TEST(MlxPacking, FormatsDocWorkedExamples) {
  const auto four = Pack({0, 4, 7, 11, 13, 15, 12, 9}, 4);
  EXPECT_EQ(four, (std::vector<uint8_t>{0x40, 0xB7, 0xFD, 0x9C}));
  uint32_t word;
  std::memcpy(&word, four.data(), 4);
  EXPECT_EQ(word, 0x9CFDB740u);
  EXPECT_EQ(Pack({1, 2, 3, 4, 5, 6, 7, 0}, 3), (std::vector<uint8_t>{0xD1, 0x58, 0x1F}));
  EXPECT_EQ(Pack({1, 2, 3, 63}, 6), (std::vector<uint8_t>{0x81, 0x30, 0xFC}));
  // 5 bits, worked by hand: code 0 = 31 -> bits 0-4; code 2 = 1 -> bit 10; code 7 = 16 -> bit 39.
  EXPECT_EQ(Pack({31, 0, 1, 0, 0, 0, 0, 16}, 5),
            (std::vector<uint8_t>{0x1F, 0x04, 0x00, 0x00, 0x80}));
  EXPECT_EQ(Pack({3, 0, 1, 2}, 2), (std::vector<uint8_t>{0x93}));
  EXPECT_EQ(Pack({0xAB, 0x01}, 8), (std::vector<uint8_t>{0xAB, 0x01}));
  uint8_t codes[8];
  const std::vector<uint8_t> three = {0xD1, 0x58, 0x1F};
  UnpackCodes(three.data(), 0, 8, 3, codes);
  EXPECT_EQ(std::vector<uint8_t>(codes, codes + 8), (std::vector<uint8_t>{1, 2, 3, 4, 5, 6, 7, 0}));
  UnpackCodes(three.data(), 5, 2, 3, codes);  // codes straddling byte 1 -> 2 and inside byte 2
  EXPECT_EQ(codes[0], 6);
  EXPECT_EQ(codes[1], 7);
}

TEST(MlxPacking, RandomCodesRoundTripForEveryWidth) {
  std::mt19937 rng(4);
  for (int bits : {2, 3, 4, 5, 6, 8}) {
    std::vector<uint8_t> codes(96);
    for (auto& c : codes) c = static_cast<uint8_t>(rng() & ((1u << bits) - 1));
    const auto packed = Pack(codes, bits);
    std::vector<uint8_t> back(codes.size());
    UnpackCodes(packed.data(), 0, static_cast<int64_t>(codes.size()), bits, back.data());
    EXPECT_EQ(back, codes) << bits << " bits";
    UnpackCodes(packed.data(), 37, 11, bits, back.data());
    EXPECT_TRUE(std::equal(back.begin(), back.begin() + 11, codes.begin() + 37)) << bits;
  }
}

// One affine group decoded through the public views: the FORMATS.md word in the first column.
TEST(MlxAffine, HandWorkedDequantization) {
  Tensor packed(DType::kU32, 1, 4), scales(DType::kBF16, 1, 1), biases(DType::kBF16, 1, 1);
  const uint32_t word = 0x9CFDB740u;  // codes 0 4 7 11 13 15 12 9
  std::memcpy(packed.bytes(), &word, 4);
  const uint16_t scale = F32ToBF16(0.5f), bias = F32ToBF16(-1.0f);
  std::memcpy(scales.bytes(), &scale, 2);
  std::memcpy(biases.bytes(), &bias, 2);
  const MlxQuantizedMatrix m{MlxMode::kAffine,
                             4,
                             32,
                             MatView{DType::kU32, 1, 4, 16, packed.bytes()},
                             MatView{DType::kBF16, 1, 1, 2, scales.bytes()},
                             MatView{DType::kBF16, 1, 1, 2, biases.bytes()}};
  ValidateMlxMatrix(m, "test");
  float ref[32], fast[32];
  DecodeMlxRowSegmentRef(m, 0, 0, 32, ref);
  DecodeMlxRowSegment(m, 0, 0, 32, fast);
  const float expected[8] = {-1.0f, 1.0f, 2.5f, 4.5f, 5.5f, 6.5f, 5.0f, 3.5f};
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(ref[i], expected[i]) << i;
    EXPECT_EQ(fast[i], expected[i]) << i;
  }
  for (int i = 8; i < 32; ++i) EXPECT_EQ(ref[i], -1.0f) << i;
}

// MLX's rule, worked by hand: lo = -1.06 is the edge (|lo| > |hi|); scale0 = 1.5 / 15 = 0.1,
// q0 = rint(-10.6) = -11, so scale = -1.06 / -11 ~ 0.0963636 and bias = -1.06 (exact). hi = 0.44
// needs 15.57 steps and clamps to 15: it lands 0.0545 low, more than scale / 2 but under scale.
TEST(MlxAffine, HandWorkedQuantizerKeepsTheEdgeExact) {
  std::vector<float> w(32, 0.0f);
  w[0] = -1.06f;
  w[1] = 0.44f;
  const MlxQuantizedTensor q = QuantizeMlx(w.data(), 1, 32, MlxMode::kAffine, 4, 32);
  float scale, bias;
  std::memcpy(&scale, q.scales.bytes(), 4);
  std::memcpy(&bias, q.biases.bytes(), 4);
  EXPECT_EQ(bias, -1.06f);
  EXPECT_EQ(scale, -1.06f / -11.0f);
  uint8_t codes[32];
  UnpackCodes(q.packed.bytes(), 0, 32, 4, codes);
  EXPECT_EQ(codes[0], 0);
  EXPECT_EQ(codes[1], 15);
  EXPECT_EQ(codes[2], 11);  // 1.06 / 0.0963636 = 11.0
  float out[32];
  DecodeMlxRowSegmentRef(q.View(), 0, 0, 32, out);
  EXPECT_EQ(out[0], -1.06f);
  EXPECT_NEAR(out[1], 15 * scale + bias, 1e-6);
  EXPECT_GT(std::fabs(out[1] - w[1]), scale / 2);
  EXPECT_LT(std::fabs(out[1] - w[1]), scale);
  // The other orientation: the maximum is the edge and the scale is negative.
  for (float& v : w) v = -v;
  const MlxQuantizedTensor neg = QuantizeMlx(w.data(), 1, 32, MlxMode::kAffine, 4, 32);
  std::memcpy(&scale, neg.scales.bytes(), 4);
  std::memcpy(&bias, neg.biases.bytes(), 4);
  EXPECT_EQ(bias, 1.06f);
  EXPECT_LT(scale, 0.0f);
}

float StorageStep(DType type) {  // max relative rounding of a stored scale / bias
  return type == DType::kF32 ? 0.0f : type == DType::kF16 ? 0x1p-11f : 0x1p-8f;
}

// quantize -> pack -> unpack -> dequantize for every bits x group size x scale dtype.
// Bound per element: |scale| / 2 inside the code range, |scale| for the clamped end codes, plus
// the storage rounding of scale and bias (n_bins * |d scale| + |d bias|) and f32 slack.
TEST(MlxAffine, RoundTripWithinTheRuleBounds) {
  const int64_t rows = 3, cols = 384;
  const auto w = testing::RandomWeights(rows * cols, 21);
  for (DType scale_type : {DType::kF32, DType::kF16, DType::kBF16}) {
    for (int bits : {2, 3, 4, 5, 6, 8}) {
      for (int group : {32, 64, 128}) {
        const MlxQuantizedTensor q =
            QuantizeMlx(w.data(), rows, cols, MlxMode::kAffine, bits, group, scale_type);
        const MlxQuantizedMatrix m = q.View();
        ValidateMlxMatrix(m, "round trip");
        ASSERT_EQ(m.cols(), cols);
        const float n_bins = static_cast<float>((1 << bits) - 1);
        std::vector<float> back(cols);
        std::vector<uint8_t> codes(cols);
        for (int64_t r = 0; r < rows; ++r) {
          DecodeMlxRowSegmentRef(m, r, 0, cols, back.data());
          UnpackCodes(m.packed.Row(r), 0, cols, bits, codes.data());
          for (int64_t g = 0; g < cols / group; ++g) {
            const float scale = internal::MlxGroupScale(m, r, g);
            const float bias = internal::MlxGroupBias(m, r, g);
            const float storage =
                StorageStep(scale_type) * (n_bins * std::fabs(scale) + std::fabs(bias)) * 1.01f;
            const float* wg = w.data() + r * cols + g * group;
            float amax = 0.0f, lo = wg[0], hi = wg[0];
            for (int j = 0; j < group; ++j) {
              amax = std::max(amax, std::fabs(wg[j]));
              lo = std::min(lo, wg[j]);
              hi = std::max(hi, wg[j]);
            }
            const float slack = amax * 1e-6f;
            for (int j = 0; j < group; ++j) {
              const int64_t k = g * group + j;
              const bool end_code = codes[k] == 0 || codes[k] == n_bins;
              const float bound = std::fabs(scale) * (end_code ? 1.0f : 0.5f) + storage + slack;
              ASSERT_LE(std::fabs(back[k] - wg[j]), bound)
                  << "bits " << bits << " group " << group << " " << Name(scale_type) << " row "
                  << r << " element " << k;
            }
            if (scale_type == DType::kF32) {  // the larger-magnitude extreme is exact
              const float edge = std::fabs(lo) > std::fabs(hi) ? lo : hi;
              EXPECT_EQ(bias, edge);
              EXPECT_EQ(scale < 0, edge == hi);
            }
          }
        }
      }
    }
  }
}

TEST(MlxEncodings, HandValues) {
  EXPECT_EQ(DecodeE4M3(0x7E), 448.0f);
  EXPECT_EQ(DecodeE4M3(0x08), 0x1p-6f);
  EXPECT_EQ(DecodeE4M3(0x01), 0x1p-9f);
  EXPECT_EQ(DecodeE4M3(0xB8), -1.0f);
  EXPECT_EQ(DecodeE4M3(0x3F), 1.875f);
  EXPECT_TRUE(std::isnan(DecodeE4M3(0x7F)));
  EXPECT_TRUE(std::isnan(DecodeE4M3(0xFF)));
  EXPECT_EQ(DecodeE8M0(127), 1.0f);
  EXPECT_EQ(DecodeE8M0(130), 8.0f);
  EXPECT_EQ(DecodeE8M0(0), 0x1p-127f);
  EXPECT_TRUE(std::isinf(DecodeE8M0(255)));
  const float e2m1[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};
  for (int c = 0; c < 16; ++c) EXPECT_EQ(DecodeE2M1(static_cast<uint8_t>(c)), e2m1[c]) << c;
  EXPECT_EQ(EncodeE8M0(1.0f), 127);
  EXPECT_EQ(EncodeE8M0(0.75f), 127);  // log2 0.75 = -0.415 rounds to 0
  EXPECT_EQ(EncodeE8M0(0.7f), 126);   // -0.515 rounds to -1
  EXPECT_EQ(EncodeE8M0(0.0f), 0);
  EXPECT_EQ(EncodeE4M3(1000.0f), 0x7E);
  EXPECT_EQ(EncodeE4M3(-1000.0f), 0xFE);
}

// Every finite code encodes back to itself; random values encode to a nearest representable
// value (ties to the even code), found by brute force over all codes.
TEST(MlxEncodings, EncodersPickANearestValue) {
  for (int c = 0; c < 256; ++c) {
    if ((c & 0x7F) == 0x7F) continue;
    EXPECT_EQ(EncodeE4M3(DecodeE4M3(static_cast<uint8_t>(c))), c) << c;
  }
  for (int c = 0; c < 16; ++c) EXPECT_EQ(EncodeE2M1(DecodeE2M1(static_cast<uint8_t>(c))), c);
  std::mt19937 rng(8);
  std::uniform_real_distribution<float> log_magnitude(-12.0f, 9.5f);
  for (int i = 0; i < 4000; ++i) {
    float t = std::exp2(log_magnitude(rng)) * ((rng() & 1) ? -1.0f : 1.0f);
    if (i % 50 == 0) t = std::ldexp(std::round(std::ldexp(t, 6)), -6);  // exact ties sometimes
    const auto check = [&](float (*decode)(uint8_t), uint8_t code, int n_codes, float limit) {
      float best = std::numeric_limits<float>::infinity();
      for (int c = 0; c < n_codes; ++c) {
        const float v = decode(static_cast<uint8_t>(c));
        if (!std::isnan(v)) best = std::min(best, std::fabs(v - t));
      }
      const float got = decode(code);
      if (std::fabs(t) >= limit) {
        EXPECT_EQ(got, std::copysign(limit, t)) << t;
        return;
      }
      EXPECT_EQ(std::fabs(got - t), best) << t;
      if (std::fabs(got - t) == best) {  // a tie: the even code
        const uint8_t other = static_cast<uint8_t>(code ^ 1);
        if (std::fabs(decode(other) - t) == best) {
          EXPECT_EQ(code & 1, 0) << t;
        }
      }
    };
    check(DecodeE4M3, EncodeE4M3(t), 256, 448.0f);
    if (std::fabs(t) < 8.0f) check(DecodeE2M1, EncodeE2M1(t), 16, 6.0f);
  }
}

// mx/nv quantizers (f32 weights), the rule MLX's CPU quantizer follows (its bytes are compared
// with MLX itself in mlx_oracle_test.cc): nvfp4's scale is the nearest-even E4M3 of
// max|w| / 6; mxfp4/mxfp8's is the smallest power of two >= max|w| / (6 or 448); 8-bit codes are
// the nearest-even E4M3 encodings of w / scale; 4-bit codes the nearest E2M1 value, ties to the
// smaller magnitude, never -0.
TEST(MlxMicroscaling, QuantizerFollowsTheRule) {
  const int64_t rows = 3, cols = 128;
  auto w = testing::RandomWeights(rows * cols, 5);
  for (int64_t k = 0; k < 32; ++k) w[2 * cols + k] = 0.0f;  // an all-zero group: scale 1 (mx)
  for (int64_t k = 32; k < 64; ++k) w[2 * cols + k] = 0.75f * ((k % 3) - 1.0f);  // E2M1 ties
  struct M {
    MlxMode mode;
    int bits, group;
  };
  for (const M& mm :
       {M{MlxMode::kMxfp4, 4, 32}, M{MlxMode::kMxfp8, 8, 32}, M{MlxMode::kNvfp4, 4, 16}}) {
    const MlxQuantizedTensor q = QuantizeMlx(w.data(), rows, cols, mm.mode, mm.bits, mm.group);
    const MlxQuantizedMatrix m = q.View();
    ValidateMlxMatrix(m, "mx");
    std::vector<uint8_t> codes(cols);
    std::vector<float> back(cols);
    for (int64_t r = 0; r < rows; ++r) {
      UnpackCodes(m.packed.Row(r), 0, cols, mm.bits, codes.data());
      DecodeMlxRowSegmentRef(m, r, 0, cols, back.data());
      for (int64_t g = 0; g < cols / mm.group; ++g) {
        float amax = 0.0f;
        for (int j = 0; j < mm.group; ++j)
          amax = std::max(amax, std::fabs(w[r * cols + g * mm.group + j]));
        const float raw = amax / (mm.bits == 4 ? 6.0f : 448.0f);
        const float scale = internal::MlxGroupScale(m, r, g);
        if (mm.mode == MlxMode::kNvfp4) {
          EXPECT_EQ(scale, DecodeE4M3(EncodeE4M3(raw)));
        } else if (raw == 0.0f) {
          EXPECT_EQ(scale, 1.0f);
        } else {
          int exponent;
          EXPECT_EQ(std::frexp(scale, &exponent), 0.5f);  // a power of two
          EXPECT_GE(scale, raw);
          EXPECT_LT(scale / 2.0f, raw);
        }
        for (int j = 0; j < mm.group; ++j) {
          const int64_t k = g * mm.group + j;
          const float t = w[r * cols + k] / scale;
          if (mm.bits == 8) {
            EXPECT_EQ(codes[k], EncodeE4M3(t));
          } else if (scale > 0.0f) {
            float best = std::numeric_limits<float>::infinity();
            for (uint8_t c = 0; c < 16; ++c) best = std::min(best, std::fabs(DecodeE2M1(c) - t));
            const float got = DecodeE2M1(codes[k]);
            EXPECT_EQ(std::fabs(got - t), best) << t;
            EXPECT_NE(codes[k], 8) << "-0 for " << t;
            for (uint8_t c = 0; c < 16; ++c) {  // a tie goes to the smaller magnitude
              if (std::fabs(DecodeE2M1(c) - t) == best) {
                EXPECT_LE(std::fabs(got), std::fabs(DecodeE2M1(c))) << t;
              }
            }
          }
          const float element = mm.bits == 4 ? DecodeE2M1(codes[k]) : DecodeE4M3(codes[k]);
          EXPECT_EQ(back[k], scale * element);
        }
      }
    }
  }
}

// Random packed words and scales: the SIMD decode equals the reference bit for bit on partial
// segments and odd row counts (including the last-window scalar fallback); dots agree.
TEST(MlxKernels, SimdMatchesReference) {
  std::mt19937 rng(12);
  struct M {
    MlxMode mode;
    int bits, group;
  };
  std::vector<M> cases = {
      {MlxMode::kMxfp4, 4, 32}, {MlxMode::kMxfp8, 8, 32}, {MlxMode::kNvfp4, 4, 16}};
  for (int bits : {2, 3, 4, 5, 6, 8}) {
    for (int group : {32, 64, 128}) cases.push_back({MlxMode::kAffine, bits, group});
  }
  for (const M& c : cases) {
    for (DType scale_type : {DType::kF32, DType::kF16, DType::kBF16}) {
      if (c.mode != MlxMode::kAffine && scale_type != DType::kF32) continue;
      const int64_t rows = 3, groups = 5, cols = groups * c.group, words = cols * c.bits / 32;
      Tensor packed(DType::kU32, rows, words);
      for (size_t i = 0; i < packed.size_bytes(); ++i) {
        packed.bytes()[i] = static_cast<uint8_t>(rng());
        // E4M3 NaN codes decode bit-identically too, but would make the dot products NaN.
        if (c.mode == MlxMode::kMxfp8 && (packed.bytes()[i] & 0x7F) == 0x7F) packed.bytes()[i] ^= 1;
      }
      const bool affine = c.mode == MlxMode::kAffine;
      const DType side = affine ? scale_type : DType::kU8;
      Tensor scales(side, rows, groups), biases(side, rows, groups);
      std::uniform_real_distribution<float> value(-0.1f, 0.1f);
      for (int64_t i = 0; i < rows * groups; ++i) {
        if (!affine) {
          scales.bytes()[i] =
              static_cast<uint8_t>(c.mode == MlxMode::kNvfp4 ? rng() % 0x7E : 100 + rng() % 40);
          continue;
        }
        for (Tensor* t : {&scales, &biases}) {
          const float v = value(rng);
          if (side == DType::kF32) {
            std::memcpy(t->bytes() + i * 4, &v, 4);
          } else {
            const uint16_t h = side == DType::kF16 ? F32ToF16(v) : F32ToBF16(v);
            std::memcpy(t->bytes() + i * 2, &h, 2);
          }
        }
      }
      const size_t side_stride = BytesFor(side, groups);
      const MlxQuantizedMatrix m{
          c.mode,
          c.bits,
          c.group,
          MatView{DType::kU32, rows, words, static_cast<size_t>(words) * 4, packed.bytes()},
          MatView{side, rows, groups, side_stride, scales.bytes()},
          affine ? MatView{side, rows, groups, side_stride, biases.bytes()} : MatView{}};
      ValidateMlxMatrix(m, "random");
      const auto x = testing::RandomWeights(cols, 3);
      for (int64_t r = 0; r < rows; ++r) {
        for (auto [k0, len] : {std::pair<int64_t, int64_t>{0, cols},
                               {c.group, 3 * c.group},
                               {4 * c.group, c.group}}) {
          std::vector<float> ref(len), fast(len);
          DecodeMlxRowSegmentRef(m, r, k0, len, ref.data());
          DecodeMlxRowSegment(m, r, k0, len, fast.data());
          ASSERT_EQ(std::memcmp(ref.data(), fast.data(), len * 4), 0)
              << MlxModeName(c.mode) << " bits " << c.bits << " group " << c.group << " "
              << Name(scale_type) << " row " << r << " k0 " << k0;
          // Rows r.. at once into a strided tile (a KV cache's): each row the reference's.
          const int64_t n = rows - r, stride = len + 5;
          std::vector<float> tile(static_cast<size_t>(n * stride), -7.0f);
          DecodeMlxRowsSegment(m, r, n, k0, len, tile.data(), stride);
          for (int64_t j = 0; j < n; ++j) {
            DecodeMlxRowSegmentRef(m, r + j, k0, len, ref.data());
            ASSERT_EQ(std::memcmp(ref.data(), tile.data() + j * stride, len * 4), 0)
                << MlxModeName(c.mode) << " bits " << c.bits << " rows from " << r << " + " << j;
            ASSERT_EQ(tile[static_cast<size_t>(j * stride + len)], -7.0f);  // padding untouched
          }
        }
        std::vector<float> full(cols);
        DecodeMlxRowSegmentRef(m, r, 0, cols, full.data());
        double exact = 0.0, magnitude = 0.0;
        for (int64_t k = 0; k < cols; ++k) {
          exact += static_cast<double>(full[k]) * x[k];
          magnitude += std::fabs(static_cast<double>(full[k]) * x[k]);
        }
        EXPECT_NEAR(DotMlxRowRef(m, r, x.data()), exact, 1e-6 * magnitude + 1e-30);
        EXPECT_NEAR(DotMlxRow(m, r, x.data()), exact, 1e-6 * magnitude + 1e-30);
      }
    }
  }
}

TEST(MlxValidation, RejectsInconsistentViewsWithTheValuesSeen) {
  const auto q = QuantizeMlx(testing::RandomWeights(64, 1).data(), 1, 64, MlxMode::kAffine, 4, 32);
  MlxQuantizedMatrix m = q.View();
  const auto expect_error = [](const MlxQuantizedMatrix& bad, const char* needle) {
    try {
      ValidateMlxMatrix(bad, "model.layers.0.mlp.up_proj");
      ADD_FAILURE() << "no error for " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("up_proj"), std::string::npos) << e.what();
    }
  };
  MlxQuantizedMatrix bad = m;
  bad.bits = 7;
  expect_error(bad, "bits 7");
  bad = m;
  bad.packed.type = DType::kU8;
  expect_error(bad, "dtype u8");
  bad = m;
  bad.scales.cols = 3;
  expect_error(bad, "[1, 3]");
  bad = m;
  bad.biases.type = DType::kF16;
  expect_error(bad, "f16");
  bad = m;
  bad.mode = MlxMode::kMxfp4;
  expect_error(bad, "dtype f32");
  EXPECT_THROW(QuantizeMlx(testing::RandomWeights(48, 1).data(), 1, 48, MlxMode::kAffine, 4, 32),
               Error);
  EXPECT_THROW(QuantizeMlx(testing::RandomWeights(64, 1).data(), 1, 64, MlxMode::kNvfp4, 4, 32),
               Error);
  EXPECT_EQ(ParseMlxMode("nvfp4"), MlxMode::kNvfp4);
  EXPECT_EQ(ParseMlxMode("int4"), std::nullopt);
}

}  // namespace
}  // namespace proctor::quant
