// ParseQuantizeSpec: each accepted spelling resolves to the options `proctor quantize` would take
// for it (ResolveMlxQuantizeOptions, the one place defaults are filled), and anything else is an
// error that names the spec and, for llama.cpp's types, says how to get a GGUF candidate.
#include "model/quantize_spec.h"

#include <gtest/gtest.h>

#include "util/error.h"

namespace proctor {
namespace {

MlxQuantizeOptions Resolved(const MlxQuantizeOptions& o) { return ResolveMlxQuantizeOptions(o); }

void ExpectSame(const MlxQuantizeOptions& a, const MlxQuantizeOptions& b) {
  EXPECT_EQ(a.mode, b.mode);
  EXPECT_EQ(a.bits, b.bits);
  EXPECT_EQ(a.group_size, b.group_size);
  EXPECT_EQ(a.recipe, b.recipe);
}

TEST(QuantizeSpec, SpellingsResolveAsProctorQuantizeDoes) {
  const struct {
    const char* spec;
    const char* name;
    MlxQuantizeOptions options;
  } cases[] = {
      {"affine4", "affine4-g64", {.bits = 4}},
      {"affine4-g64", "affine4-g64", {.bits = 4, .group_size = 64}},
      {"affine3-g32", "affine3-g32", {.bits = 3, .group_size = 32}},
      {"affine8-g128", "affine8-g128", {.bits = 8, .group_size = 128}},
      {"mxfp4", "mxfp4", {.mode = quant::MlxMode::kMxfp4}},
      {"mxfp8", "mxfp8", {.mode = quant::MlxMode::kMxfp8}},
      {"nvfp4", "nvfp4", {.mode = quant::MlxMode::kNvfp4}},
      {"mixed_3_6", "mixed_3_6-g64", {.recipe = "mixed_3_6"}},
      {"mixed_2_6-g32", "mixed_2_6-g32", {.group_size = 32, .recipe = "mixed_2_6"}},
  };
  for (const auto& c : cases) {
    const QuantizeSpec q = ParseQuantizeSpec(c.spec);
    EXPECT_EQ(q.name, c.name) << c.spec;
    ExpectSame(q.options, Resolved(c.options));
    // The canonical name reads back as itself.
    EXPECT_EQ(ParseQuantizeSpec(q.name).name, q.name);
  }
}

TEST(QuantizeSpec, OthersAreErrorsNamingTheSpec) {
  for (const char* bad : {"affine7", "affine4-g48", "affine", "affine4-gx", "affine4-g",
                          "mixed_5_6", "int4", "", "mxfp4-g64x"}) {
    try {
      ParseQuantizeSpec(bad);
      ADD_FAILURE() << bad << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(fmt::format("\"{}\"", bad)), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("Accepted:"), std::string::npos) << e.what();
    }
  }
  for (const char* gguf : {"iq4_xs", "Q2_K_S", "tq1_0"}) {
    try {
      ParseQuantizeSpec(gguf);
      ADD_FAILURE() << gguf << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("llama-quantize"), std::string::npos) << e.what();
    }
  }
}

TEST(QuantizeSpec, LlamaCppFileTypesAreGgufSpecs) {
  for (const auto& [spelling, name] : {std::pair{"q4_k_m", "q4_k_m"}, std::pair{"Q8_0", "q8_0"},
                                       std::pair{"q3_k_s", "q3_k_s"}, std::pair{"f16", "f16"}}) {
    const QuantizeSpec q = ParseQuantizeSpec(spelling);
    EXPECT_EQ(q.name, name);
    EXPECT_EQ(q.gguf_type, name);
  }
  EXPECT_EQ(ParseQuantizeSpec("affine4").gguf_type, "");
}

}  // namespace
}  // namespace proctor
