// Norm, rotary, attention, elementwise and row-decoding kernels against naive double-precision
// implementations written here (odd sizes, GQA, sliding windows, pos0 > 0).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "ops/matmul_kernels.h"
#include "ops/ops.h"
#include "ops/test_util.h"
#include "util/half.h"

namespace proctor::ops {
namespace {

using testing::RandomFloats;
using testing::RandomMatrix;

MatView F32View(const std::vector<float>& v, int64_t rows, int64_t cols) {
  return MatView{DType::kF32, rows, cols, static_cast<size_t>(cols) * 4,
                 reinterpret_cast<const uint8_t*>(v.data())};
}

TEST(RmsNorm, MatchesDoubleFormulaAllWeightTypes) {
  for (int64_t K : {1, 7, 64, 257}) {
    for (DType wtype : {DType::kF32, DType::kBF16, DType::kF16}) {
      for (bool add_one : {false, true}) {
        const int64_t T = 5;
        const auto x = RandomFloats(static_cast<size_t>(T * K), 3, 2.0f);
        const Tensor w = RandomMatrix(wtype, 1, K, 4);
        std::vector<float> w_f32(static_cast<size_t>(K));
        DequantizeRow(w.View(), 0, w_f32);
        Tensor out = Tensor::F32(T, K), ref = Tensor::F32(T, K);
        Tensor ggml = Tensor::F32(T, K);
        RmsNorm(F32View(x, T, K), w.View(), 1e-5f, add_one, out.MutF32());
        RmsNorm(F32View(x, T, K), w.View(), 1e-5f, add_one, ggml.MutF32(), RmsNormSum::kGgml);
        RmsNormRef(F32View(x, T, K), w.View(), 1e-5f, add_one, ref.MutF32());
        for (int64_t t = 0; t < T; ++t) {
          // ggml_compute_forward_rms_norm_f32's arithmetic, written out: the kGgml bits.
          double ggml_sum = 0.0;
          for (int64_t i = 0; i < K; ++i) ggml_sum += double{x[t * K + i] * x[t * K + i]};
          const float ggml_mean = static_cast<float>(ggml_sum / static_cast<double>(K));
          const float ggml_scale = 1.0f / std::sqrt(ggml_mean + 1e-5f);
          for (int64_t i = 0; i < K; ++i) {
            const float w_i = add_one ? w_f32[i] + 1.0f : w_f32[i];
            ASSERT_EQ(ggml.RowF32(t)[i], x[t * K + i] * ggml_scale * w_i) << t << " " << i;
          }
          double ss = 0.0;
          for (int64_t i = 0; i < K; ++i) ss += static_cast<double>(x[t * K + i]) * x[t * K + i];
          const double inv = 1.0 / std::sqrt(ss / K + 1e-5);
          for (int64_t i = 0; i < K; ++i) {
            const double expect = x[t * K + i] * inv * (w_f32[i] + (add_one ? 1.0 : 0.0));
            ASSERT_NEAR(out.RowF32(t)[i], expect, 1e-6 * std::fabs(expect) + 1e-7);
            ASSERT_NEAR(ref.RowF32(t)[i], expect, 1e-6 * std::fabs(expect) + 1e-7);
          }
        }
      }
    }
  }
}

TEST(RmsNorm, InPlace) {
  const auto x = RandomFloats(3 * 40, 5);
  std::vector<float> y = x;
  const Tensor w = RandomMatrix(DType::kF32, 1, 40, 6);
  Tensor expect = Tensor::F32(3, 40);
  RmsNorm(F32View(x, 3, 40), w.View(), 1e-6f, false, expect.MutF32());
  RmsNorm(F32View(y, 3, 40), w.View(), 1e-6f, false, MutMatF32{3, 40, 40, y.data()});
  EXPECT_EQ(std::memcmp(y.data(), expect.f32(), y.size() * 4), 0);
}

// Naive rotary: double arithmetic on the f32 angle f32(pos) * inv_freq (Hugging Face's angle).
void NaiveRope(std::vector<double>& x, int64_t T, int heads, int D, const std::vector<int32_t>& pos,
               const std::vector<float>& inv_freq, double scale, RopeStyle style) {
  for (int64_t t = 0; t < T; ++t) {
    for (int h = 0; h < heads; ++h) {
      double* head = x.data() + (t * heads + h) * D;
      for (int i = 0; i < D / 2; ++i) {
        const float angle = static_cast<float>(pos[t]) * inv_freq[i];
        const double c = std::cos(static_cast<double>(angle)) * scale;
        const double s = std::sin(static_cast<double>(angle)) * scale;
        const int a = style == RopeStyle::kHalfRotation ? i : 2 * i;
        const int b = style == RopeStyle::kHalfRotation ? i + D / 2 : 2 * i + 1;
        const double xa = head[a], xb = head[b];
        head[a] = xa * c - xb * s;
        head[b] = xb * c + xa * s;
      }
    }
  }
}

TEST(Rope, BothStylesMatchNaiveDouble) {
  for (RopeStyle style : {RopeStyle::kHalfRotation, RopeStyle::kAdjacentPairs}) {
    for (int D : {2, 8, 64, 128}) {
      const int heads = 3;
      const int64_t T = 7;
      std::vector<float> inv_freq(static_cast<size_t>(D / 2));
      for (int i = 0; i < D / 2; ++i) {
        inv_freq[i] = static_cast<float>(1.0 / std::pow(10000.0, 2.0 * i / D));
      }
      const std::vector<int32_t> pos = {0, 1, 5, 17, 100, 4095, 32767};
      for (float attention_scale : {1.0f, 1.25f}) {
        auto x = RandomFloats(static_cast<size_t>(T * heads * D), 7);
        std::vector<double> expect(x.begin(), x.end());
        NaiveRope(expect, T, heads, D, pos, inv_freq, attention_scale, style);
        ApplyRope(MutMatF32{T, heads * D, heads * D, x.data()}, heads, D, pos, inv_freq,
                  attention_scale, style);
        for (size_t i = 0; i < x.size(); ++i) {
          ASSERT_NEAR(x[i], expect[i], 2e-6 * (std::fabs(expect[i]) + 1.0)) << "i=" << i;
        }
      }
    }
  }
}

// Partial rotary (Qwen3.5: a quarter of each head): the first R dimensions rotate as a head of R
// would (halves i and i + R/2), the other D - R are left exactly as they were.
TEST(Rope, PartialRotaryRotatesTheFirstDimensionsOnly) {
  const int heads = 2, D = 32, R = 8;
  const int64_t T = 4;
  std::vector<float> inv_freq(static_cast<size_t>(R / 2));
  for (int i = 0; i < R / 2; ++i)
    inv_freq[i] = static_cast<float>(1.0 / std::pow(1e4, 2.0 * i / R));
  const std::vector<int32_t> pos = {0, 3, 77, 1000};
  auto x = RandomFloats(static_cast<size_t>(T * heads * D), 9);
  const auto before = x;
  ApplyRope(MutMatF32{T, heads * D, heads * D, x.data()}, heads, D, pos, inv_freq, 1.0f,
            RopeStyle::kHalfRotation);
  for (int64_t t = 0; t < T; ++t) {
    for (int h = 0; h < heads; ++h) {
      const size_t head = static_cast<size_t>((t * heads + h) * D);
      std::vector<double> expect(before.begin() + head, before.begin() + head + R);
      NaiveRope(expect, 1, 1, R, {pos[t]}, inv_freq, 1.0, RopeStyle::kHalfRotation);
      for (int i = 0; i < R; ++i)
        ASSERT_NEAR(x[head + i], expect[i], 2e-6 * (std::fabs(expect[i]) + 1));
      for (int i = R; i < D; ++i) ASSERT_EQ(x[head + i], before[head + i]) << "passed through";
    }
  }
}

struct AttentionCase {
  int64_t T, pos0;
  int heads, kv_heads, D, window;
  DType kv_type;
  float softcap = 0.0f;  // Gemma 2's soft-capped scores
  int64_t kv_first = 0;  // the cache holds positions kv_first.. only (window-bounded)
};

// Rows [first, m.rows) of m.
MatView RowsFrom(const MatView& m, int64_t first) {
  return MatView{m.type, m.rows - first, m.cols, m.row_stride, m.Row(first)};
}

void CheckAttention(const AttentionCase& c, ThreadPool& pool) {
  SCOPED_TRACE(fmt::format("T={} pos0={} heads={}/{} D={} window={} kv={} softcap={} first={}", c.T,
                           c.pos0, c.heads, c.kv_heads, c.D, c.window, Name(c.kv_type), c.softcap,
                           c.kv_first));
  const int64_t S = c.pos0 + c.T + 2;  // the cache may hold more rows than are visible
  const auto q = RandomFloats(static_cast<size_t>(c.T * c.heads * c.D), 1);
  const Tensor k = RandomMatrix(c.kv_type, S, c.kv_heads * c.D, 2);
  const Tensor v = RandomMatrix(c.kv_type, S, c.kv_heads * c.D, 3);
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.D));
  Tensor out = Tensor::F32(c.T, c.heads * c.D), ref = Tensor::F32(c.T, c.heads * c.D);
  const MatView qv = F32View(q, c.T, c.heads * c.D);
  const AttentionShape shape{.n_heads = c.heads,
                             .n_kv_heads = c.kv_heads,
                             .head_dim = c.D,
                             .scale = scale,
                             .sliding_window = c.window,
                             .logit_softcap = c.softcap,
                             .kv_first_position = c.kv_first};
  const MatView k_held = RowsFrom(k.View(), c.kv_first), v_held = RowsFrom(v.View(), c.kv_first);
  Attention(qv, k_held, v_held, c.pos0, shape, out.MutF32(), pool);
  AttentionRef(qv, k_held, v_held, c.pos0, shape, ref.MutF32());
  // Naive: explicit loops over visible keys for every (t, h).
  std::vector<float> krow(static_cast<size_t>(c.kv_heads * c.D)), vrow(krow.size());
  const int group = c.heads / c.kv_heads;
  for (int64_t t = 0; t < c.T; ++t) {
    const int64_t p = c.pos0 + t;
    for (int h = 0; h < c.heads; ++h) {
      std::vector<double> weights;
      std::vector<int64_t> keys;
      for (int64_t s = 0; s <= p; ++s) {
        if (c.window > 0 && s <= p - c.window) continue;
        DequantizeRow(k.View(), s, krow);
        double dot = 0.0;
        for (int d = 0; d < c.D; ++d) {
          dot += static_cast<double>(q[(t * c.heads + h) * c.D + d]) * krow[(h / group) * c.D + d];
        }
        const double score = dot * scale;
        weights.push_back(c.softcap > 0 ? std::tanh(score / c.softcap) * c.softcap : score);
        keys.push_back(s);
      }
      double max_w = -INFINITY, sum = 0.0;
      for (double w : weights) max_w = std::max(max_w, w);
      for (double& w : weights) sum += (w = std::exp(w - max_w));
      for (int d = 0; d < c.D; ++d) {
        double expect = 0.0;
        for (size_t j = 0; j < keys.size(); ++j) {
          DequantizeRow(v.View(), keys[j], vrow);
          expect += weights[j] / sum * vrow[(h / group) * c.D + d];
        }
        ASSERT_NEAR(out.RowF32(t)[h * c.D + d], expect, 2e-6) << "t=" << t << " h=" << h;
        ASSERT_NEAR(ref.RowF32(t)[h * c.D + d], expect, 1e-6) << "ref t=" << t << " h=" << h;
      }
    }
  }
}

