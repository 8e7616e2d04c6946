// GGUF block types against ggml itself: the scalar dequantizers must be bit-identical to ggml's
// own to_float (libggml-base from the llama.cpp source of the llama-cpp-python 0.3.36 sdist,
// driven by tools/ggml_oracle.cc; both built by tools/oracle/setup.sh) on blocks made by ggml's
// quantizer and on random blocks, and every reference quantizer byte-identical to ggml's. Skips
// when the oracle cannot be built.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "quant/ggml_blocks.h"
#include "quant/test_blocks.h"
#include "util/testing_oracles.h"

namespace proctor::quant {
namespace {

// Path of the oracle binary (tools/oracle/setup.sh), or empty with the reason in `why`.
std::string OraclePath(std::string* why) {
  const auto& llama_cpp = proctor::testing::Oracles("llama.cpp");
  *why = llama_cpp.problem;
  return llama_cpp.Path("ggml_oracle");
}

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          fmt::format("proctor_ggml_{}_{}", getpid(), name))
      .string();
}

template <typename T>
void WriteVector(const std::string& path, const std::vector<T>& v) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(v.data()),
             static_cast<std::streamsize>(v.size() * sizeof(T)));
}

template <typename T>
std::vector<T> ReadVector(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), {});
  std::vector<T> v(bytes.size() / sizeof(T));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
  return v;
}

int RunCommand(const std::string& cmd) { return std::system((cmd + " >&2").c_str()); }

struct Case {
  DType type;
  const char* ggml_name;
};

const Case kCases[] = {
    {DType::kQ8_0, "q8_0"}, {DType::kQ4_0, "q4_0"},     {DType::kQ4_1, "q4_1"},
    {DType::kQ5_0, "q5_0"}, {DType::kQ5_1, "q5_1"},     {DType::kQ2_K, "q2_K"},
    {DType::kQ3_K, "q3_K"}, {DType::kQ4_K, "q4_K"},     {DType::kQ5_K, "q5_K"},
    {DType::kQ6_K, "q6_K"}, {DType::kIQ4_NL, "iq4_nl"},
};

void ExpectBitIdentical(const std::vector<float>& ours, const std::vector<float>& ggml,
                        const char* what) {
  ASSERT_EQ(ours.size(), ggml.size()) << what;
  for (size_t i = 0; i < ours.size(); ++i) {
    uint32_t a, b;
    std::memcpy(&a, &ours[i], 4);
    std::memcpy(&b, &ggml[i], 4);
    ASSERT_EQ(a, b) << what << " value " << i << ": ours " << ours[i] << ", ggml " << ggml[i];
  }
}

class GgmlOracle : public ::testing::TestWithParam<Case> {};

// ggml quantizes a random matrix (rows 512 wide: two K-quant super-blocks, 16 small blocks; a
// zero, a constant, an all-positive and a tiny row among them);
// proctor's reference and SIMD dequantizers reproduce ggml's dequantization bit for bit, and
// proctor's quantizer produces ggml's bytes.
TEST_P(GgmlOracle, QuantizedByGgmlDequantizesIdentically) {
  std::string why;
  const std::string oracle = OraclePath(&why);
  if (oracle.empty()) GTEST_SKIP() << "ggml oracle unavailable: " << why;
  const Case& c = GetParam();
  const BlockTraits* traits = FindBlockTraits(c.type);
  ASSERT_NE(traits, nullptr);
  const int64_t rows = 48, cols = 512;
  std::vector<float> input = testing::RandomWeights(rows * cols, 11 + static_cast<int>(c.type));
  // Rows the searches treat specially: all zero, constant, all positive, and tiny values.
  for (int64_t i = 0; i < cols; ++i) {
    input[0 * cols + i] = 0.0f;
    input[1 * cols + i] = 0.75f;
    input[2 * cols + i] = std::fabs(input[2 * cols + i]);
    input[3 * cols + i] *= 1e-12f;
  }
  const std::string in = TempPath("in.f32"), blocks_path = TempPath("q.bin"),
                    values_path = TempPath("q.f32");
  WriteVector(in, input);
  ASSERT_EQ(RunCommand(fmt::format("{} quantize {} {} {} {} {} {}", oracle, c.ggml_name, rows, cols,
                                   in, blocks_path, values_path)),
            0);
  const auto blocks = ReadVector<uint8_t>(blocks_path);
  const auto ggml_values = ReadVector<float>(values_path);
  const int64_t n_blocks = rows * cols / traits->block_elems;
  ASSERT_EQ(blocks.size(), static_cast<size_t>(n_blocks * traits->block_bytes));
  std::vector<float> ref(ggml_values.size()), fast(ggml_values.size());
  traits->dequantize_ref(blocks.data(), n_blocks, ref.data());
  traits->dequantize_fast(blocks.data(), n_blocks, fast.data());
  ExpectBitIdentical(ref, ggml_values, "reference");
  ExpectBitIdentical(fast, ggml_values, "SIMD");
  std::vector<uint8_t> ours(blocks.size());
  traits->quantize_ref(input.data(), n_blocks, ours.data());
  EXPECT_EQ(ours, blocks) << "proctor's quantizer differs from ggml's";
  for (const auto& p : {in, blocks_path, values_path}) std::filesystem::remove(p);
}

