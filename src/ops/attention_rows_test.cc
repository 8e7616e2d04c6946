// Attention's few-rows kernels (ops/attention_rows.h) on every Highway target this build compiled
// and this CPU supports: against sums in double, over row counts that fill and leave remainders
// of the four-row blocks, odd key counts, head widths of an odd number of vectors and strided
// cache rows; value sums accumulated over tiles are bit-identical to one call over all rows.
#include "ops/attention_rows.h"

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "quant/mlx_quant.h"

namespace proctor::ops::internal {
namespace {

std::vector<float> Normal(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

class FewRowsEveryTarget : public ::testing::Test {
 protected:
  void TearDown() override { hwy::SetSupportedTargetsForTest(0); }
};

// Head widths that are a whole number of vectors for `lanes`: 1, 2 and 3 vectors and 64.
std::vector<int64_t> HeadWidths(int64_t lanes) { return {lanes, 2 * lanes, 3 * lanes, 64}; }

TEST_F(FewRowsEveryTarget, MatchDoubleSumsAndTileSumsAreOneChain) {
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(hwy::TargetName(target));
    int64_t lanes = 1;
    while (!FewRowsKernelsFit(lanes)) ++lanes;
    for (int64_t D : HeadWidths(lanes)) {
      if (!FewRowsKernelsFit(D)) continue;
      for (int64_t rows : {1, 3, 4, 7, 8, 9, 16}) {
        SCOPED_TRACE(testing::Message() << "D=" << D << " rows=" << rows);
        const int64_t n = 37, kv_stride = 3 * D + 5;  // rows of a wider cache, odd stride
        const auto q = Normal(static_cast<size_t>(rows * D), 1);
        const auto keys = Normal(static_cast<size_t>(n * kv_stride), 2);
        const auto values = Normal(static_cast<size_t>(n * kv_stride), 3);
        const float* k = keys.data() + D;  // the second head's columns
        const float* v = values.data() + D;
        std::vector<float> scores(static_cast<size_t>(rows * n));
        ScoreFewRows(q.data(), rows, D, k, kv_stride, n, n, scores.data(), n);
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t j = 0; j < n; ++j) {
            double dot = 0;
            for (int64_t d = 0; d < D; ++d) {
              dot += static_cast<double>(q[r * D + d]) * k[j * kv_stride + d];
            }
            ASSERT_NEAR(scores[r * n + j], dot, 1e-5 * (1 + std::fabs(dot))) << r << "," << j;
          }
        }
        const int64_t out_stride = D + 3;
        std::vector<float> whole(static_cast<size_t>(rows * out_stride), -7.0f), tiled = whole;
        WeightFewRows(scores.data(), n, rows, v, kv_stride, n, n, D, whole.data(), out_stride,
                      false);
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t d = 0; d < D; ++d) {
            double sum = 0, magnitude = 0;
            for (int64_t j = 0; j < n; ++j) {
              sum += static_cast<double>(scores[r * n + j]) * v[j * kv_stride + d];
              magnitude += std::fabs(static_cast<double>(scores[r * n + j]) * v[j * kv_stride + d]);
            }
            ASSERT_NEAR(whole[r * out_stride + d], sum, 1e-6 * (1 + magnitude)) << r << "," << d;
          }
          // Columns past D are not written.
          for (int64_t d = D; d < out_stride; ++d) ASSERT_EQ(whole[r * out_stride + d], -7.0f);
        }
        // Tiles of 16, 5 and the rest, accumulating: the same FMA chain as one call.
        WeightFewRows(scores.data(), n, rows, v, kv_stride, 16, n, D, tiled.data(), out_stride,
                      false);
        WeightFewRows(scores.data() + 16, n, rows, v + 16 * kv_stride, kv_stride, 5, n - 16, D,
                      tiled.data(), out_stride, true);
        WeightFewRows(scores.data() + 21, n, rows, v + 21 * kv_stride, kv_stride, n - 21, n - 21, D,
                      tiled.data(), out_stride, true);
        ASSERT_EQ(std::memcmp(whole.data(), tiled.data(), whole.size() * sizeof(float)), 0);
      }
    }
  }
}