TEST(Attention, MatchesNaiveGqaWindowsAndOffsets) {
  ThreadPool pool(2);
  for (DType kv_type : {DType::kF32, DType::kBF16}) {
    CheckAttention({1, 0, 2, 2, 8, 0, kv_type}, pool);
    CheckAttention({7, 0, 4, 2, 16, 0, kv_type}, pool);
    CheckAttention({3, 9, 6, 2, 64, 0, kv_type}, pool);             // pos0 > 0, GQA 3:1
    CheckAttention({1, 40, 4, 1, 64, 0, kv_type}, pool);            // decode, MQA
    CheckAttention({9, 5, 4, 4, 32, 4, kv_type}, pool);             // sliding window
    CheckAttention({2, 30, 8, 2, 17, 7, kv_type}, pool);            // odd head_dim, window, pos0
    CheckAttention({70, 3, 4, 2, 32, 20, kv_type}, pool);           // several query blocks
    CheckAttention({9, 5, 4, 2, 16, 0, kv_type, 2.0f}, pool);       // soft-capped scores
    CheckAttention({12, 20, 4, 2, 16, 6, kv_type, 50.0f}, pool);    // soft-cap and window
    CheckAttention({5, 30, 4, 2, 16, 8, kv_type, 0.0f, 23}, pool);  // cache from position 23
    CheckAttention({1, 40, 4, 2, 32, 8, kv_type, 0.0f, 33}, pool);  // decode, exactly the window
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(Attention, SameBitsForAnyThreadCount) {
  const int64_t T = 40, S = 45;
  const auto q = RandomFloats(static_cast<size_t>(T * 8 * 64), 1);
  const Tensor k = RandomMatrix(DType::kBF16, S, 2 * 64, 2);
  const Tensor v = RandomMatrix(DType::kBF16, S, 2 * 64, 3);
  Tensor a = Tensor::F32(T, 8 * 64), b = Tensor::F32(T, 8 * 64);
  ThreadPool one(1), three(3);
  const AttentionShape shape{.n_heads = 8, .n_kv_heads = 2, .head_dim = 64, .scale = 0.125f};
  Attention(F32View(q, T, 8 * 64), k.View(), v.View(), 5, shape, a.MutF32(), one);
  Attention(F32View(q, T, 8 * 64), k.View(), v.View(), 5, shape, b.MutF32(), three);
  EXPECT_EQ(std::memcmp(a.bytes(), b.bytes(), a.size_bytes()), 0);
}

TEST(Attention, SubnormalProbabilitiesAreZeroAndTheRestExact) {
  // Scores 0, -80, -100, -200 (scale 1) over 19 keys (SIMD body and tail): e^-100 and e^-200
  // are below FLT_MIN after normalisation and must be exactly 0; e^-80 (1.8e-35) stays.
  std::vector<float> row(19, -300.0f);
  row[0] = 0.0f, row[3] = -80.0f, row[7] = -100.0f, row[17] = -200.0f, row[18] = -100.0f;
  internal::MaskedSoftmaxRow(row.data(), 19, 0, 19, 1.0f);
  double sum = 0.0;
  for (const float p : row) {
    EXPECT_TRUE(p == 0.0f || std::fpclassify(p) == FP_NORMAL) << p;
    sum += p;
  }
  EXPECT_EQ(row[7], 0.0f);
  EXPECT_EQ(row[18], 0.0f);
  EXPECT_NEAR(row[3], std::exp(-80.0), 1e-6 * std::exp(-80.0));
  EXPECT_NEAR(sum, 1.0, 1e-6);
}

TEST(Elementwise, SiluMulAddBiasAddInPlace) {
  const int64_t T = 3, C = 37;
  auto gate = RandomFloats(T * C, 1, 3.0f);
  const auto up = RandomFloats(T * C, 2);
  const auto gate0 = gate;
  SiluMul(MutMatF32{T, C, C, gate.data()}, F32View(up, T, C));
  for (size_t i = 0; i < gate.size(); ++i) {
    const double g = gate0[i];
    ASSERT_NEAR(gate[i], g / (1.0 + std::exp(-g)) * up[i], 1e-6 * (std::fabs(g * up[i]) + 1e-3));
  }
  auto acc = RandomFloats(T * C, 3);
  const auto acc0 = acc;
  AddInPlace(MutMatF32{T, C, C, acc.data()}, F32View(up, T, C));
  for (size_t i = 0; i < acc.size(); ++i) ASSERT_EQ(acc[i], acc0[i] + up[i]);
  const Tensor bias = RandomMatrix(DType::kBF16, 1, C, 4);
  std::vector<float> bias_f32(C);
  DequantizeRow(bias.View(), 0, bias_f32);
  AddBias(MutMatF32{T, C, C, acc.data()}, bias.View());
  for (size_t i = 0; i < acc.size(); ++i) {
    ASSERT_EQ(acc[i], (acc0[i] + up[i]) + bias_f32[i % C]);
  }
}

TEST(Elementwise, SiluMulSaturatesAtExtremeGates) {
  std::vector<float> gate = {-200.0f, -104.5f, -90.0f, -20.0f, 0.0f,  20.0f, 90.0f, 200.0f, -1e30f,
                             1e30f,   -150.0f, 150.0f, -88.0f, 88.0f, -3.0f, 3.0f,  -110.0f};
  const std::vector<float> up(gate.size(), 2.0f);
  const auto gate0 = gate;
  const int64_t n = static_cast<int64_t>(gate.size());
  SiluMul(MutMatF32{1, n, n, gate.data()}, F32View(up, 1, n));
  for (size_t i = 0; i < gate.size(); ++i) {
    const double g = gate0[i];
    const double expect = g / (1.0 + std::exp(-g)) * 2.0;
    ASSERT_TRUE(std::isfinite(gate[i])) << "gate " << g;
    ASSERT_NEAR(gate[i], expect, 1e-6 * std::fabs(expect) + 1e-30) << "gate " << g;
  }
}

// Gemma's GeGLU against the double-precision formula, over ordinary and extreme gates (tanh
// saturates to +-1: gelu(g) is g for large g and 0 for very negative g, never NaN).
TEST(Elementwise, GeluTanhMulMatchesTheFormula) {
  std::vector<float> gate = RandomFloats(3 * 37, 7, 4.0f);
  for (float extreme : {-200.0f, -20.0f, -5.0f, 0.0f, 5.0f, 20.0f, 200.0f, -1e30f, 1e30f}) {
    gate.push_back(extreme);
  }
  while (gate.size() % 3 != 0) gate.push_back(0.5f);
  const int64_t T = 3, C = static_cast<int64_t>(gate.size()) / T;
  const auto up = RandomFloats(gate.size(), 8);
  std::vector<float> fast = gate, ref = gate;
  GeluTanhMul(MutMatF32{T, C, C, fast.data()}, F32View(up, T, C));
  GeluTanhMulRef(MutMatF32{T, C, C, ref.data()}, F32View(up, T, C));
  for (size_t i = 0; i < gate.size(); ++i) {
    const double g = gate[i];
    const double expect =
        0.5 * g * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (g + 0.044715 * g * g * g))) * up[i];
    ASSERT_TRUE(std::isfinite(fast[i])) << "gate " << g;
    ASSERT_NEAR(fast[i], expect, 2e-6 * std::fabs(expect) + 1e-6) << "gate " << g;
    ASSERT_NEAR(ref[i], expect, 1e-7 * std::fabs(expect) + 1e-30) << "gate " << g;
  }
}