// Random block bytes (every code pattern, subnormal / negative / zero scales): the same.
TEST_P(GgmlOracle, RandomBlocksDequantizeIdentically) {
  std::string why;
  const std::string oracle = OraclePath(&why);
  if (oracle.empty()) GTEST_SKIP() << "ggml oracle unavailable: " << why;
  const Case& c = GetParam();
  const BlockTraits* traits = FindBlockTraits(c.type);
  const int n_blocks = 23;
  const auto blocks = testing::RandomBlocks(c.type, n_blocks, 97 + static_cast<int>(c.type));
  const std::string in = TempPath("rand.bin"), out = TempPath("rand.f32");
  WriteVector(in, blocks);
  ASSERT_EQ(RunCommand(fmt::format("{} dequantize {} {} {} {}", oracle, c.ggml_name,
                                   n_blocks * traits->block_elems, in, out)),
            0);
  const auto ggml_values = ReadVector<float>(out);
  std::vector<float> ref(ggml_values.size()), fast(ggml_values.size());
  traits->dequantize_ref(blocks.data(), n_blocks, ref.data());
  traits->dequantize_fast(blocks.data(), n_blocks, fast.data());
  ExpectBitIdentical(ref, ggml_values, "reference");
  ExpectBitIdentical(fast, ggml_values, "SIMD");
  std::filesystem::remove(in);
  std::filesystem::remove(out);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, GgmlOracle, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& param) {
                           return std::string(Name(param.param.type));
                         });

// The activation blocks ggml's CPU backend (this x86 build) multiplies quantized weights with:
// QuantizeQ8_0X86 and QuantizeQ8_KRef give its quantize_row_q8_0's and quantize_row_q8_K's bytes
// for random rows of several magnitudes and the blocks the rules treat specially: all zero,
// largest value negative, ties at half a step (rounded to even), -0, subnormals. The Q8_0
// reference (what weights are written with) differs from the activations' rule on the ties.
TEST(GgmlOracleActivations, Q8_0AndQ8_KBlocksAreGgmls) {
  std::string why;
  const std::string oracle = OraclePath(&why);
  if (oracle.empty()) GTEST_SKIP() << "ggml oracle unavailable: " << why;
  constexpr int64_t kBlocks = 24, n = kBlocks * kQK_K;
  std::vector<float> input = testing::RandomWeights(n, 5);
  for (int64_t b = 0; b < kBlocks; ++b) {
    const float scale = std::pow(10.0f, static_cast<float>(b % 7) - 3);
    for (int i = 0; i < kQK_K; ++i) input[b * kQK_K + i] *= scale;
  }
  float* zero = &input[0 * kQK_K];
  float* negative_max = &input[1 * kQK_K];
  float* ties = &input[2 * kQK_K];
  float* tiny = &input[3 * kQK_K];
  for (int i = 0; i < kQK_K; ++i) {
    zero[i] = i % 2 == 0 ? 0.0f : -0.0f;
    // With the largest value 127 in each 32 (and in the 256): steps of exactly 1, ties at .5.
    ties[i] = i % 32 == 31 ? 127.0f : static_cast<float>(i % 31) - 14.5f;
    tiny[i] = static_cast<float>(i - 128) * 1e-41f;  // subnormal
  }
  negative_max[17] = -50.0f;
  const std::string in = TempPath("act.f32"), out = TempPath("act.q");
  WriteVector(in, input);
  for (const bool k_quant : {false, true}) {
    SCOPED_TRACE(k_quant ? "q8_K" : "q8_0");
    ASSERT_EQ(RunCommand(fmt::format("{} activations {} {} {} {}", oracle,
                                     k_quant ? "q8_K" : "q8_0", n, in, out)),
              0);
    const auto ggml = ReadVector<uint8_t>(out);
    const size_t block_bytes = k_quant ? sizeof(BlockQ8_K) : sizeof(BlockQ8_0);
    const int64_t blocks = k_quant ? kBlocks : n / kQ8_0BlockElems;
    ASSERT_EQ(ggml.size(), static_cast<size_t>(blocks) * block_bytes);
    std::vector<uint8_t> ours(ggml.size()), reference(ggml.size());
    if (k_quant) {
      QuantizeQ8_KRef(input.data(), blocks, ours.data());
    } else {
      QuantizeQ8_0X86(input.data(), blocks, ours.data());
      QuantizeQ8_0Ref(input.data(), blocks, reference.data());
      EXPECT_NE(reference, ours) << "the ties should round differently";
    }
    for (int64_t b = 0; b < blocks; ++b) {
      EXPECT_EQ(
          std::memcmp(ours.data() + b * block_bytes, ggml.data() + b * block_bytes, block_bytes), 0)
          << "block " << b;
    }
    if (k_quant) {
      BlockQ8_K negative;
      std::memcpy(&negative, ours.data() + sizeof(BlockQ8_K), sizeof(negative));
      EXPECT_EQ(negative.q[17], -127);  // the rule, not only ggml's bytes
      EXPECT_GT(negative.d, 0.0f);
    }
  }
  std::filesystem::remove(in);
  std::filesystem::remove(out);
}

