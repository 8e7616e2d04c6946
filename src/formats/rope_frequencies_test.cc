// ComputeRopeFrequencies against tools/rope_frequencies_reference.py, an independent numpy
// re-derivation of Hugging Face's `_compute_*_parameters` (skips without /usr/bin/python3+numpy).
#include "formats/rope_frequencies.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "util/error.h"

namespace proctor {
namespace {

std::string RunCommand(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return out;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.append(buffer, n);
  if (pclose(pipe) != 0) out.clear();
  return out;
}

RopeParameters FromJson(const nlohmann::json& p) {
  RopeParameters rope;
  rope.type = ParseRopeType(p.at("rope_type").get<std::string>()).value();
  rope.theta = p.at("rope_theta").get<double>();
  if (p.contains("partial_rotary_factor")) rope.partial_rotary_factor = p["partial_rotary_factor"];
  if (p.contains("factor")) rope.factor = p["factor"].get<double>();
  if (p.contains("original_max_position_embeddings")) {
    rope.original_max_position_embeddings = p["original_max_position_embeddings"].get<int64_t>();
  }
  if (p.contains("low_freq_factor")) rope.low_freq_factor = p["low_freq_factor"];
  if (p.contains("high_freq_factor")) rope.high_freq_factor = p["high_freq_factor"];
  if (p.contains("attention_factor")) rope.attention_factor = p["attention_factor"].get<double>();
  if (p.contains("beta_fast")) rope.beta_fast = p["beta_fast"].get<double>();
  if (p.contains("beta_slow")) rope.beta_slow = p["beta_slow"].get<double>();
  if (p.contains("mscale")) rope.mscale = p["mscale"].get<double>();
  if (p.contains("mscale_all_dim")) rope.mscale_all_dim = p["mscale_all_dim"].get<double>();
  if (p.contains("truncate")) rope.truncate = p["truncate"];
  return rope;
}

TEST(RopeFrequencies, MatchesIndependentNumpyDerivationOfHuggingFace) {
  if (!std::filesystem::exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  const std::string script =
      std::string(PROCTOR_SOURCE_DIR) + "/tools/rope_frequencies_reference.py";
  const std::string out = RunCommand("/usr/bin/python3 " + script + " 2>/dev/null");
  if (out.empty()) GTEST_SKIP() << "the numpy reference did not run (python3-numpy missing?)";
  const auto cases = nlohmann::json::parse(out);
  ASSERT_GE(cases.size(), 10u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c["params"].dump());
    const RopeFrequencies got = ComputeRopeFrequencies(
        FromJson(c["params"]), c["head_dim"].get<int>(), c["max_position_embeddings"]);
    const auto& want = c["inv_freq"];
    ASSERT_EQ(got.inv_freq.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      const float w = want[i].get<float>();
      // Both sides round each f32 step; numpy's float32 power and libm pow may differ by an ulp,
      // which the reciprocal can double: allow 4 ulp.
      EXPECT_NEAR(got.inv_freq[i], w, std::abs(w) * 4.8e-7f) << "i=" << i;
    }
    EXPECT_FLOAT_EQ(got.attention_scaling, c["attention_scaling"].get<float>());
  }
}

TEST(RopeFrequencies, HandWorkedValues) {
  // theta 10000, head_dim 4: inv_freq = [1, 10000^-0.5 = 0.01].
  RopeParameters rope;
  const RopeFrequencies f = ComputeRopeFrequencies(rope, 4, 128);
  ASSERT_EQ(f.inv_freq.size(), 2u);
  EXPECT_EQ(f.inv_freq[0], 1.0f);
  EXPECT_NEAR(f.inv_freq[1], 0.01f, 1e-9f);
  // Linear scaling divides by the factor.
  rope.type = RopeType::kLinear;
  rope.factor = 4.0;
  EXPECT_NEAR(ComputeRopeFrequencies(rope, 4, 128).inv_freq[1], 0.0025f, 1e-9f);
  // YaRN's default attention factor is 0.1 ln(s) + 1.
  rope.type = RopeType::kYarn;
  EXPECT_NEAR(ComputeRopeFrequencies(rope, 4, 128).attention_scaling, 0.1 * std::log(4.0) + 1.0,
              1e-6);
}

TEST(RopeFrequencies, MissingParametersAreErrors) {
  RopeParameters rope;
  rope.type = RopeType::kLlama3;
  EXPECT_THROW(ComputeRopeFrequencies(rope, 16, 256), Error);  // no factor
  rope.factor = 8.0;
  EXPECT_THROW(ComputeRopeFrequencies(rope, 16, 256), Error);  // no original max positions
  rope.type = RopeType::kDefault;
  rope.theta = 0.0;
  EXPECT_THROW(ComputeRopeFrequencies(rope, 16, 256), Error);
  EXPECT_FALSE(ParseRopeType("longrope").has_value());
}

}  // namespace
}  // namespace proctor
