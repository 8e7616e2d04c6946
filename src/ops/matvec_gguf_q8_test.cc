// 8-bit activations (ComputeMode::kQ8): the quantized activations against ggml's Q8_0 blocks,
// the AVX2 integer dot-product kernels (matrix-vector, and matrix-matrix with each token's bits
// those of the matrix-vector kernel) against a double-precision sum of exactly decoded weights
// times the dequantized activations x^ on odd shapes, and MatMul's q8 contract for every T.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "ops/activations_q8.h"
#include "ops/matmul.h"
#include "ops/matmul_kernel_choice.h"
#include "ops/matmul_kernels.h"
#include "ops/test_util.h"
#include "quant/ggml_blocks.h"
#include "quant/test_blocks.h"
#include "util/half.h"

namespace proctor::ops {
namespace {

constexpr DType kTypes[] = {DType::kQ8_0, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1,
                            DType::kQ2_K, DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K};

MatView RowView(const std::vector<float>& x, int64_t T, int64_t K) {
  return MatView{DType::kF32, T, K, static_cast<size_t>(K) * 4,
                 reinterpret_cast<const uint8_t*>(x.data())};
}

TEST(ActivationsQ8, AreGgmlsX86Q8_0BlocksUnpacked) {
  constexpr int64_t K = 160;
  std::vector<float> x = quant::testing::RandomWeights(K, 3);
  for (int i = 32; i < 64; ++i) x[i] = 0.0f;  // an all-zero block: d = 0, codes 0
  x[70] = 1e4f;                               // a block dominated by one value
  std::vector<quant::BlockQ8_0> blocks(K / 32);
  quant::QuantizeQ8_0X86(x.data(), K / 32, reinterpret_cast<uint8_t*>(blocks.data()));
  ActivationsQ8 q;
  q.Quantize(x.data(), K, Q8Blocks::kQ8_0);
  std::vector<float> round_trip(K);
  RoundTripQ8Activations(x.data(), K, Q8Blocks::kQ8_0, round_trip.data());
  for (int64_t b = 0; b < K / 32; ++b) {
    const float d = F16ToF32(blocks[b].d);
    EXPECT_EQ(q.scale[b], d) << b;
    double sums[2] = {0, 0};
    int code_sums[2] = {0, 0};
    for (int i = 0; i < 32; ++i) {
      code_sums[i / 16] += blocks[b].q[i];
      EXPECT_EQ(q.codes[b * 32 + i], blocks[b].q[i]) << b << " " << i;
      EXPECT_EQ(round_trip[b * 32 + i], d * blocks[b].q[i]);
      // Half a step, plus the f16 rounding of d (relative 2^-11) times a code of at most 127.
      EXPECT_LE(std::fabs(round_trip[b * 32 + i] - x[b * 32 + i]), (0.5 + 127.0 / 2048) * d);
      sums[i / 16] += static_cast<double>(d) * blocks[b].q[i];
    }
    EXPECT_EQ(q.sum16[2 * b], sums[0]);  // exact in f32
    EXPECT_EQ(q.sum16[2 * b + 1], sums[1]);
    EXPECT_EQ(q.sum32[b], sums[0] + sums[1]);
    EXPECT_EQ(q.code_sum16[2 * b], code_sums[0]);
    EXPECT_EQ(q.code_sum16[2 * b + 1], code_sums[1]);
    EXPECT_EQ(q.code_sum32[b], code_sums[0] + code_sums[1]);
  }
  EXPECT_EQ(q.scale[1], 0.0f);
}

// The K-quants take ggml's Q8_K blocks (one f32 d per 256 values), unpacked per 32 values.
TEST(ActivationsQ8, AreGgmlQ8_KBlocksUnpackedForTheKQuants) {
  for (const DType type : kTypes) {
    const bool k_quant = Info(type).block_elems == 256;
    EXPECT_EQ(Q8BlocksFor(type), k_quant ? Q8Blocks::kQ8_K : Q8Blocks::kQ8_0) << Name(type);
  }
  constexpr int64_t K = 768;
  std::vector<float> x = quant::testing::RandomWeights(K, 5);
  for (int i = 256; i < 512; ++i) x[i] = 0.0f;  // an all-zero block
  x[600] = -30.0f;                              // a block whose largest value is negative
  std::vector<quant::BlockQ8_K> blocks(K / 256);
  quant::QuantizeQ8_KRef(x.data(), K / 256, reinterpret_cast<uint8_t*>(blocks.data()));
  ActivationsQ8 q;
  q.Quantize(x.data(), K, Q8Blocks::kQ8_K);
  std::vector<float> round_trip(K);
  RoundTripQ8Activations(x.data(), K, Q8Blocks::kQ8_K, round_trip.data());
  for (int64_t b = 0; b < K / 256; ++b) {
    const quant::BlockQ8_K& block = blocks[b];
    for (int i = 0; i < 256; ++i) {
      ASSERT_EQ(q.codes[b * 256 + i], block.q[i]) << b << " " << i;
      ASSERT_EQ(round_trip[b * 256 + i], block.d * static_cast<float>(block.q[i]));
    }
    for (int g = 0; g < 16; ++g) {
      EXPECT_EQ(q.sum16[16 * b + g], block.d * static_cast<float>(block.bsums[g])) << b << " " << g;
      EXPECT_EQ(q.code_sum16[16 * b + g], block.bsums[g]) << b << " " << g;  // ggml's own sums
    }
    for (int s = 0; s < 8; ++s) {
      EXPECT_EQ(q.scale[8 * b + s], block.d);
      EXPECT_EQ(q.sum32[8 * b + s],
                block.d * static_cast<float>(block.bsums[2 * s] + block.bsums[2 * s + 1]));
      EXPECT_EQ(q.code_sum32[8 * b + s], block.bsums[2 * s] + block.bsums[2 * s + 1]);
    }
  }
  EXPECT_EQ(blocks[1].d, 0.0f);
  EXPECT_EQ(q.codes[600], -127);
  // Half a step of the block's d, as for Q8_0 but with an f32 d.
  for (int64_t k = 0; k < K; ++k) {
    EXPECT_LE(std::fabs(round_trip[k] - x[k]), 0.5001 * std::fabs(blocks[k / 256].d)) << k;
  }
}

// Every field of two quantized rows, bit for bit.
void ExpectSameActivations(const ActivationsQ8& a, const ActivationsQ8& b) {
  const auto same = [](const auto& u, const auto& v) {
    return u.size() == v.size() && std::memcmp(u.data(), v.data(), u.size() * sizeof(u[0])) == 0;
  };
  EXPECT_EQ(a.blocks, b.blocks);
  for (size_t k = 0; k < std::min(a.codes.size(), b.codes.size()); ++k) {
    ASSERT_EQ(a.codes[k], b.codes[k]) << "code " << k;
  }
  EXPECT_TRUE(same(a.codes, b.codes));
  EXPECT_TRUE(same(a.scale, b.scale));
  EXPECT_TRUE(same(a.sum16, b.sum16));
  EXPECT_TRUE(same(a.sum32, b.sum32));
  EXPECT_TRUE(same(a.code_sum16, b.code_sum16));
  EXPECT_TRUE(same(a.code_sum32, b.code_sum32));
}

// The AVX2 quantizer (Quantize on this CPU) gives the scalar reference's bytes and sums, for
// both block kinds, on random rows and on blocks made to part the two roundings: ties, an
// all-zero block, a value near FLT_MAX, subnormal values (127 / absmax overflows), NaN and
// infinities, the largest magnitude twice with both signs.
TEST(ActivationsQ8, Avx2QuantizerGivesTheReferenceBytes) {
  if (!CpuFeatures::Host().avx2_fma) GTEST_SKIP() << "CPU lacks AVX2, FMA and F16C";
  constexpr int64_t K = 256 * 9;
  std::vector<std::vector<float>> rows;
  for (const uint32_t seed : {1u, 2u, 3u}) {
    rows.push_back(quant::testing::RandomWeights(K, seed));
    for (float& v : rows.back()) v *= static_cast<float>(seed * seed * 10);
  }
  std::vector<float> hard = quant::testing::RandomWeights(K, 9);
  const auto block = [&](int b) { return hard.data() + 256 * b; };
  // Block 0: ties. With 127 the largest magnitude, codes are the values: k + 0.5 rounds to even.
  for (int i = 0; i < 256; ++i) block(0)[i] = static_cast<float>(i % 64 - 32) + 0.5f;
  block(0)[5] = 127.0f;
  for (int s = 0; s < 8; ++s) block(0)[32 * s + 7] = -127.0f;  // each Q8_0 slice, too
  std::fill(block(1), block(1) + 256, 0.0f);                   // all zero
  block(2)[3] = 3.0e38f;                                       // near FLT_MAX
  for (int i = 0; i < 256; ++i) block(3)[i] = static_cast<float>(i - 128) * 1e-41f;  // subnormal
  block(4)[17] = std::nanf("");
  block(5)[200] = std::numeric_limits<float>::infinity();
  block(6)[31] = -std::numeric_limits<float>::infinity();
  block(7)[40] = -50.0f;  // the same magnitude twice: the first (negative) one sets the sign
  block(7)[41] = 50.0f;
  block(8)[255] = 1e-38f;  // one tiny value in a block of zeros
  std::fill(block(8), block(8) + 255, 0.0f);
  rows.push_back(hard);
  for (const Q8Blocks blocks : {Q8Blocks::kQ8_0, Q8Blocks::kQ8_K}) {
    for (size_t r = 0; r < rows.size(); ++r) {
      SCOPED_TRACE(::testing::Message()
                   << (blocks == Q8Blocks::kQ8_K ? "Q8_K" : "Q8_0") << " row " << r);
      ActivationsQ8 fast, ref;
      fast.Quantize(rows[r].data(), K, blocks);
      ref.QuantizeRef(rows[r].data(), K, blocks);
      ExpectSameActivations(fast, ref);
    }
  }
  // The ties rounded to even (block 0's Q8_0 codes are its values).
  ActivationsQ8 q;
  q.Quantize(hard.data(), K, Q8Blocks::kQ8_0);
  EXPECT_EQ(q.codes[0], -32);  // -31.5
  EXPECT_EQ(q.codes[1], -30);  // -30.5
  EXPECT_EQ(q.codes[32], 0);   // 0.5
  EXPECT_EQ(q.codes[33], 2);   // 1.5
}

// MatVecGgufQ8Avx2 of w [N, K] against the double-precision sum of the exactly decoded weights
// times x^; rows split in two calls give the same bits.
void ExpectProductWithDequantizedActivations(const MatView& w, const std::vector<float>& x) {
  const int64_t N = w.rows, K = w.cols;
  ActivationsQ8 q;
  q.Quantize(x.data(), K, Q8BlocksFor(w.type));
  std::vector<float> x_hat(K);
  RoundTripQ8Activations(x.data(), K, Q8BlocksFor(w.type), x_hat.data());
  std::vector<float> out(static_cast<size_t>(N)), split(static_cast<size_t>(N));
  internal::MatVecGgufQ8Avx2(q, w, out.data(), 0, N);
  internal::MatVecGgufQ8Avx2(q, w, split.data(), 0, N / 2);
  internal::MatVecGgufQ8Avx2(q, w, split.data(), N / 2, N);
  EXPECT_EQ(std::memcmp(out.data(), split.data(), out.size() * 4), 0);
  for (int64_t n = 0; n < N; ++n) {
    const testing::RowProduct p = testing::ExactRowProduct(w, n, x_hat.data());
    EXPECT_NEAR(out[n], p.exact, 4e-6 * p.magnitude + 1e-30) << "row " << n;
  }
}

TEST(MatVecGgufQ8, EveryTypeIsTheProductWithTheDequantizedActivations) {
  if (!CpuFeatures::Host().avx2_fma) GTEST_SKIP() << "CPU lacks AVX2, FMA and F16C";
  for (const DType type : kTypes) {
    const int64_t block = static_cast<int64_t>(Info(type).block_elems);
    for (const int64_t blocks_per_row : {1, 2, 3, 7, 8}) {
      const int64_t K = blocks_per_row * block;
      for (const int64_t N : {1, 2, 3, 5, 9}) {
        SCOPED_TRACE(fmt::format("{} K={} N={}", Name(type), K, N));
        const auto raw = quant::testing::RandomBlocks(type, static_cast<int>(N * blocks_per_row),
                                                      static_cast<uint32_t>(K + N));
        const MatView w{type, N, K, BytesFor(type, static_cast<uint64_t>(K)), raw.data()};
        ExpectProductWithDequantizedActivations(
            w, quant::testing::RandomWeights(K, static_cast<uint32_t>(7 * N + K)));
      }
    }
  }
}

// Sets a block whose bytes are all 0xFF (every code at its top: Q4 15, Q5 31, Q2_K 3, Q3_K 7,
// Q6_K 63; Q4_K / Q5_K 6-bit scales and minimums 63, Q2_K 4-bit ones 15) to its extreme scales:
// d 0.25 or -0.5 by block parity, dmin 0.125, Q6_K's scales 127 and -128, Q3_K's 31 and -32, and
// Q8_0's codes 127 and -128.
void SetExtremeScales(DType type, size_t b, uint8_t* block) {
  const uint16_t d = F32ToF16(b % 2 == 0 ? 0.25f : -0.5f), m = F32ToF16(0.125f);
  switch (type) {
    case DType::kQ6_K:
      for (int g = 0; g < 16; ++g) block[192 + g] = g % 3 == 0 ? 0x7F : 0x80;
      std::memcpy(block + 208, &d, 2);
      return;
    case DType::kQ3_K:  // 6-bit scales 63 (31) in odd blocks, 0 (-32) in even ones
      std::memset(block + 96, b % 2 == 0 ? 0x00 : 0xFF, 12);
      std::memcpy(block + 108, &d, 2);
      return;
    case DType::kQ2_K:
      std::memcpy(block + 80, &d, 2);
      std::memcpy(block + 82, &m, 2);
      return;
    default:
      break;
  }
  std::memcpy(block, &d, 2);
  const bool has_min =
      type == DType::kQ4_1 || type == DType::kQ5_1 || type == DType::kQ4_K || type == DType::kQ5_K;
  if (has_min) std::memcpy(block + 2, &m, 2);
  if (type == DType::kQ8_0) {
    for (int i = 0; i < 32; ++i) block[2 + i] = i % 3 == 0 ? 0x7F : 0x80;  // 127, -128
  }
}

// N rows of K values of `type`, every block at SetExtremeScales' extremes.
std::vector<uint8_t> ExtremeBlocks(DType type, int64_t N, int64_t K) {
  const size_t row_bytes = BytesFor(type, K);
  const size_t block_bytes = row_bytes / (K / Info(type).block_elems);
  std::vector<uint8_t> raw(N * row_bytes, 0xFF);
  for (size_t b = 0; b < raw.size() / block_bytes; ++b) {
    SetExtremeScales(type, b, raw.data() + b * block_bytes);
  }
  return raw;
}

// The K-quants' integer super-block sums at their largest (ExtremeBlocks) against activation
// codes +-127, in 5 rows of 3 super-blocks.
TEST(MatVecGgufQ8, KQuantSumsAtTheirExtremesStayExact) {
  if (!CpuFeatures::Host().avx2_fma) GTEST_SKIP() << "CPU lacks AVX2, FMA and F16C";
  constexpr int64_t N = 5, K = 768;
  for (const DType type : {DType::kQ2_K, DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    SCOPED_TRACE(Name(type));
    const auto raw = ExtremeBlocks(type, N, K);
    const MatView w{type, N, K, BytesFor(type, K), raw.data()};
    std::vector<float> x(K);
    for (int64_t k = 0; k < K; ++k) x[k] = k % 256 < 128 ? 2.0f : -2.0f;  // codes +-127
    ExpectProductWithDequantizedActivations(w, x);
    for (int64_t k = 0; k < K; ++k) x[k] = k % 7 == 0 ? -3.0f : 3.0f;
    ExpectProductWithDequantizedActivations(w, x);
  }
}

// Extreme codes: Q8_0 weight codes -128 and 127 against activation codes +-127 keep vpmaddubsw's
// int16 pair sums in range (2 * 128 * 127 < 32768).
TEST(MatVecGgufQ8, ExtremeCodesDoNotSaturate) {
  if (!CpuFeatures::Host().avx2_fma) GTEST_SKIP() << "CPU lacks AVX2, FMA and F16C";
  constexpr int64_t K = 64;
  std::vector<quant::BlockQ8_0> w_blocks(K / 32);
  for (auto& block : w_blocks) {
    block.d = F32ToF16(0.5f);
    for (int i = 0; i < 32; ++i) block.q[i] = static_cast<int8_t>(i % 2 == 0 ? -128 : 127);
  }
  std::vector<float> x(K);
  for (int64_t k = 0; k < K; ++k) x[k] = k % 2 == 0 ? -1.0f : 1.0f;  // codes -127, 127
  ActivationsQ8 q;
  q.Quantize(x.data(), K, Q8Blocks::kQ8_0);
  const MatView w{DType::kQ8_0, 1, K, BytesFor(DType::kQ8_0, K),
                  reinterpret_cast<const uint8_t*>(w_blocks.data())};
  ASSERT_EQ(q.codes[0], -127);
  ASSERT_EQ(q.codes[1], 127);
  float out = 0.0f;
  internal::MatVecGgufQ8Avx2(q, w, &out, 0, 1);
  // Per pair of values 0.5 d (-128 * -127 + 127 * 127), 16 pairs per block.
  const double expected = 0.5 * (q.scale[0] + q.scale[1]) * 16 * (128 * 127 + 127 * 127);
  EXPECT_NEAR(out, expected, 1e-6 * expected);
}

// Runs check(kernel name) once for each integer matrix-matrix kernel of q8 mode this CPU has,
// with the overrides that make MatMul choose it: amx-q8 (AMX-INT8), gguf-q8-gemm-avx2 (AVX2).
template <class Check>
void ForEachQ8Gemm(Check check) {
  if (CpuFeatures::Host().amx_int8) {
    SCOPED_TRACE("amx-q8");
    check("amx-q8");
  }
  SetKernelOverridesForTesting({.amx_quant = false, .amx_q8 = false});
  {
    SCOPED_TRACE("gguf-q8-gemm-avx2");
    check("gguf-q8-gemm-avx2");
  }
  SetKernelOverridesForTesting({});
}

// MatMul in q8 mode for T tokens of x [T, K] with w, run by `kernel`: each output row is the
// bits the integer matrix-vector kernel gives that token alone, with one thread and with two,
// and within f32 rounding of the double-precision product with x^.
void ExpectGemmRowsAreTheMatVecBits(const MatView& w, const std::vector<float>& x, int64_t T,
                                    const char* kernel) {
  const int64_t N = w.rows, K = w.cols;
  ThreadPool one(1), two(2);
  ASSERT_STREQ(MatMulKernelName(w, ComputeMode::kQ8, T), kernel);
  Tensor out1 = Tensor::F32(T, N), out2 = Tensor::F32(T, N);
  MatMul(RowView(x, T, K), w, out1.MutF32(), ComputeMode::kQ8, one);
  MatMul(RowView(x, T, K), w, out2.MutF32(), ComputeMode::kQ8, two);
  EXPECT_EQ(std::memcmp(out1.bytes(), out2.bytes(), out1.size_bytes()), 0);
  std::vector<float> alone(static_cast<size_t>(N)), x_hat(static_cast<size_t>(K));
  for (int64_t t = 0; t < T; ++t) {
    ActivationsQ8 q;
    q.Quantize(&x[t * K], K, Q8BlocksFor(w.type));
    internal::MatVecGgufQ8Avx2(q, w, alone.data(), 0, N);
    EXPECT_EQ(std::memcmp(out1.RowF32(t), alone.data(), alone.size() * 4), 0) << "token " << t;
    RoundTripQ8Activations(&x[t * K], K, Q8BlocksFor(w.type), x_hat.data());
    for (int64_t n = 0; n < N; ++n) {
      const testing::RowProduct p = testing::ExactRowProduct(w, n, x_hat.data());
      ASSERT_NEAR(out1.RowF32(t)[n], p.exact, 4e-6 * p.magnitude + 1e-30)
          << "token " << t << " row " << n;
    }
  }
}

constexpr DType kGemmTypes[] = {DType::kQ8_0, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0,
                                DType::kQ5_1, DType::kQ2_K, DType::kQ3_K, DType::kQ4_K,
                                DType::kQ5_K, DType::kQ6_K};

// Shapes around the kernels' panels of 16 rows and tiles of 4 (AVX2) and 16 (AMX) tokens, odd
// block counts (the matrix-vector kernel's Q4 pairs and their tail), K past one 256-value chunk.
TEST(MatMulGgufQ8, EachTokenGetsTheBitsItGetsAlone) {
  if (!CpuFeatures::Host().avx2_fma) GTEST_SKIP() << "CPU lacks AVX2, FMA and F16C";
  for (const DType type : kGemmTypes) {
    for (const int64_t blocks_per_row : {1, 3, 8, 9}) {
      const int64_t K = static_cast<int64_t>(Info(type).block_elems) * blocks_per_row;
      for (const int64_t N : {1, 15, 16, 17, 37}) {
        for (const int64_t T : {2, 4, 5, 11, 17, 33}) {
          SCOPED_TRACE(fmt::format("{} K={} N={} T={}", Name(type), K, N, T));
          const auto raw = quant::testing::RandomBlocks(type, static_cast<int>(N * blocks_per_row),
                                                        static_cast<uint32_t>(K + 3 * N + T));
          const MatView w{type, N, K, BytesFor(type, static_cast<uint64_t>(K)), raw.data()};
          const auto x = quant::testing::RandomWeights(T * K, static_cast<uint32_t>(5 * N + K + T));
          ForEachQ8Gemm(
              [&](const char* kernel) { ExpectGemmRowsAreTheMatVecBits(w, x, T, kernel); });
        }
      }
    }
  }
}

// The int16 pair sums at their largest (ExtremeBlocks) against activation codes of the largest
// magnitude over whole blocks; the 4-, 5- and 6-bit codes add 8, 4 and 2 steps in int16 before
// widening (the 2- and 3-bit ones 4), which these sums would overflow if they added more.
TEST(MatMulGgufQ8, LargestPairSumsDoNotOverflow) {
  if (!CpuFeatures::Host().avx2_fma) GTEST_SKIP() << "CPU lacks AVX2, FMA and F16C";
  constexpr int64_t N = 17, T = 5;
  for (const DType type : kGemmTypes) {
    SCOPED_TRACE(Name(type));
    const int64_t K = 3 * static_cast<int64_t>(Info(type).block_elems);
    const auto raw = ExtremeBlocks(type, N, K);
    const MatView w{type, N, K, BytesFor(type, K), raw.data()};
    std::vector<float> x(T * K);
    for (int64_t i = 0; i < T * K; ++i) x[i] = (i / K) % 2 == 0 ? 2.0f : -2.0f;  // codes +-127
    if (type == DType::kQ8_0) {
      for (int64_t i = 0; i < T * K; ++i) x[i] = i % 3 == 0 ? 2.0f : -2.0f;  // -128 x -127 ...
    }
    ForEachQ8Gemm([&](const char* kernel) { ExpectGemmRowsAreTheMatVecBits(w, x, T, kernel); });
  }
}

// MatMul in q8 mode: T == 1 runs the integer kernel (one or two threads, the same bits) and
// agrees with MatMulRef's q8 mode; T >= 2 is an integer matrix-matrix kernel for the types they
// cover (above) and exactly f32 mode on x^ for the others, or with those kernels (and AMX's bf16
// tiles) switched off; float weights ignore the mode.
TEST(MatMulQ8, ContractForEveryRowCount) {
  if (!CpuFeatures::Host().avx2_fma) GTEST_SKIP() << "CPU lacks AVX2, FMA and F16C";
  ThreadPool two(2), one(1);
  constexpr int64_t K = 512, N = 67, T = 3;
  for (const DType type : kTypes) {
    SCOPED_TRACE(Name(type));
    const int64_t blocks_per_row = K / static_cast<int64_t>(Info(type).block_elems);
    const auto raw = quant::testing::RandomBlocks(type, static_cast<int>(N * blocks_per_row), 11);
    const MatView w{type, N, K, BytesFor(type, K), raw.data()};
    EXPECT_STREQ(MatMulKernelName(w, ComputeMode::kQ8, 1), "gguf-q8-avx2");
    const auto x = quant::testing::RandomWeights(T * K, 19);
    Tensor fast = Tensor::F32(1, N), single = Tensor::F32(1, N), ref = Tensor::F32(1, N);
    MatMul(RowView(x, 1, K), w, fast.MutF32(), ComputeMode::kQ8, two);
    MatMul(RowView(x, 1, K), w, single.MutF32(), ComputeMode::kQ8, one);
    EXPECT_EQ(std::memcmp(fast.bytes(), single.bytes(), fast.size_bytes()), 0);
    MatMulRef(RowView(x, 1, K), w, ref.MutF32(), ComputeMode::kQ8);
    std::vector<float> x_hat(static_cast<size_t>(T * K));
    for (int64_t t = 0; t < T; ++t) {
      RoundTripQ8Activations(&x[t * K], K, Q8BlocksFor(type), &x_hat[t * K]);
    }
    for (int64_t n = 0; n < N; ++n) {
      const double magnitude = testing::ExactRowProduct(w, n, x_hat.data()).magnitude;
      EXPECT_NEAR(fast.RowF32(0)[n], ref.RowF32(0)[n], 8e-6 * magnitude) << "row " << n;
    }
    Tensor q8 = Tensor::F32(T, N), f32_on_x_hat = Tensor::F32(T, N);
    SetKernelOverridesForTesting({.amx_quant = false, .q8_gemm = false, .amx_q8 = false});
    EXPECT_STREQ(MatMulKernelName(w, ComputeMode::kQ8, T), "f32-blocked");
    MatMul(RowView(x, T, K), w, q8.MutF32(), ComputeMode::kQ8, two);
    MatMul(RowView(x_hat, T, K), w, f32_on_x_hat.MutF32(), ComputeMode::kF32, two);
    SetKernelOverridesForTesting({});
    EXPECT_EQ(std::memcmp(q8.bytes(), f32_on_x_hat.bytes(), q8.size_bytes()), 0);
  }
  const auto dense = quant::testing::RandomWeights(N * K, 23);
  const MatView w{DType::kF32, N, K, static_cast<size_t>(K) * 4,
                  reinterpret_cast<const uint8_t*>(dense.data())};
  EXPECT_STREQ(MatMulKernelName(w, ComputeMode::kQ8, 1), "f32-matvec");
  const auto x = quant::testing::RandomWeights(K, 29);
  Tensor q8 = Tensor::F32(1, N), f32 = Tensor::F32(1, N);
  MatMul(RowView(x, 1, K), w, q8.MutF32(), ComputeMode::kQ8, two);
  MatMul(RowView(x, 1, K), w, f32.MutF32(), ComputeMode::kF32, two);
  EXPECT_EQ(std::memcmp(q8.bytes(), f32.bytes(), q8.size_bytes()), 0);
}

}  // namespace
}  // namespace proctor::ops