// Affine keys scored from their codes equal the scores of the decoded rows bit for bit: the same
// values (scale * code + bias, the decoder's operations) in the same sums.
TEST_F(FewRowsEveryTarget, AffineKeysFromCodesEqualTheDecodedRows) {
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(hwy::TargetName(target));
    const int64_t D = 64, kv_dim = 3 * D, n = 29, s0 = 4;
    const auto raw = Normal(static_cast<size_t>((s0 + n) * kv_dim), 5);
    for (int bits : {2, 3, 4, 8}) {
      for (int group : {32, 64}) {
        const quant::MlxQuantizedTensor codes =
            quant::QuantizeMlx(raw.data(), s0 + n, kv_dim, quant::MlxMode::kAffine, bits, group);
        const quant::MlxQuantizedMatrix keys = codes.View();
        ASSERT_TRUE(AffineKeysScoredInPlace(keys, D));
        std::vector<float> decoded(static_cast<size_t>(n * D));
        quant::DecodeMlxRowsSegment(keys, s0, n, D, D, decoded.data(), D);
        for (int64_t rows : {1, 3, 4, 7, 8, 9, 16}) {
          SCOPED_TRACE(testing::Message() << bits << " bits, group " << group << ", rows " << rows);
          const auto q = Normal(static_cast<size_t>(rows * D), 6);
          std::vector<float> from_codes(static_cast<size_t>(rows * n)),
              from_rows(from_codes.size());
          ScoreFewRowsAffine(q.data(), rows, D, keys, s0, n, D, from_codes.data(), n);
          ScoreFewRows(q.data(), rows, D, decoded.data(), D, n, n, from_rows.data(), n);
          ASSERT_EQ(std::memcmp(from_codes.data(), from_rows.data(), from_rows.size() * 4), 0);
        }
      }
    }
  }
  // Not taken in place: 6-bit codes, groups wider than the head.
  const auto raw = Normal(4 * 256, 7);
  EXPECT_FALSE(AffineKeysScoredInPlace(
      quant::QuantizeMlx(raw.data(), 4, 256, quant::MlxMode::kAffine, 6, 64).View(), 64));
  EXPECT_FALSE(AffineKeysScoredInPlace(
      quant::QuantizeMlx(raw.data(), 4, 256, quant::MlxMode::kAffine, 4, 128).View(), 64));
  // 32 groups of 32 in a head of 1024: more than the kernels' table holds.
  EXPECT_FALSE(AffineKeysScoredInPlace(
      quant::QuantizeMlx(raw.data(), 1, 1024, quant::MlxMode::kAffine, 4, 32).View(), 1024));
}

// `rows` x `kv_dim` values encoded as TurboQuant keys or values of `bits` (heads of D), with the
// storage the views point into.
struct TurboCodes {
  std::vector<uint8_t> packed;
  std::vector<uint16_t> scales, offsets;
  quant::TurboRows view;

  TurboCodes(quant::TurboPart part, int bits, const std::vector<float>& raw, int64_t rows,
             int64_t kv_dim, int64_t D) {
    const int64_t groups = kv_dim / quant::kTurboGroup, row_bytes = kv_dim * bits / 8;
    packed.resize(static_cast<size_t>(rows * row_bytes));
    scales.resize(static_cast<size_t>(rows * groups));
    const auto matrix = [&](DType type, int64_t cols, const void* data) {
      return MatView{type, rows, cols, BytesFor(type, static_cast<uint64_t>(cols)),
                     static_cast<const uint8_t*>(data)};
    };
    view = {.part = part,
            .bits = bits,
            .head_dim = static_cast<int>(D),
            .packed = matrix(DType::kU8, row_bytes, packed.data()),
            .scales = matrix(DType::kF16, groups, scales.data()),
            .offsets = {}};
    if (part == quant::TurboPart::kValues) {
      quant::EncodeTurboValues(raw.data(), rows * kv_dim, static_cast<int>(D), bits, packed.data(),
                               scales.data(), "values");
      return;
    }
    offsets.resize(scales.size());
    for (int64_t r = 0; r < rows; ++r) {
      quant::EncodeTurboKeys(raw.data() + r * kv_dim, kv_dim, bits, packed.data() + r * row_bytes,
                             scales.data() + r * groups, offsets.data() + r * groups, "keys");
    }
    view.offsets = matrix(DType::kF16, groups, offsets.data());
  }
  TurboCodes(const TurboCodes&) = delete;
  TurboCodes& operator=(const TurboCodes&) = delete;
};