TEST(Elementwise, GatherRowsDecodesEveryTypeAndRejectsBadIds) {
  for (DType type : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0}) {
    const Tensor table = RandomMatrix(type, 10, 64, 5);
    const std::vector<int32_t> ids = {3, 0, 9, 3};
    Tensor out = Tensor::F32(4, 64);
    GatherRows(table.View(), ids, out.MutF32());
    std::vector<float> row(64);
    for (size_t t = 0; t < ids.size(); ++t) {
      DecodeRowSegmentRef(table.View(), ids[t], 0, 64, row.data());
      // Bit patterns on purpose: the same bits, not equal values.
      // NOLINTNEXTLINE(bugprone-suspicious-memory-comparison)
      EXPECT_EQ(std::memcmp(out.RowF32(static_cast<int64_t>(t)), row.data(), 64 * 4), 0);
    }
    const std::vector<int32_t> bad = {10};
    Tensor one = Tensor::F32(1, 64);
    EXPECT_THROW(GatherRows(table.View(), bad, one.MutF32()), Error);
  }
}

TEST(Convert, DecodeSimdMatchesScalarOnTails) {
  for (DType type : {DType::kF32, DType::kF16, DType::kBF16}) {
    const Tensor w = RandomMatrix(type, 2, 77, 6);
    for (int64_t k0 : {0, 1, 5}) {
      for (int64_t len : {0, 1, 15, 16, 17, 72}) {
        std::vector<float> a(static_cast<size_t>(len) + 1, 9.0f), b = a;
        DecodeRowSegment(w.View(), 1, k0, len, a.data());
        DecodeRowSegmentRef(w.View(), 1, k0, len, b.data());
        EXPECT_EQ(a, b) << Name(type) << " k0=" << k0 << " len=" << len;
      }
    }
  }
  // f16 specials: subnormals, infinities.
  const std::vector<uint16_t> halves = {0x0001, 0x03FF, 0x8001, 0x7C00, 0xFC00, 0x3C00,
                                        0x7BFF, 0x0400, 0x0000, 0x8000, 0x1234, 0xC000,
                                        0x0002, 0x5555, 0x2AAA, 0x3555, 0x0200};
  const MatView hv{DType::kF16, 1, static_cast<int64_t>(halves.size()), halves.size() * 2,
                   reinterpret_cast<const uint8_t*>(halves.data())};
  std::vector<float> got(halves.size());
  DecodeRowSegment(hv, 0, 0, hv.cols, got.data());
  for (size_t i = 0; i < halves.size(); ++i) EXPECT_EQ(got[i], F16ToF32(halves[i])) << i;
}

