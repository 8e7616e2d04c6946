// TurboQuant codes: the Lloyd-Max tables against the optimality conditions (cell means by
// numerical integration here, and the 3-bit levels), the Walsh-Hadamard transform as its
// own inverse, and every key and value width coded and decoded exactly as an independent numpy
// implementation does (tools/oracle/turbo_quant.py), on random and adversarial vectors; inputs
// the format cannot hold are refused.
#include "quant/turbo_quant.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "util/error.h"
#include "util/testing_files.h"
#include "util/testing_oracles.h"

namespace proctor::quant {
namespace {

// The mean of a unit normal over [a, b] by Simpson's rule (tails cut at +-12).
double CellMean(double a, double b) {
  a = std::max(a, -12.0);
  b = std::min(b, 12.0);
  const int n = 20000;
  const double h = (b - a) / n;
  double mass = 0.0, moment = 0.0;
  for (int i = 0; i <= n; ++i) {
    const double x = a + i * h;
    const double w = (i == 0 || i == n) ? 1.0 : (i % 2 == 1 ? 4.0 : 2.0);
    const double density = std::exp(-0.5 * x * x);
    mass += w * density;
    moment += w * x * density;
  }
  return moment / mass;
}

TEST(TurboQuant, LloydMaxTablesMeetTheOptimalityConditions) {
  for (const int bits : {2, 3, 4, 8}) {
    const std::vector<double>& levels = LloydMaxGaussian(bits);
    ASSERT_EQ(levels.size(), size_t{1} << bits);
    for (size_t i = 0; i < levels.size(); ++i) {
      const double lo = i == 0 ? -INFINITY : 0.5 * (levels[i - 1] + levels[i]);
      const double hi = i + 1 == levels.size() ? INFINITY : 0.5 * (levels[i] + levels[i + 1]);
      EXPECT_NEAR(levels[i], CellMean(lo, hi), 1e-5) << bits << " bits, level " << i;
      EXPECT_NEAR(levels[i], -levels[levels.size() - 1 - i], 1e-9) << "symmetric";
      if (i > 0) {
        EXPECT_LT(levels[i - 1], levels[i]);
      }
    }
  }
  const std::vector<double>& three = LloydMaxGaussian(3);
  const double published[] = {0.24509, 0.75601, 1.34391, 2.15195};  // Max (1960), the issue
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(three[4 + i], published[i], 1e-5) << i;
  EXPECT_NEAR(LloydMaxGaussian(2)[3], 1.5104, 1e-4);
  EXPECT_NEAR(LloydMaxGaussian(4)[15], 2.7326, 1e-4);
}

TEST(TurboQuant, WalshHadamardIsItsOwnInverseUpToItsLength) {
  std::mt19937 rng(3);
  for (const int n : {1, 2, 32, 128, 256}) {
    std::vector<float> x(static_cast<size_t>(n));
    for (float& v : x) v = static_cast<float>(static_cast<int>(rng() % 201) - 100);
    std::vector<float> y = x;
    FastWalshHadamard(y.data(), n);
    double norm_x = 0, norm_y = 0;
    for (int i = 0; i < n; ++i) norm_x += double{x[i]} * x[i], norm_y += double{y[i]} * y[i];
    EXPECT_EQ(norm_y, norm_x * n);  // integers: exact
    FastWalshHadamard(y.data(), n);
    for (int i = 0; i < n; ++i) ASSERT_EQ(y[i], x[i] * static_cast<float>(n)) << n << " " << i;
  }
  int negative = 0;
  for (int i = 0; i < 128; ++i) negative += TurboSign(i) < 0;
  EXPECT_GT(negative, 40);  // a sign vector, not a constant
  EXPECT_LT(negative, 88);
}

struct Coded {
  std::vector<uint8_t> packed;
  std::vector<uint16_t> scales, offsets;
  std::vector<float> decoded;
  std::string error;
};

Coded EncodeAndDecode(TurboPart part, int bits, int head_dim, const std::vector<float>& x) {
  const auto n = static_cast<int64_t>(x.size());
  const int64_t groups = n / kTurboGroup;
  Coded c;
  c.packed.resize(static_cast<size_t>(n * bits / 8));
  c.scales.resize(static_cast<size_t>(groups));
  if (part == TurboPart::kKeys) c.offsets.resize(static_cast<size_t>(groups));
  try {
    if (part == TurboPart::kKeys) {
      EncodeTurboKeys(x.data(), n, bits, c.packed.data(), c.scales.data(), c.offsets.data(), "t");
    } else {
      EncodeTurboValues(x.data(), n, head_dim, bits, c.packed.data(), c.scales.data(), "t");
    }
  } catch (const Error& e) {
    c.error = e.what();
    return c;
  }
  // One row of n elements.
  const auto view = [](DType type, int64_t cols, const void* data) {
    return MatView{type, 1, cols, BytesFor(type, static_cast<uint64_t>(cols)),
                   static_cast<const uint8_t*>(data)};
  };
  const TurboRows rows{.part = part,
                       .bits = bits,
                       .head_dim = head_dim,
                       .packed = view(DType::kU8, n * bits / 8, c.packed.data()),
                       .scales = view(DType::kF16, groups, c.scales.data()),
                       .offsets = part == TurboPart::kKeys
                                      ? view(DType::kF16, groups, c.offsets.data())
                                      : MatView{}};
  EXPECT_EQ(rows.cols(), n);
  c.decoded.resize(x.size());
  for (int64_t h = 0; h < n / head_dim; ++h) {
    DecodeTurboHead(rows, 0, static_cast<int>(h), head_dim, c.decoded.data() + h * head_dim);
  }
  return c;
}

TEST(TurboQuantOracle, CodesAndDecodesAsNumpyDoes) {
  const std::string problem = testing::OraclesProblem({"python"});
  if (!problem.empty()) GTEST_SKIP() << problem;
  struct Case {
    TurboPart part;
    int bits, head_dim;
    std::vector<float> x;
  };
  std::vector<Case> cases;
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const auto random = [&](int64_t n, float scale) {
    std::vector<float> x(static_cast<size_t>(n));
    for (float& v : x) v = scale * normal(rng);
    return x;
  };
  // Adversarial heads of 64: constant, zeros, one outlier, tiny, huge, non-finite.
  std::vector<std::vector<float>> odd;
  odd.push_back(std::vector<float>(64, 3.0f));
  odd.push_back(std::vector<float>(64, 0.0f));
  odd.push_back(random(64, 0.01f));
  odd.back()[17] = 40.0f;
  odd.push_back(random(64, 1e-7f));
  odd.push_back(random(64, 20000.0f));  // a key offset beyond fp16: refused; values fit
  odd.back()[9] = -70000.0f;
  odd.push_back(random(64, 1.0f));
  odd.back()[5] = std::numeric_limits<float>::infinity();
  odd.push_back(random(64, 1.0f));
  odd.back()[63] = -std::numeric_limits<float>::infinity();
  odd.push_back(random(64, 1.0f));
  odd.back()[0] = std::numeric_limits<float>::quiet_NaN();
  for (const int bits : {2, 4, 5, 8}) {
    cases.push_back({TurboPart::kKeys, bits, 32, random(256, 2.0f)});
    for (const auto& x : odd) cases.push_back({TurboPart::kKeys, bits, 64, x});
  }
  for (const int bits : {2, 3, 4, 8}) {
    for (const int head_dim : {32, 64, 128}) {
      cases.push_back({TurboPart::kValues, bits, head_dim, random(2 * head_dim, 1.5f)});
    }
    for (const auto& x : odd) cases.push_back({TurboPart::kValues, bits, 64, x});
  }
  nlohmann::json spec = {{"levels", nlohmann::json::object()}, {"cases", nlohmann::json::array()}};
  for (const int bits : {2, 3, 4, 8}) spec["levels"][std::to_string(bits)] = LloydMaxGaussian(bits);
  for (const Case& c : cases) {
    nlohmann::json x = nlohmann::json::array();
    for (const float v : c.x) x.push_back(std::bit_cast<uint32_t>(v));
    spec["cases"].push_back({{"part", c.part == TurboPart::kKeys ? "keys" : "values"},
                             {"bits", c.bits},
                             {"head_dim", c.head_dim},
                             {"x", x}});
  }
  testing::TempDir dir;
  const auto spec_path = dir.path() / "cases.json";
  std::ofstream(spec_path) << spec.dump();
  const nlohmann::json expected =
      testing::RunOracleJson(testing::Oracles("python").Path("python") + " " + PROCTOR_SOURCE_DIR +
                             "/tools/oracle/turbo_quant.py " + spec_path.string());
  ASSERT_EQ(expected.size(), cases.size());
  int refused = 0, compared = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const Coded got = EncodeAndDecode(c.part, c.bits, c.head_dim, c.x);
    const std::string label = fmt::format("case {} ({} bits {})", i,
                                          c.part == TurboPart::kKeys ? "keys" : "values", c.bits);
    if (expected[i].contains("error")) {
      EXPECT_NE(got.error, "") << label << ": numpy refused (" << expected[i]["error"] << ")";
      refused += 1;
      continue;
    }
    ASSERT_EQ(got.error, "") << label;
    EXPECT_EQ(got.packed, expected[i]["packed"].get<std::vector<uint8_t>>()) << label;
    EXPECT_EQ(got.scales, expected[i]["scales"].get<std::vector<uint16_t>>()) << label;
    EXPECT_EQ(got.offsets, expected[i]["offsets"].get<std::vector<uint16_t>>()) << label;
    std::vector<uint32_t> decoded;
    for (const float v : got.decoded) decoded.push_back(std::bit_cast<uint32_t>(v));
    EXPECT_EQ(decoded, expected[i]["decoded"].get<std::vector<uint32_t>>()) << label;
    compared += 1;
  }
  // Keys: 30000-wide groups, inf, -inf, NaN; values: inf, -inf, NaN (their RMS scale fits fp16).
  EXPECT_EQ(refused, 4 * 4 + 4 * 3);
  std::printf("TurboQuant: %d cases coded as numpy codes them, %d refused by both\n", compared,
              refused);
}

TEST(TurboQuant, RefusesWidthsAndValuesTheFormatCannotHold) {
  EXPECT_NE(testing::ErrorOf([] {
              CheckTurboKeyBits(3, "--kv turbo:k3v3");
            }).find("--kv turbo:k3v3: TurboQuant keys take 2, 4, 5 or 8 bits (seen 3)"),
            std::string::npos);
  EXPECT_NE(
      testing::ErrorOf([] { CheckTurboValueBits(5, "x"); }).find("2, 3, 4 or 8 bits (seen 5)"),
      std::string::npos);
  std::vector<float> x(32, 1.0f);
  x[3] = std::numeric_limits<float>::infinity();
  std::vector<uint8_t> packed(32);
  std::vector<uint16_t> scales(1), offsets(1);
  EXPECT_NE(testing::ErrorOf([&] {
              EncodeTurboKeys(x.data(), 32, 8, packed.data(), scales.data(), offsets.data(),
                              "KV cache keys");
            }).find("KV cache keys: TurboQuant codes finite values only (element 3 is inf)"),
            std::string::npos);
  x[3] = -1e5f;  // the group's offset (its minimum)
  EXPECT_NE(testing::ErrorOf([&] {
              EncodeTurboKeys(x.data(), 32, 8, packed.data(), scales.data(), offsets.data(), "k");
            }).find("beyond fp16's range"),
            std::string::npos);
}

}  // namespace
}  // namespace proctor::quant