// TurboQuant keys scored from their codes equal the scores of the decoded rows bit for bit, for
// every key width the kernels take (2, 4, 8 bits); 5-bit keys are not taken, nor values.
TEST_F(FewRowsEveryTarget, TurboKeysFromCodesEqualTheDecodedRows) {
  const int64_t D = 64, kv_dim = 3 * D, n = 29, s0 = 4, rows_held = s0 + n;
  const auto raw = Normal(static_cast<size_t>(rows_held * kv_dim), 8);
  for (int bits : {2, 4, 8}) {
    const TurboCodes codes(quant::TurboPart::kKeys, bits, raw, rows_held, kv_dim, D);
    const quant::TurboRows& keys = codes.view;
    ASSERT_TRUE(TurboKeysScoredInPlace(keys, D));
    std::vector<float> decoded(static_cast<size_t>(n * D));
    quant::DecodeTurboRowsSegment(keys, s0, n, D, D, decoded.data(), D);
    for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
      hwy::SetSupportedTargetsForTest(target);
      for (int64_t rows : {1, 3, 4, 7, 8, 9, 16}) {
        SCOPED_TRACE(testing::Message()
                     << hwy::TargetName(target) << ", " << bits << " bits, rows " << rows);
        const auto q = Normal(static_cast<size_t>(rows * D), 9);
        std::vector<float> from_codes(static_cast<size_t>(rows * n)), from_rows(from_codes.size());
        ScoreFewRowsTurbo(q.data(), rows, D, keys, s0, n, D, from_codes.data(), n);
        ScoreFewRows(q.data(), rows, D, decoded.data(), D, n, n, from_rows.data(), n);
        ASSERT_EQ(std::memcmp(from_codes.data(), from_rows.data(), from_rows.size() * 4), 0);
      }
    }
    hwy::SetSupportedTargetsForTest(0);
    EXPECT_FALSE(TurboKeysScoredInPlace(quant::TurboRows{.part = quant::TurboPart::kValues,
                                                         .bits = bits,
                                                         .head_dim = static_cast<int>(D),
                                                         .packed = keys.packed,
                                                         .scales = keys.scales,
                                                         .offsets = {}},
                                        D));
  }
  quant::TurboRows five_bits = {};
  five_bits.bits = 5;
  EXPECT_FALSE(TurboKeysScoredInPlace(five_bits, D));
}

// Rows s0 .. s0 + n - 1 of coded values, the second head (columns [D, 2 D)): decoded into f32
// rows, and weighted from their codes.
void DecodeSecondHead(const quant::MlxQuantizedMatrix& values, int64_t s0, int64_t n, int64_t D,
                      float* out) {
  quant::DecodeMlxRowsSegment(values, s0, n, D, D, out, D);
}
void DecodeSecondHead(const quant::TurboRows& values, int64_t s0, int64_t n, int64_t D,
                      float* out) {
  quant::DecodeTurboRowsSegment(values, s0, n, D, D, out, D);
}
void WeighSecondHead(const float* p, int64_t p_stride, int64_t rows,
                     const quant::MlxQuantizedMatrix& values, int64_t s0, int64_t n, int64_t D,
                     float* out, int64_t out_stride, bool accumulate) {
  WeightFewRowsAffine(p, p_stride, rows, values, s0, n, D, D, out, out_stride, accumulate);
}
void WeighSecondHead(const float* p, int64_t p_stride, int64_t rows, const quant::TurboRows& values,
                     int64_t s0, int64_t n, int64_t D, float* out, int64_t out_stride,
                     bool accumulate) {
  WeightFewRowsTurbo(p, p_stride, rows, values, s0, n, D, D, out, out_stride, accumulate);
}