// DecodeRowsSegment (attention's cache tiles) equals the scalar reference row by row, for every
// cache type, any segment of whole blocks, into a strided output (the stride's gap untouched).
TEST(Convert, DecodeRowsSegmentEqualsTheReferenceRowByRow) {
  for (DType type : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0,
                     DType::kQ4_1, DType::kQ5_0, DType::kQ5_1}) {
    const Tensor w = RandomMatrix(type, 23, 256, 7);
    for (const auto [row0, n, k0, len] :
         {std::array<int64_t, 4>{0, 23, 0, 256}, std::array<int64_t, 4>{3, 17, 64, 64},
          std::array<int64_t, 4>{22, 1, 192, 32}, std::array<int64_t, 4>{5, 0, 0, 32}}) {
      const int64_t stride = len + 5;
      std::vector<float> got(static_cast<size_t>(std::max<int64_t>(n, 1) * stride), -7.0f);
      std::vector<float> want = got;
      DecodeRowsSegment(w.View(), row0, n, k0, len, got.data(), stride);
      for (int64_t r = 0; r < n; ++r) {
        DecodeRowSegmentRef(w.View(), row0 + r, k0, len, want.data() + r * stride);
      }
      EXPECT_EQ(got, want) << Name(type) << " rows " << row0 << "+" << n << " [" << k0 << ", "
                           << k0 + len << ")";
    }
  }
}

TEST(Convert, RoundToBF16MatchesScalarIncludingTiesAndNaN) {
  std::vector<float> x = RandomFloats(101, 8, 100.0f);
  const uint32_t specials[] = {0x3F808000u, 0x3F818000u, 0x3F80FFFFu, 0x7F7FFFFFu, 0x7FC00001u,
                               0xFF800000u, 0x00000001u, 0x80000000u, 0x7F800001u};
  for (size_t i = 0; i < std::size(specials); ++i) x[i * 3] = std::bit_cast<float>(specials[i]);
  std::vector<uint16_t> bits(x.size());
  std::vector<float> floats(x.size());
  RoundToBF16Bits(x.data(), static_cast<int64_t>(x.size()), bits.data());
  RoundToBF16Floats(x.data(), static_cast<int64_t>(x.size()), floats.data());
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(bits[i], F32ToBF16(x[i])) << i;
    EXPECT_EQ(std::bit_cast<uint32_t>(floats[i]), std::bit_cast<uint32_t>(RoundToBF16(x[i])));
  }
}

}  // namespace
}  // namespace proctor::ops