// What llama.cpp's CPU backend writes an iq4_nl KV cache's rows with (its from_float, one call
// per row): QuantizeIQ4_NLRowRef gives the same bytes, including a zero block after the first
// (ggml keeps the previous block's codes there), a block below ggml's 1e-15 threshold, values on
// a level boundary, and rows of several magnitudes; llama-quantize's searching quantizer differs.
TEST(GgmlOracleRows, Iq4NlCacheRowsAreGgmls) {
  std::string why;
  const std::string oracle = OraclePath(&why);
  if (oracle.empty()) GTEST_SKIP() << "ggml oracle unavailable: " << why;
  constexpr int64_t kRows = 24, kCols = 256, kBlocksPerRow = kCols / kQK;
  std::vector<float> input = testing::RandomWeights(kRows * kCols, 9);
  for (int64_t r = 0; r < kRows; ++r) {
    const float scale = std::pow(10.0f, static_cast<float>(r % 9) - 4);
    for (int64_t c = 0; c < kCols; ++c) input[r * kCols + c] *= scale;
  }
  for (int i = 0; i < kQK; ++i) {
    input[1 * kCols + 3 * kQK + i] = 0.0f;              // a zero block mid-row
    input[2 * kCols + 5 * kQK + i] = 1e-16f * (i - 9);  // below the threshold
    // The largest -127 (d0 = 1): the others on midpoints between neighbouring levels.
    input[3 * kCols + i] =
        i == 0 ? -127.0f : (kIQ4_NLValues[i % 15] + kIQ4_NLValues[i % 15 + 1]) / 2.0f;
  }
  const std::string in = TempPath("rows.f32"), out = TempPath("rows.q");
  WriteVector(in, input);
  ASSERT_EQ(RunCommand(fmt::format("{} rows iq4_nl {} {} {} {}", oracle, kRows, kCols, in, out)),
            0);
  const auto ggml = ReadVector<uint8_t>(out);
  const size_t row_bytes = kBlocksPerRow * sizeof(BlockIQ4_NL);
  ASSERT_EQ(ggml.size(), kRows * row_bytes);
  std::vector<uint8_t> ours(row_bytes), searched(row_bytes);
  int differ = 0;
  for (int64_t r = 0; r < kRows; ++r) {
    QuantizeIQ4_NLRowRef(&input[r * kCols], kBlocksPerRow, ours.data());
    QuantizeIQ4_NLRef(&input[r * kCols], kBlocksPerRow, searched.data());
    EXPECT_EQ(std::memcmp(ours.data(), ggml.data() + r * row_bytes, row_bytes), 0) << "row " << r;
    differ += ours != searched;
  }
  EXPECT_GT(differ, kRows / 2);
  std::filesystem::remove(in);
  std::filesystem::remove(out);
}

}  // namespace
}  // namespace proctor::quant