// The second head of value rows s0 .. s0 + n - 1 (n > 70) weighted from their codes against
// WeightFewRows over the decoded rows, bit for bit, on every target: row counts that fill and
// leave the eight- and four-row blocks, rows that cross the kernels' fills of 64, and two calls
// (the first 70 rows, then the rest summed onto them).
template <class Coded>
void ExpectCodedValuesWeighAsDecodedRows(const Coded& values, int64_t s0, int64_t n, int64_t D) {
  std::vector<float> decoded(static_cast<size_t>(n * D));
  DecodeSecondHead(values, s0, n, D, decoded.data());
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    if (!FewRowsKernelsFit(D)) continue;
    for (int64_t rows : {1, 3, 4, 7, 8, 9, 16}) {
      SCOPED_TRACE(testing::Message() << hwy::TargetName(target) << ", rows " << rows);
      const auto p = Normal(static_cast<size_t>(rows * n), 11);
      const int64_t out_stride = D + 3;
      std::vector<float> from_codes(static_cast<size_t>(rows * out_stride), -7.0f),
          from_rows(from_codes.size(), -7.0f), two_calls(from_codes.size(), -7.0f);
      WeighSecondHead(p.data(), n, rows, values, s0, n, D, from_codes.data(), out_stride, false);
      WeightFewRows(p.data(), n, rows, decoded.data(), D, n, n, D, from_rows.data(), out_stride,
                    false);
      ASSERT_EQ(std::memcmp(from_codes.data(), from_rows.data(), from_rows.size() * 4), 0);
      WeighSecondHead(p.data(), n, rows, values, s0, 70, D, two_calls.data(), out_stride, false);
      WeighSecondHead(p.data() + 70, n, rows, values, s0 + 70, n - 70, D, two_calls.data(),
                      out_stride, true);
      ASSERT_EQ(std::memcmp(two_calls.data(), from_rows.data(), from_rows.size() * 4), 0);
    }
  }
  hwy::SetSupportedTargetsForTest(0);
}

// Affine values weighted from their codes equal the sums over the decoded rows bit for bit.
TEST_F(FewRowsEveryTarget, AffineValuesFromCodesEqualTheDecodedRows) {
  const int64_t D = 64, kv_dim = 3 * D, n = 150, s0 = 4;
  const auto raw = Normal(static_cast<size_t>((s0 + n) * kv_dim), 12);
  for (int bits : {2, 3, 4, 8}) {
    for (int group : {32, 64}) {
      SCOPED_TRACE(testing::Message() << bits << " bits, group " << group);
      const quant::MlxQuantizedTensor codes =
          quant::QuantizeMlx(raw.data(), s0 + n, kv_dim, quant::MlxMode::kAffine, bits, group);
      ASSERT_TRUE(AffineValuesWeightedInPlace(codes.View(), D));
      ExpectCodedValuesWeighAsDecodedRows(codes.View(), s0, n, D);
    }
  }
  // Refused as keys are (AffineKeysScoredInPlace, tested above): 6-bit codes.
  EXPECT_FALSE(AffineValuesWeightedInPlace(
      quant::QuantizeMlx(raw.data(), 4, 256, quant::MlxMode::kAffine, 6, 64).View(), 64));
}

// TurboQuant values (2, 3 and 4 bits) weighted from their codes equal the sums over the decoded,
// still rotated rows bit for bit; 8-bit values are not taken.
TEST_F(FewRowsEveryTarget, TurboValuesFromCodesEqualTheDecodedRows) {
  const int64_t D = 64, kv_dim = 3 * D, n = 150, s0 = 4, rows_held = s0 + n;
  const auto raw = Normal(static_cast<size_t>(rows_held * kv_dim), 14);
  for (int bits : {2, 3, 4, 8}) {
    SCOPED_TRACE(testing::Message() << bits << " bits");
    const TurboCodes codes(quant::TurboPart::kValues, bits, raw, rows_held, kv_dim, D);
    const quant::TurboRows& values = codes.view;
    if (bits == 8) {
      EXPECT_FALSE(TurboValuesWeightedInPlace(values, D));
      continue;
    }
    ASSERT_TRUE(TurboValuesWeightedInPlace(values, D));
    ExpectCodedValuesWeighAsDecodedRows(values, s0, n, D);
    // Keys are not values.
    quant::TurboRows keys = values;
    keys.part = quant::TurboPart::kKeys;
    EXPECT_FALSE(TurboValuesWeightedInPlace(keys, D));
  }
}

}  // namespace
}  // namespace proctor::ops::internal
